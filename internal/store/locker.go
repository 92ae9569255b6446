package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// out, and sends them together in two: the claims' locks and reads (one
// statement for all the locks, one for all the reads); then the saves in one
// transaction — one insert for all the routine continuations' chunks, one
// commit and one WAL flush for all — followed by their unlocks. Postgres
// spends more CPU setting up a statement than on a row, so statements are
// shared wherever the rows allow. Under load a round trip serves many
// chunks (about seven in the pipeline benchmark); at rest it serves one, as
// before. (Two sessions, so that one could take locks while the other
// waited for its commit, cost Postgres more CPU per chunk and were no faster
// on the benchmark's two cores: the batches were smaller.)
//
// The guarantees are those of a connection per task:
//   - a chunk is committed before its job's lock is released (COMMIT, then
//     the unlock, in order on one session);
//   - a claim reads the job and its last chunk in a statement after the one
//     that took the lock (in READ COMMITTED each statement takes a snapshot
//     of its own, even within the batch's implicit transaction), so with a
//     fresh snapshot that sees every chunk committed by the lock's previous
//     holder;
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
	reqStart                     // commit a call's start (in the saves' transaction of its round trip)
)

type lockReq struct {
	kind  lockReqKind
	claim *Claim
	// A save is a routine continuation's chunk, stored with the others of
	// its round trip (routineChunksSQL), or else a statement of its own that
	// returns the job's status, or no row if the chunk exists.
	chunk *NewChunk
	sql   string
	args  []any
	// notify, for a save of a watched job, is the job ID its transaction
	// notifies on commit (Store.Listen).
	notify string
	key    int32     // reqUnlock
	gen    uint64    // reqUnlock: the session the lock was taken on
	start  callStart // reqStart
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
	var claims, saves, unlocks, starts []*lockReq
	for _, r := range batch {
		switch r.kind {
		case reqClaim:
			claims = append(claims, r)
		case reqSave:
			saves = append(saves, r)
		case reqUnlock:
			unlocks = append(unlocks, r)
		case reqStart:
			starts = append(starts, r)
		}
	}
	if len(claims) > 0 || len(unlocks) > 0 {
		s.claim(claims, unlocks)
	}
	if len(saves) > 0 || len(starts) > 0 {
		s.save(saves, starts)
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
	// Generic plans only. Postgres plans a prepared statement again on every
	// execution while it expects a plan made for the values at hand to be
	// cheaper than a generic one, and for the claims' read, whose arrays it
	// cannot size without their values, it always did: planning cost more
	// than executing. Every statement of the session looks rows up by key,
	// for which the generic plan is the plan. But a generic plan is made
	// once per connection, from the statistics of the moment, and kept until
	// the next ANALYZE: made while the jobs table was small (a fresh
	// deployment, or before a burst of jobs), it joins the claims to jobs by
	// scanning the whole table, for every claim of every round trip until
	// autovacuum comes by (EXPLAIN ANALYZE by hand, 20,000 jobs: 4.5 ms
	// instead of 0.2 ms for a read of three claims). So the session plans
	// only key lookups: no sequential scans, hash or merge joins where an
	// index and a nested loop can do. (SETs, not startup parameters, which connection poolers may
	// refuse.)
	if _, err := conn.Exec(ctx, lockSessionSettings); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("store: lock session: %w", err)
	}
	s.conn = conn
	s.gen++
	return nil
}

// lockSessionSettings are the lock session's planner settings (see
// connect).
const lockSessionSettings = `SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;
SET enable_hashjoin = off; SET enable_mergejoin = off`

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

