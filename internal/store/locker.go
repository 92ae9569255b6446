package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The lock session.
//
// Every chunk task claims its job before the model call (an advisory lock,
// then a read of the job and its last chunk) and saves its chunk after it
// (insert, commit, unlock). Done on a connection of its own per task, that
// costs every chunk two round trips, six statements and a commit of its own,
// and holds a pooled connection idle through each model call — and Postgres
// spent more CPU on it than on anything else in the pipeline.
//
// So a worker routes claims and saves through one dedicated session that
// holds the advisory locks of the jobs the worker is working on. It takes
// whatever claims and saves queued up while its previous round trips were
// out, and sends them together in two: every claim's lock and read; then the
// saves in one transaction — one commit, one WAL flush for all — followed by
// their unlocks. Under load a round trip serves many chunks (about seven in
// the pipeline benchmark); at rest it serves one, as before. (Two sessions, so that one could take locks while the other
// waited for its commit, cost Postgres more CPU per chunk and were no faster
// on the benchmark's two cores: the batches were smaller.)
//
// The guarantees are those of a connection per task:
//   - a chunk is committed before its job's lock is released (COMMIT, then
//     the unlock, in order on one session);
//   - a claim reads the job and its last chunk in a statement after the one
//     that took the lock, so with a fresh snapshot that sees every chunk
//     committed by the lock's previous holder;
//   - a worker that dies loses its session, and its locks with them.
//
// Advisory locks are reentrant within a session, so Postgres cannot tell two
// deliveries in this worker apart: the worker keeps the set of lock keys it
// holds and answers a second claim of a key in the set itself (Leased), as
// Postgres answers a claim of a key another worker holds.

// maxLockBatch caps the requests sent in one round trip.
const maxLockBatch = 128

// lockRoundTrip bounds one round trip of the session: no claim or save waits
// longer than that for Postgres.
const lockRoundTrip = 30 * time.Second

var errLockerClosed = errors.New("store: closed")

// locker is a worker's lock session and the lock keys its claims hold.
type locker struct {
	sess *lockSession
	mu   sync.Mutex
	held map[int32]struct{}
}

func newLocker(cfg *pgx.ConnConfig) *locker {
	s := &lockSession{cfg: cfg, reqs: make(chan *lockReq, 2*maxLockBatch), quit: make(chan struct{}), stopped: make(chan struct{})}
	go s.loop()
	return &locker{sess: s, held: make(map[int32]struct{})}
}

// hold marks key as held by a claim of this worker; false if one already holds it.
func (l *locker) hold(key int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[key]; ok {
		return false
	}
	l.held[key] = struct{}{}
	return true
}

func (l *locker) free(key int32) {
	l.mu.Lock()
	delete(l.held, key)
	l.mu.Unlock()
}

func (l *locker) close() { l.sess.close() }

type lockReqKind uint8

const (
	reqClaim  lockReqKind = iota // lock the claim's key, then read its job
	reqSave                      // run sql in the group transaction, then unlock
	reqUnlock                    // unlock key (no answer awaited)
)

type lockReq struct {
	kind  lockReqKind
	claim *Claim
	sql   string // reqSave: returns the job's status, or no row if the chunk exists
	args  []any
	// notify, for a save of a watched job, is the job ID its transaction
	// notifies on commit (Store.Listen).
	notify string
	key    int32  // reqUnlock
	gen    uint64 // reqUnlock: the session the lock was taken on
	// Answers, valid once done is closed.
	status string
	err    error
	done   chan struct{} // nil for reqUnlock
}

// lockSession is one dedicated Postgres session and the goroutine that owns it.
type lockSession struct {
	cfg     *pgx.ConnConfig
	reqs    chan *lockReq
	quit    chan struct{}
	stopped chan struct{}
	mu      sync.RWMutex // closed
	closed  bool
	// Owned by loop.
	conn *pgx.Conn
	gen  uint64 // counts connections: a lock taken on an earlier one is gone
}

// do queues r and, unless it is an unlock, waits for its answer. It always
// waits: once queued, a request may be running.
func (s *lockSession) do(r *lockReq) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errLockerClosed
	}
	s.reqs <- r
	s.mu.RUnlock()
	if r.done == nil {
		return nil
	}
	<-r.done
	return r.err
}

// close runs what is queued, then closes the connection (freeing its locks).
func (s *lockSession) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	<-s.stopped
}

