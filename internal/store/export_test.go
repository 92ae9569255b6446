package store

// Hooks for store_test to drive one lock session by hand: the test chooses
// which requests share a round trip, which the worker leaves to timing.

// TestSession is a lock session with no goroutine of its own.
type TestSession struct {
	st *Store
	s  *lockSession
}

// TestReq is one request for a TestSession batch.
type TestReq struct{ r *lockReq }

// NewTestSession opens a lock session of its own on st's database.
func (st *Store) NewTestSession() *TestSession {
	return &TestSession{st: st, s: &lockSession{cfg: st.pool.Config().ConnConfig.Copy()}}
}

// Close ends the session, freeing its locks.
func (t *TestSession) Close() { t.s.disconnect() }

// ClaimReq asks for chunk seq of a job.
func (t *TestSession) ClaimReq(jobID string, seq int) (*Claim, TestReq) {
	c := &Claim{store: t.st, jobID: jobID, key: lockKey(jobID), Seq: seq, sess: t.s}
	return c, TestReq{&lockReq{kind: reqClaim, claim: c, done: make(chan struct{})}}
}

// Run sends the requests in one batch, and resolves the claims.
func (t *TestSession) Run(reqs ...TestReq) {
	batch := make([]*lockReq, len(reqs))
	for i, r := range reqs {
		batch[i] = r.r
	}
	t.s.run(batch)
	for _, r := range batch {
		if r.kind == reqClaim && r.err == nil {
			r.claim.resolve()
		}
	}
}

// SaveReq asks to store n, then unlock.
func (c *Claim) SaveReq(n NewChunk) TestReq {
	c.locked = false
	return TestReq{c.saveReq(n)}
}

// UnlockReq asks to unlock the claim's job.
func (c *Claim) UnlockReq() TestReq {
	c.locked = false
	return TestReq{&lockReq{kind: reqUnlock, key: c.key, gen: c.gen}}
}

// Locked reports whether the claim's session took its lock.
func (c *Claim) Locked() bool { return c.locked }

// Err is the request's error.
func (r TestReq) Err() error { return r.r.err }

// Status is a save's answer.
func (r TestReq) Status() string { return r.r.status }

// ListenerPID is the backend process ID of the store's LISTEN connection, 0
// while it is down.
func (st *Store) ListenerPID() uint32 { return st.notifications().listenerPID() }

// Statements and settings for plans_test.
const (
	ClaimSQL            = claimSQL
	MarkRunningSQL      = markRunningSQL
	SaveResultSQL       = saveResultSQL
	LockSessionSettings = lockSessionSettings
)