// save commits the saves and the call starts in one transaction, then
// unlocks the saves' keys. If the transaction fails, each save is retried in
// a transaction of its own, so one bad chunk fails alone, and the starts in
// one of theirs. A start rides in the transaction the saves pay for anyway:
// one more statement for all the starts of the round trip, no commit of its
// own while chunks are being saved.
func (s *lockSession) save(saves, starts []*lockReq) {
	ctx, cancel := context.WithTimeout(context.Background(), lockRoundTrip)
	defer cancel()
	if err := s.connect(ctx); err != nil {
		finish(saves, err)
		finish(starts, err)
		return
	}
	// A start whose claim's lock went with an earlier connection is
	// refused: another delivery may hold the job now, and the call is not
	// made.
	live := starts[:0:0]
	for _, r := range starts {
		if r.claim.gen != s.gen {
			finish([]*lockReq{r}, ErrLockLost)
			continue
		}
		live = append(live, r)
	}
	starts = live
	if len(saves) == 0 && len(starts) == 0 {
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
	queueSaves(b, saves)
	queueStarts(b, starts)
	b.Queue("COMMIT")
	if len(keys) > 0 {
		b.Queue(unlockSQL, lockClass, keys)
	}
	br := s.conn.SendBatch(ctx, b)
	_, txErr := br.Exec()
	if txErr == nil {
		txErr = readSaves(br, saves)
	}
	if txErr == nil && len(starts) > 0 {
		_, txErr = br.Exec()
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
		finish(starts, nil)
		return
	case txErr == nil:
		// Committed, but the unlocks failed: the session's locks are in an
		// unknown state, so it is closed, which frees them all. The starts
		// are committed: their calls go on, as a call under way when the
		// session is lost does, and record what came of them.
		s.disconnect()
		finish(saves, nil)
		finish(starts, nil)
		return
	}
	if !s.healthy(ctx) {
		// The connection is gone, and whether the commit happened with it is
		// unknown: the deliveries retry, and find their chunk stored or not.
		// A start that may have committed makes no call: its mark turns into
		// a lost call only if it is there, and the next claim sees it.
		finish(saves, fmt.Errorf("store: save chunks: %w", txErr))
		finish(starts, fmt.Errorf("store: start calls: %w (%w)", ErrLockLost, txErr))
		return
	}
	if len(starts) > 0 && !s.startAll(ctx, starts) {
		finish(saves, errors.New("store: save chunks: lock session lost"))
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

// queueSaves adds the saves' statements to a batch: the routine chunks'
// insert, each other save's statement, the removal of their calls' starts,
// then the notifications.
func queueSaves(b *pgx.Batch, saves []*lockReq) {
	var rows chunkRows
	var notify []string
	var started outcomes
	for _, r := range saves {
		if r.chunk != nil {
			rows.add(r.claim, r.chunk)
		}
		if r.notify != "" {
			notify = append(notify, r.notify)
		}
		started.add(r.claim)
	}
	if len(rows.jobIDs) > 0 {
		b.Queue(routineChunksSQL, rows.args()...)
	}
	for _, r := range saves {
		if r.chunk == nil {
			b.Queue(r.sql, r.args...)
		}
	}
	started.queue(b)
	if len(notify) > 0 {
		b.Queue(`SELECT pg_notify('carryover_jobs', id) FROM unnest($1::text[]) id`, notify)
	}
}

// readSaves reads what queueSaves' statements returned: each save's job
// status, or ErrChunkExists for a chunk stored already. The error returned
// is the first statement's that failed.
func readSaves(br pgx.BatchResults, saves []*lockReq) error {
	var routine []*lockReq
	notify := false
	var started outcomes
	for _, r := range saves {
		if r.chunk != nil {
			routine = append(routine, r)
		}
		notify = notify || r.notify != ""
		started.add(r.claim)
	}
	if len(routine) > 0 {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		type key struct {
			job string
			seq int32
		}
		stored := make(map[key]bool, len(routine))
		var k key
		if _, err := pgx.ForEachRow(rows, []any{&k.job, &k.seq}, func() error { stored[k] = true; return nil }); err != nil {
			return err
		}
		for _, r := range routine {
			if c := r.claim; stored[key{c.Job.ID, int32(c.Seq)}] {
				r.status = c.Job.Status
			} else {
				r.err = ErrChunkExists
			}
		}
	}
	for _, r := range saves {
		if r.chunk != nil {
			continue
		}
		if err := br.QueryRow().Scan(&r.status); errors.Is(err, pgx.ErrNoRows) {
			r.err = ErrChunkExists
		} else if err != nil {
			return err
		}
	}
	if err := started.read(br); err != nil {
		return err
	}
	if notify {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// saveOne commits one save in a transaction of its own, reporting false if
// the connection broke.
func (s *lockSession) saveOne(ctx context.Context, r *lockReq) bool {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	one := []*lockReq{r}
	queueSaves(b, one)
	b.Queue("COMMIT")
	br := s.conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		err = readSaves(br, one)
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

// claim runs the unlocks, then takes the claims' locks and reads their
// jobs, all in one round trip of three statements however many claims share
// it; claims of first chunks also move their jobs from queued to running
// there (markRunningSQL).
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
	var starts []string
	if len(claims) > 0 {
		lockKeys, ids, seqs := make([]int32, len(claims)), make([]string, len(claims)), make([]int32, len(claims))
		for i, r := range claims {
			lockKeys[i], ids[i], seqs[i] = r.claim.key, r.claim.jobID, int32(r.claim.Seq)
			if r.claim.Seq == 0 {
				starts = append(starts, r.claim.jobID)
			}
		}
		b.Queue(lockSQL, lockClass, lockKeys)
		b.Queue(claimSQL, ids, seqs)
		if len(starts) > 0 {
			b.Queue(asyncCommitSQL)
			b.Queue(markRunningSQL, starts)
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
	if len(claims) == 0 {
		if err := br.Close(); err != nil {
			s.healthy(ctx)
		}
		return
	}
	if err := s.lock(br, claims); err != nil {
		// Which locks the statement took before it failed is unknown:
		// closing the session frees them all.
		_ = br.Close()
		s.disconnect()
		finish(claims, fmt.Errorf("store: lock: %w", err))
		return
	}
	// From here on each claim knows whether it holds its lock. A claim that
	// failed but holds its lock is released by its caller, with an unlock on
	// this session (unless the session is gone, and the lock with it).
	err := readClaims(br, claims)
	if err == nil && len(starts) > 0 {
		if _, err = br.Exec(); err == nil {
			err = markStarted(br, claims)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.healthy(ctx)
	}
	finish(claims, err)
}

// asyncCommitSQL lets the round trip that moves jobs to running commit
// without waiting for its WAL flush (set_config's local form lasts until
// the batch's implicit transaction ends). That round trip is every claim's,
// and the move is the one write in it: waiting for the flush delayed every
// claim of the batch. Lost in a crash, the move leaves the job queued, as if
// its first chunk's delivery had not begun, and that delivery (asynq gives
// it again) moves it again; anything durable written after it — the call's
// start, the chunk — flushes the WAL past it first.
const asyncCommitSQL = `SELECT set_config('synchronous_commit', 'off', true)`

// lockSQL takes the locks of a batch's claims, answering in their order.
const lockSQL = `SELECT pg_try_advisory_lock($1, k) FROM unnest($2::int4[]) WITH ORDINALITY AS t(k, i) ORDER BY i`

// lock reads lockSQL's answers into the claims.
func (s *lockSession) lock(br pgx.BatchResults, claims []*lockReq) error {
	return eachRow(br, len(claims), func(i int, row pgx.Rows) error {
		c := claims[i].claim
		c.gen = s.gen
		return row.Scan(&c.locked)
	})
}

// readClaims reads claimSQL's rows into the claims, one each, in order.
func readClaims(br pgx.BatchResults, claims []*lockReq) error {
	return eachRow(br, len(claims), func(i int, row pgx.Rows) error {
		return claims[i].claim.scanRead(row)
	})
}

// eachRow reads the next result of br, which must have n rows, calling
// scan for each.
func eachRow(br pgx.BatchResults, n int, scan func(i int, row pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		if i == n {
			return fmt.Errorf("more than %d rows for %d requests", n, n)
		}
		if err := scan(i, rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if i != n {
		return fmt.Errorf("%d rows for %d requests", i, n)
	}
	return nil
}

// markStarted reads the jobs markRunningSQL started into their claims.
func markStarted(br pgx.BatchResults, claims []*lockReq) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	started, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, r := range claims {
		if c := r.claim; c.Seq == 0 && c.Job.Status == StatusQueued && slices.Contains(started, c.Job.ID) {
			c.Job.Status = StatusRunning
		}
	}
	return nil
}