func (s *lockSession) loop() {
	defer close(s.stopped)
	defer s.disconnect()
	batch := make([]*lockReq, 0, maxLockBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		case <-s.quit:
			// Nothing can be queued any more (closed is set): run what was.
			for {
				batch = batch[:0]
				for len(batch) < maxLockBatch && len(s.reqs) > 0 {
					batch = append(batch, <-s.reqs)
				}
				if len(batch) == 0 {
					return
				}
				s.run(batch)
			}
		}
	more:
		for len(batch) < maxLockBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.run(batch)
	}
}

// run answers one batch in up to two round trips: unlocks and claims first
// (a claim then starts its model call without waiting for a commit), then
// the saves' transaction and their unlocks. No claim can share a batch with
// a save of the same job: the job's key stays in the worker's held set until
// the save has committed and unlocked. An unlock and a later claim of the
// same key can: the unlock is sent first, though either order would leave
// the claim holding the lock once (advisory locks count).
func (s *lockSession) run(batch []*lockReq) {
	var claims, saves, unlocks []*lockReq
	for _, r := range batch {
		switch r.kind {
		case reqClaim:
			claims = append(claims, r)
		case reqSave:
			saves = append(saves, r)
		case reqUnlock:
			unlocks = append(unlocks, r)
		}
	}
	if len(claims) > 0 || len(unlocks) > 0 {
		s.claim(claims, unlocks)
	}
	if len(saves) > 0 {
		s.save(saves)
	}
}

func (s *lockSession) connect(ctx context.Context) error {
	if s.conn != nil && !s.conn.IsClosed() {
		return nil
	}
	s.disconnect()
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("store: lock session: %w", err)
	}
	s.conn = conn
	s.gen++
	return nil
}

// disconnect closes the connection: Postgres ends the session and frees
// every lock it held.
func (s *lockSession) disconnect() {
	if s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
	s.conn = nil
}

// healthy reports whether the session survived an error; if it did not, or
// is stuck in a failed transaction it cannot roll back, it is closed.
func (s *lockSession) healthy(ctx context.Context) bool {
	if s.conn == nil || s.conn.IsClosed() {
		s.disconnect()
		return false
	}
	if s.conn.PgConn().TxStatus() != 'I' {
		if _, err := s.conn.Exec(ctx, "ROLLBACK"); err != nil {
			s.disconnect()
			return false
		}
	}
	return true
}

func finish(rs []*lockReq, err error) {
	for _, r := range rs {
		if err != nil && r.err == nil {
			r.err = err
		}
		if r.done != nil {
			close(r.done)
		}
	}
}

const unlockSQL = `SELECT pg_advisory_unlock($1, k) FROM unnest($2::int4[]) k`

// save commits the saves in one transaction, then unlocks their keys. If
// the transaction fails, each save is retried in a transaction of its own,
// so one bad chunk fails alone.
func (s *lockSession) save(saves []*lockReq) {
	ctx, cancel := context.WithTimeout(context.Background(), lockRoundTrip)
	defer cancel()
	if err := s.connect(ctx); err != nil {
		finish(saves, err)
		return
	}
	// Only locks taken on this connection are still held; the others went
	// with the connection that took them.
	var keys []int32
	for _, r := range saves {
		if r.claim.gen == s.gen {
			keys = append(keys, r.claim.key)
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, r := range saves {
		r.queue(b)
	}
	b.Queue("COMMIT")
	if len(keys) > 0 {
		b.Queue(unlockSQL, lockClass, keys)
	}
	br := s.conn.SendBatch(ctx, b)
	_, txErr := br.Exec()
	for _, r := range saves {
		if txErr != nil {
			break
		}
		if err := r.read(br); errors.Is(err, ErrChunkExists) {
			r.err = err
		} else if err != nil {
			txErr = err
		}
	}
	if txErr == nil {
		_, txErr = br.Exec()
	}
	var unlockErr error
	if txErr == nil && len(keys) > 0 {
		_, unlockErr = br.Exec()
	}
	closeErr := br.Close()
	switch {
	case txErr == nil && unlockErr == nil && closeErr == nil:
		finish(saves, nil)
		return
	case txErr == nil:
		// Committed, but the unlocks failed: the session's locks are in an
		// unknown state, so it is closed, which frees them all.
		s.disconnect()
		finish(saves, nil)
		return
	}
	if !s.healthy(ctx) {
		// The connection is gone, and whether the commit happened with it is
		// unknown: the deliveries retry, and find their chunk stored or not.
		finish(saves, fmt.Errorf("store: save chunks: %w", txErr))
		return
	}
	for i, r := range saves {
		r.status, r.err = "", nil
		if !s.saveOne(ctx, r) {
			// The connection broke: this save and the rest fail.
			finish(saves[:i], nil)
			finish(saves[i:], errors.New("store: save chunks: lock session lost"))
			return
		}
	}
	if len(keys) > 0 {
		if _, err := s.conn.Exec(ctx, unlockSQL, lockClass, keys); err != nil {
			s.disconnect()
		}
	}
	finish(saves, nil)
}

// queue adds a save's statements to a batch: the save, and its
// notification if it has one.
func (r *lockReq) queue(b *pgx.Batch) {
	b.Queue(r.sql, r.args...)
	if r.notify != "" {
		b.Queue(`SELECT pg_notify('carryover_jobs', $1)`, r.notify)
	}
}

// read reads what queue's statements returned: the job's status, or
// ErrChunkExists if the chunk was stored already.
func (r *lockReq) read(br pgx.BatchResults) error {
	err := br.QueryRow().Scan(&r.status)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrChunkExists
	}
	if r.notify != "" {
		if _, nerr := br.Exec(); nerr != nil {
			return nerr
		}
	}
	return err
}

// saveOne commits one save in a transaction of its own, reporting false if
// the connection broke.
func (s *lockSession) saveOne(ctx context.Context, r *lockReq) bool {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	r.queue(b)
	b.Queue("COMMIT")
	br := s.conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		if err = r.read(br); errors.Is(err, ErrChunkExists) {
			r.err, err = err, nil
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.status, r.err = "", fmt.Errorf("store: save chunk %d of job %s: %w", r.claim.Seq, r.claim.Job.ID, err)
		return s.healthy(ctx)
	}
	return true
}

// claim runs the unlocks, then takes each claim's lock and reads its job,
// all in one round trip; a claim of a first chunk also moves its job from
// queued to running there (markRunningSQL).
func (s *lockSession) claim(claims, unlocks []*lockReq) {
	ctx, cancel := context.WithTimeout(context.Background(), lockRoundTrip)
	defer cancel()
	// Only locks taken on the live connection are still held; the others
	// went with the connection that took them.
	var keys []int32
	if s.conn != nil && !s.conn.IsClosed() {
		for _, r := range unlocks {
			if r.gen == s.gen {
				keys = append(keys, r.key)
			}
		}
	}
	if len(claims) == 0 && len(keys) == 0 {
		return
	}
	if err := s.connect(ctx); err != nil {
		finish(claims, err)
		return
	}
	b := &pgx.Batch{}
	if len(keys) > 0 {
		b.Queue(unlockSQL, lockClass, keys)
	}
	for _, r := range claims {
		b.Queue(`SELECT pg_try_advisory_lock($1, $2)`, lockClass, r.claim.key)
		b.Queue(claimSQL, r.claim.jobID, r.claim.Seq)
		if r.claim.Seq == 0 {
			b.Queue(markRunningSQL, r.claim.jobID)
		}
	}
	br := s.conn.SendBatch(ctx, b)
	if len(keys) > 0 {
		if _, err := br.Exec(); err != nil {
			// The locks are in an unknown state: closing the session frees
			// them all (and the claims fail with it).
			_ = br.Close()
			s.disconnect()
			finish(claims, fmt.Errorf("store: unlock: %w", err))
			return
		}
	}
	// Every result is read, so each claim learns whether its lock was taken
	// even when another claim of the batch failed. A claim that failed but
	// holds its lock is released by its caller, with an unlock on this
	// session (unless the session is gone, and the lock with it).
	failed := false
	for _, r := range claims {
		c := r.claim
		c.gen = s.gen
		if err := br.QueryRow().Scan(&c.locked); err != nil {
			c.locked, r.err = false, err
		}
		if err := c.scanRead(br.QueryRow()); err != nil && r.err == nil {
			r.err = err
		}
		if c.Seq == 0 {
			var started bool
			if err := br.QueryRow().Scan(&started); err != nil && r.err == nil {
				r.err = err
			} else if started && c.Job.Status == StatusQueued {
				c.Job.Status = StatusRunning
			}
		}
		failed = failed || r.err != nil
	}
	if err := br.Close(); err != nil || failed {
		s.healthy(ctx)
		finish(claims, err)
		return
	}
	finish(claims, nil)
}
