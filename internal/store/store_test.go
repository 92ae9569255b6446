package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

func open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dbURL, store.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newJob(t *testing.T, s *store.Store) string {
	t.Helper()
	j, created, err := s.InsertJob(context.Background(), store.NewJob{ID: uuid.NewString(), Model: "gpt-4.1-mini", Format: "text",
		Input: json.RawMessage(`{"prompt":"p"}`), MaxOutputTokens: 64, Continuation: json.RawMessage(`{}`), RequestHash: "h"})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	return j.ID
}

func chunk(text string, cont bool) store.NewChunk {
	return store.NewChunk{Content: text, ContentSHA: "sha-" + text, FinishReason: "length", RawStatus: "incomplete",
		ResponseID: "resp_" + text, TaskID: "task", ShouldContinue: cont, CallStarted: time.Now(), Decision: json.RawMessage(`{}`)}
}

// The job lock: a second delivery is refused while the first holds the job,
// and after the first stored its chunk the second sees it stored — with no
// model call in between.
func TestClaimLock(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	first := claimAs(t, s, id, 0, store.Claimed)
	claimAs(t, s, id, 0, store.Leased) // while the first holds the job
	// Claiming the first chunk started the job, once.
	var status string
	var runningEvents int
	if err := s.Pool().QueryRow(ctx, `SELECT status, (SELECT count(*) FROM job_events WHERE job_id = $1::uuid AND message = 'running')
		FROM jobs WHERE id = $1::uuid`, id).Scan(&status, &runningEvents); err != nil || status != store.StatusRunning || runningEvents != 1 ||
		first.Job.Status != store.StatusRunning {
		t.Fatalf("after the first claim: job %s, claim %s, %d running events (%v)", status, first.Job.Status, runningEvents, err)
	}
	if st, err := first.Save(ctx, chunk("a", true)); err != nil || st != store.StatusRunning {
		t.Fatalf("save: %q %v", st, err)
	}
	if again := claimAs(t, s, id, 0, store.AlreadyStored); again.NextSeq != 1 {
		t.Fatalf("redelivery of a stored chunk: next %d", again.NextSeq)
	}
	next := claimAs(t, s, id, 1, store.Claimed)
	if next.PrevResponseID != "resp_a" || next.PrevSHA != "sha-a" {
		t.Fatalf("next chunk: %+v", next)
	}
	if st, err := next.Save(ctx, chunk("b", false)); err != nil || st != store.StatusMerging {
		t.Fatalf("stopping save: %q %v", st, err)
	}
	claimAs(t, s, id, 2, store.JobDone)               // after the stop
	claimAs(t, s, newJob(t, s), 3, store.Ahead)       // a stray future task
	claimAs(t, s, uuid.NewString(), 0, store.Missing) // an unknown job
}

// claimAs claims chunk seq of job id and checks what the claim found.
func claimAs(t *testing.T, s *store.Store, id string, seq int, want store.ClaimOutcome) *store.Claim {
	t.Helper()
	c, err := s.ClaimChunk(context.Background(), id, seq)
	if err != nil {
		t.Fatalf("claim of chunk %d: %v", seq, err)
	}
	if c.Outcome != want {
		t.Fatalf("claim of chunk %d: %v, want %v", seq, c.Outcome, want)
	}
	return c
}

// A lock held by a connection that dies is freed with it.
func TestLockFreedWithTheSession(t *testing.T) {
	// Serial: it ends every session holding an advisory lock in the
	// database, other tests' lock sessions included.
	s := open(t)
	other := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	c, err := other.ClaimChunk(ctx, id, 0)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatal(c.Outcome, err)
	}
	if ok, _, _ := s.TryLockJob(ctx, id); ok {
		t.Fatal("lock taken twice")
	}
	// The worker dies: Postgres ends its session.
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var ok bool
	var unlock func()
	for i := 0; i < 100 && !ok; i++ { // the backend exits asynchronously
		if ok, unlock, err = s.TryLockJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !ok {
		t.Fatal("lock not freed when its session ended")
	}
	unlock()
}

// A call is lost only if it was started (its start committed before the
// request) and nothing recorded its outcome: deliveries that ended before
// their call — a failure before calling, a claim given up — are not calls,
// and a call's failure or chunk ends its start.
func TestLostCallsAreStartedCallsWithNoOutcome(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	claim := func() *store.Claim {
		t.Helper()
		c, err := s.ClaimChunk(ctx, id, 0)
		if err != nil || c.Outcome != store.Claimed {
			t.Fatal(c.Outcome, err)
		}
		return c
	}
	// Attempt 0 stopped before calling; attempt 1 claimed and died before
	// its call; attempt 2 sent its call and died.
	c := claim()
	if _, err := c.Fail(ctx, store.CallFailure{TaskID: "t", Attempt: 0, Counted: true, ErrorType: "internal", Error: "no call made",
		Started: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	claim().Release()
	c = claim()
	if c.LostCalls {
		t.Fatal("deliveries that made no call read as lost calls")
	}
	if err := c.StartCall(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	c.Release() // the worker dies: no outcome
	// Attempt 3 finds the call, records it lost once, and fails with a 500.
	c = claim()
	if !c.LostCalls {
		t.Fatal("the started call with no outcome is not seen")
	}
	if n, err := c.RecordLostCalls(ctx); err != nil || n != 1 {
		t.Fatalf("lost calls recorded: %d %v", n, err)
	}
	if n, _ := c.RecordLostCalls(ctx); n != 0 {
		t.Fatalf("recorded again: %d", n)
	}
	if err := c.StartCall(ctx, "t", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fail(ctx, store.CallFailure{TaskID: "t", Attempt: 3, Counted: true, ErrorType: "model", HTTPStatus: 500,
		Error: "500", Started: time.Now(), Sent: true}, nil); err != nil {
		t.Fatal(err)
	}
	// Attempt 4 succeeds.
	c = claim()
	if c.LostCalls {
		t.Fatal("a failed call's start outlived its record")
	}
	if err := c.StartCall(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Save(ctx, chunk("a", true)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM call_starts WHERE job_id = $1::uuid`, id); n != 0 {
		t.Fatalf("%d call starts left", n)
	}
	for _, q := range []struct {
		where string
		want  int
	}{
		{"request_sent", 3},
		{"NOT request_sent", 1},
		{"status = 'lost'", 1},
		{"status = 'lost' AND request_sent AND task_id = 't' AND attempt = 2", 1},
	} {
		if n := count(t, s, `SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND `+q.where, id); n != q.want {
			t.Errorf("llm_calls where %s: %d, want %d", q.where, n, q.want)
		}
	}
	// The reconciler's way: a started call of a job nobody holds.
	c, _ = s.ClaimChunk(ctx, id, 1)
	if err := c.StartCall(ctx, "u", 0); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if n, err := s.RecordLost(ctx, id); err != nil || n != 1 {
		t.Fatalf("reconciler recorded %d lost calls: %v", n, err)
	}
	// A leftover start of a job no claim will look at again (cancelled).
	c, _ = s.ClaimChunk(ctx, id, 1)
	if err := c.StartCall(ctx, "u", 1); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET status = 'cancelled' WHERE id = $1::uuid`, id); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RecordLostBefore(ctx, time.Now().Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("a start younger than the limit recorded as lost: %d %v", n, err)
	}
	if n, err := s.RecordLostBefore(ctx, time.Now().Add(time.Minute)); err != nil || n < 1 {
		t.Fatalf("leftover starts recorded as lost: %d %v", n, err)
	}
	if n := count(t, s, `SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'lost'`, id); n != 3 {
		t.Fatalf("%d lost calls, want 3", n)
	}
}

// A claim whose lock went with its lock session (Postgres ended the
// session) starts no call: another delivery may hold the job.
func TestStartCallRefusedAfterTheLockWasLost(t *testing.T) {
	// Serial: it ends every session holding an advisory lock in the
	// database, other tests' lock sessions included.
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	c, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatal(c.Outcome, err)
	}
	defer c.Release()
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !lockFree(t, s, id) {
		if time.Now().After(deadline) {
			t.Fatal("lock not freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Another claim puts the session on a new connection.
	other := newJob(t, s)
	for {
		c2, err := s.ClaimChunk(ctx, other, 0)
		if err == nil {
			c2.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if err := c.StartCall(ctx, "t", 0); !errors.Is(err, store.ErrLockLost) {
		t.Fatalf("start after the lock was lost: %v", err)
	}
	if n := count(t, s, `SELECT count(*) FROM call_starts WHERE job_id = $1::uuid`, id); n != 0 {
		t.Fatalf("%d call starts written", n)
	}
}

// count runs a counting query.
func count(t *testing.T, s *store.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lockFree reports whether the job's lock is free (taking and dropping it on
// a connection of s's pool).
func lockFree(t *testing.T, s *store.Store, id string) bool {
	t.Helper()
	ok, unlock, err := s.TryLockJob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		unlock()
	}
	return ok
}

// Saves that share a lock session's transaction commit together; one that
// fails is retried alone, so it fails alone, and every lock is released.
func TestGroupCommitIsolatesAFailingSave(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	sess := s.NewTestSession()
	defer sess.Close()
	ids := []string{newJob(t, s), newJob(t, s), newJob(t, s)}
	claims := make([]*store.Claim, len(ids))
	reqs := make([]store.TestReq, len(ids))
	for i, id := range ids {
		claims[i], reqs[i] = sess.ClaimReq(id, 0)
	}
	sess.Run(reqs...)
	for i, c := range claims {
		if reqs[i].Err() != nil || c.Outcome != store.Claimed {
			t.Fatalf("claim %d: %v %v", i, c.Outcome, reqs[i].Err())
		}
		if lockFree(t, s, ids[i]) {
			t.Fatalf("job %d not locked by its claim", i)
		}
	}
	bad := chunk("b", true)
	bad.Content = "a NUL byte \x00 Postgres refuses in text"
	saves := []store.TestReq{claims[0].SaveReq(chunk("a", true)), claims[1].SaveReq(bad), claims[2].SaveReq(chunk("c", false))}
	sess.Run(saves...)
	if saves[0].Err() != nil || saves[0].Status() != store.StatusRunning { // the claim started the job
		t.Fatalf("first save: %q %v", saves[0].Status(), saves[0].Err())
	}
	if saves[1].Err() == nil {
		t.Fatal("a chunk Postgres refuses was saved")
	}
	if saves[2].Err() != nil || saves[2].Status() != store.StatusMerging {
		t.Fatalf("stopping save: %q %v", saves[2].Status(), saves[2].Err())
	}
	for i, id := range ids {
		if !lockFree(t, s, id) {
			t.Fatalf("job %d still locked after its save", i)
		}
		chunks, err := s.Chunks(ctx, id, store.ChunkDecisions)
		if err != nil || len(chunks) != map[int]int{0: 1, 1: 0, 2: 1}[i] {
			t.Fatalf("job %d: %d chunks stored, %v", i, len(chunks), err)
		}
	}
	// A redelivered save finds its chunk stored.
	c, req := sess.ClaimReq(ids[0], 0)
	sess.Run(req)
	if c.Outcome != store.AlreadyStored {
		t.Fatalf("claim of a stored chunk: %v %v", c.Outcome, req.Err())
	}
	sess.Run(c.UnlockReq())
}

// An unlock queued before a claim of the same job runs before it, even in
// the same round trip: the claim then holds the lock, once.
func TestUnlockRunsBeforeALaterClaim(t *testing.T) {
	t.Parallel()
	s := open(t)
	sess := s.NewTestSession()
	defer sess.Close()
	id := newJob(t, s)
	first, req := sess.ClaimReq(id, 0)
	sess.Run(req)
	if first.Outcome != store.Claimed {
		t.Fatal(first.Outcome, req.Err())
	}
	second, req := sess.ClaimReq(id, 0)
	sess.Run(first.UnlockReq(), req)
	if second.Outcome != store.Claimed || !second.Locked() {
		t.Fatal(second.Outcome, req.Err())
	}
	if lockFree(t, s, id) {
		t.Fatal("the second claim does not hold the lock")
	}
	sess.Run(second.UnlockReq())
	if !lockFree(t, s, id) {
		t.Fatal("the lock is still held after its one holder released it")
	}
}

// Two deliveries of a job in one worker: the second is refused by the
// worker itself (its lock sessions would grant a lock they hold twice).
func TestSecondClaimInOneWorker(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	first, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || first.Outcome != store.Claimed {
		t.Fatal(first.Outcome, err)
	}
	second, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || second.Outcome != store.Leased {
		t.Fatal(second.Outcome, err)
	}
	second.Release() // releasing a refused claim must not free the first's hold
	if third, err := s.ClaimChunk(ctx, id, 0); err != nil || third.Outcome != store.Leased {
		t.Fatal(third.Outcome, err)
	}
	first.Release()
	again, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || again.Outcome != store.Claimed {
		t.Fatal(again.Outcome, err)
	}
	again.Release()
}

// A worker whose lock session dies loses its locks with it: a save on the
// dead session fails (the delivery retries and finds its chunk stored or
// not), and the next claim opens a new session.
func TestLockSessionLost(t *testing.T) {
	// Serial: it ends every session holding an advisory lock in the
	// database, other tests' lock sessions included.
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	c, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatal(c.Outcome, err)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && !lockFree(t, s, id); i++ { // the backend exits asynchronously
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Save(ctx, chunk("a", true)); err == nil {
		t.Fatal("a save on a lost session succeeded")
	}
	again, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || again.Outcome != store.Claimed {
		t.Fatalf("claim after the session was lost: %v %v", again.Outcome, err)
	}
	if st, err := again.Save(ctx, chunk("a", true)); err != nil || st != store.StatusRunning {
		t.Fatalf("save on the new session: %q %v", st, err)
	}
	if !lockFree(t, s, id) {
		t.Fatal("lock still held after the save")
	}
}

// What a save writes beside the chunk: a decision event only when the
// chunk's decision has a note (routine continuations have none), a
// notification only for a job someone watches; and deleting a job deletes
// its chunks and events (a trigger, in place of foreign keys).
func TestSaveEventsNotificationsAndDelete(t *testing.T) {
	t.Parallel()
	s := open(t)
	watched, unwatched := newJob(t, s), newJob(t, s)
	notified, stopWatching := watch(t, s, watched)
	heard := listenAll(t, s)
	// An unwatched job's routine chunk sends no notification (its first
	// claim's status event does, so chunk 1 is the one checked).
	saveChunk(t, s, unwatched, 0, chunk("u0", true))
	heard(unwatched, 300*time.Millisecond) // the status event's, if any
	saveChunk(t, s, unwatched, 1, chunk("u1", true))
	if heard(unwatched, 300*time.Millisecond) {
		t.Fatal("a routine chunk of an unwatched job notified")
	}
	saveChunk(t, s, watched, 0, chunk("w0", true))
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("a chunk of a watched job did not notify")
	}
	if n := decisionEvents(t, s, watched); n != 0 {
		t.Fatalf("a routine continuation wrote %d decision events", n)
	}
	noted := chunk("w1", true)
	noted.DecisionNote = "chunk 1: continue (stream_broken)"
	saveChunk(t, s, watched, 1, noted)
	last := chunk("w2", false)
	last.DecisionNote, last.StopReason = "chunk 2: stop, completed (finish_reason)", "completed"
	last.Decision = json.RawMessage(`{"decision": "stop", "resolved_by": "finish_reason"}`)
	saveChunk(t, s, watched, 2, last)
	if n := decisionEvents(t, s, watched); n != 2 {
		t.Fatalf("%d decision events for a noted continuation and a stop, want 2", n)
	}
	checkStopEvents(t, s, watched)
	if err := stopWatching(); err != nil {
		t.Fatal(err)
	}
	checkDeleteTakesChunksAndEvents(t, s, watched, unwatched)
}

// saveChunk claims chunk seq of job id and saves n for it.
func saveChunk(t *testing.T, s *store.Store, id string, seq int, n store.NewChunk) {
	t.Helper()
	c, err := s.ClaimChunk(context.Background(), id, seq)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatalf("claim %d: %v %v", seq, c.Outcome, err)
	}
	if _, err := c.Save(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// decisionEvents counts job id's decision events.
func decisionEvents(t *testing.T, s *store.Store, id string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM job_events WHERE job_id = $1::uuid AND type = 'decision'`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// watch listens to job id as a client's Watch does, once its watcher is
// registered; stop ends the listening and returns Listen's error.
func watch(t *testing.T, s *store.Store, id string) (notified <-chan struct{}, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan struct{}, 16)
	listening := make(chan error, 1)
	go func() { listening <- s.Listen(ctx, id, func() { ch <- struct{}{} }) }()
	// Listen registers its watcher after LISTEN; wait until it has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM job_watchers WHERE job_id = $1::uuid`, id).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher was never registered")
		}
	}
	return ch, func() error { cancel(); return <-listening }
}

// listenAll listens to every job notification on a connection of its own;
// heard reports whether one for job id came within the time given.
func listenAll(t *testing.T, s *store.Store) (heard func(id string, within time.Duration) bool) {
	t.Helper()
	ctx := context.Background()
	raw, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Conn().Close(ctx); raw.Release() })
	if _, err := raw.Exec(ctx, "LISTEN carryover_jobs"); err != nil {
		t.Fatal(err)
	}
	return func(id string, within time.Duration) bool {
		t.Helper()
		for deadline := time.Now().Add(within); ; {
			wctx, cancel := context.WithDeadline(ctx, deadline)
			n, err := raw.Conn().WaitForNotification(wctx)
			cancel()
			if err != nil {
				return false
			}
			if n.Payload == id {
				return true
			}
		}
	}
}

// checkStopEvents: the stop's events read from its chunk (seq 2), in order;
// the job keeps its stop reason.
func checkStopEvents(t *testing.T, s *store.Store, id string) {
	t.Helper()
	var events, stopReason string
	if err := s.Pool().QueryRow(context.Background(), `SELECT string_agg(type || ' ' || message || ' ' || coalesce(data::text, ''), '; ' ORDER BY id),
		(SELECT stop_reason FROM jobs WHERE id = $1::uuid) FROM job_events WHERE job_id = $1::uuid AND seq = 2`, id).Scan(&events, &stopReason); err != nil {
		t.Fatal(err)
	}
	if want := `decision chunk 2: stop, completed (finish_reason) {"decision": "stop", "resolved_by": "finish_reason", "stop_reason": "completed", ` +
		`"should_continue": false}; status merging {"stop_reason": "completed"}`; events != want || stopReason != "completed" {
		t.Fatalf("the stop's events: %s\nwant %s; job stop reason %q", events, want, stopReason)
	}
}

// checkDeleteTakesChunksAndEvents: deleting jobs deletes their chunks and
// events (a trigger, in place of foreign keys).
func checkDeleteTakesChunksAndEvents(t *testing.T, s *store.Store, ids ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `DELETE FROM jobs WHERE id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[])) +
		(SELECT count(*) FROM job_events WHERE job_id = ANY($1::uuid[]))`, ids).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d chunks and events left after their jobs were deleted (%v)", left, err)
	}
}

// An auto-format job's content type is detected once: before a continuation
// recorded it, a claim reads the input and the first chunk's opening to
// detect it; after, it reads the recorded type and neither of those.
func TestContentKindCarriedForward(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	j, created, err := s.InsertJob(ctx, store.NewJob{ID: uuid.NewString(), Model: "gpt-4.1-mini", Format: "auto",
		Input: json.RawMessage(`{"prompt":"a CSV of cities"}`), MaxOutputTokens: 64, Continuation: json.RawMessage(`{}`), RequestHash: "h"})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	claim := func(seq int) *store.Claim {
		t.Helper()
		c, err := s.ClaimChunk(ctx, j.ID, seq)
		if err != nil || c.Outcome != store.Claimed {
			t.Fatalf("claim %d: %v %v", seq, c.Outcome, err)
		}
		return c
	}
	stateful := func(n store.NewChunk) store.NewChunk { n.Strategy = "stateful"; return n }
	c0 := claim(0)
	if _, err := c0.Save(ctx, stateful(chunk("city,country\n", true))); err != nil {
		t.Fatal(err)
	}
	c1 := claim(1)
	if c1.PrevKind != "" || len(c1.Job.Input) == 0 || c1.FirstHead != "city,country\n" {
		t.Fatalf("chunk 1 before any type was recorded: kind %q, input %q, head %q", c1.PrevKind, c1.Job.Input, c1.FirstHead)
	}
	n := stateful(chunk("Paris,France\n", true))
	n.ContentKind = "csv"
	if _, err := c1.Save(ctx, n); err != nil {
		t.Fatal(err)
	}
	c2 := claim(2)
	defer c2.Release()
	if c2.PrevKind != "csv" || len(c2.Job.Input) != 0 || c2.FirstHead != "" {
		t.Fatalf("chunk 2 after chunk 1 recorded csv: kind %q, input %q, head %q", c2.PrevKind, c2.Job.Input, c2.FirstHead)
	}
}

// A routine continuation's chunk, stored with the others of its round trip,
// is the same row as a chunk stored by a statement of its own, every column
// included, and each column holds its own field of the chunk; several in
// one batch each get their own row.
func TestRoutineChunksStoredAlike(t *testing.T) {
	t.Parallel()
	s := open(t)
	sess := s.NewTestSession()
	defer sess.Close()
	cost := 0.00012345
	cases := []struct {
		name   string
		chunks []store.NewChunk // saved together, one job each
	}{
		{"priced, with tool calls", []store.NewChunk{fullChunk(json.RawMessage(`[{"name": "f"}]`), &cost)}},
		{"unpriced, no tool calls", []store.NewChunk{fullChunk(nil, nil)}},
		{"three in one batch", []store.NewChunk{fullChunk(nil, &cost), fullChunk(json.RawMessage(`[]`), nil), fullChunk(nil, nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			batched, own := saveBatchedAndAlone(t, s, sess, tc.chunks)
			for i, n := range tc.chunks {
				got, ownRow := chunkRow(t, s, batched[i]), chunkRow(t, s, own[i])
				if g, w := fmt.Sprint(got), fmt.Sprint(ownRow); g != w {
					t.Errorf("chunk %d stored as\n%s\nwith its own statement\n%s", i, g, w)
				}
				for col, w := range wantColumns(n) {
					if g := got[col]; fmt.Sprint(g) != fmt.Sprint(w) {
						t.Errorf("chunk %d: %s = %v, want %v", i, col, g, w)
					}
				}
			}
		})
	}
}

// fullChunk is a continuation's chunk with every field set, each to a value
// of its own.
func fullChunk(tools json.RawMessage, cost *float64) store.NewChunk {
	n := chunk("a,b\n1,", true)
	n.IncompleteReason, n.Attempt, n.Usage = "max_output_tokens", 2, store.Usage{Input: 11, Cached: 3, Output: 64, Reasoning: 5}
	n.CostUSD, n.CumOutput, n.CumCost, n.Latency = cost, 128, cost, 1234*time.Millisecond
	n.CallStarted = time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.UTC)
	n.Decision = json.RawMessage(`{"decision": "continue", "resolved_by": "finish_reason"}`)
	n.Strategy, n.Prompt, n.MaxOutputTokens, n.ToolCalls = "stateful", "Continue.", 96, tools
	n.CumRecords, n.InQuote, n.StreamBroken, n.ContentKind = 7, true, true, "csv"
	return n
}

// saveBatchedAndAlone stores each chunk as chunk 0 of two new jobs: for the
// first with the others of one round trip, for the second (its decision
// noted) by a statement of its own. It returns the two jobs' IDs.
func saveBatchedAndAlone(t *testing.T, s *store.Store, sess *store.TestSession, chunks []store.NewChunk) (batched, own []string) {
	t.Helper()
	var reqs, saves, alone []store.TestReq
	var claims, owns []*store.Claim
	for range chunks {
		id, ownID := newJob(t, s), newJob(t, s)
		c, req := sess.ClaimReq(id, 0)
		oc, oreq := sess.ClaimReq(ownID, 0)
		batched, own, claims, owns = append(batched, id), append(own, ownID), append(claims, c), append(owns, oc)
		reqs = append(reqs, req, oreq)
	}
	sess.Run(reqs...)
	for i, n := range chunks {
		saves = append(saves, claims[i].SaveReq(n))
		n.DecisionNote = "worth an event" // a statement of its own
		alone = append(alone, owns[i].SaveReq(n))
	}
	sess.Run(saves...)
	for i := range alone {
		sess.Run(alone[i])
	}
	for i := range chunks {
		if saves[i].Err() != nil || alone[i].Err() != nil || saves[i].Status() != store.StatusRunning {
			t.Fatalf("chunk %d: %q %v; own statement %v", i, saves[i].Status(), saves[i].Err(), alone[i].Err())
		}
	}
	return batched, own
}

// chunkRow is the row of job id's chunk 0, every column but job_id and
// created_at.
func chunkRow(t *testing.T, s *store.Store, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := s.Pool().QueryRow(context.Background(), `SELECT to_jsonb(c) - 'job_id' - 'created_at' FROM chunks c WHERE job_id = $1::uuid AND seq = 0`,
		id).Scan(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// wantColumns is what the columns of n's row must hold, each from its own
// field (the values differ, so that two swapped columns show).
func wantColumns(n store.NewChunk) map[string]any {
	m := map[string]any{"seq": 0, "content": n.Content, "content_sha": n.ContentSHA, "finish_reason": n.FinishReason,
		"raw_status": n.RawStatus, "incomplete_reason": n.IncompleteReason, "response_id": n.ResponseID,
		"previous_response_id": nil, "task_id": n.TaskID, "attempt": n.Attempt, "input_tokens": n.Usage.Input,
		"cached_tokens": n.Usage.Cached, "output_tokens": n.Usage.Output, "reasoning_tokens": n.Usage.Reasoning,
		"latency_ms": n.Latency.Milliseconds(), "should_continue": n.ShouldContinue, "stop_reason": nil,
		"decision": map[string]any{"decision": "continue", "resolved_by": "finish_reason"}, "cum_output_tokens": n.CumOutput,
		"strategy": n.Strategy, "prompt": n.Prompt, "max_output_tokens": n.MaxOutputTokens, "tool_calls": nil,
		"cum_records": n.CumRecords, "in_quote": n.InQuote, "stream_broken": n.StreamBroken, "content_kind": n.ContentKind,
		"cost_usd": nil, "cum_cost_usd": nil}
	if n.CostUSD != nil {
		m["cost_usd"], m["cum_cost_usd"] = *n.CostUSD, *n.CumCost
	}
	if n.ToolCalls != nil {
		var v any
		_ = json.Unmarshal(n.ToolCalls, &v)
		m["tool_calls"] = v
	}
	return m
}

// Claims sharing a round trip each get their own job's answer, a job that
// does not exist among them.
func TestClaimsOfOneRoundTrip(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	stored := func() string { // a job whose chunk 0 is stored
		id := newJob(t, s)
		c, err := s.ClaimChunk(ctx, id, 0)
		if err != nil || c.Outcome != store.Claimed {
			t.Fatal(c.Outcome, err)
		}
		if _, err := c.Save(ctx, chunk("x"+id[:4], true)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sess := s.NewTestSession()
	defer sess.Close()
	cases := []struct {
		id     string
		seq    int
		want   store.ClaimOutcome
		status string
	}{
		{uuid.NewString(), 0, store.Missing, ""},
		{newJob(t, s), 0, store.Claimed, store.StatusRunning},
		{stored(), 1, store.Claimed, store.StatusRunning},
		{stored(), 0, store.AlreadyStored, store.StatusRunning},
		{newJob(t, s), 2, store.Ahead, store.StatusQueued},
	}
	claims := make([]*store.Claim, len(cases))
	reqs := make([]store.TestReq, len(cases))
	for i, tc := range cases {
		claims[i], reqs[i] = sess.ClaimReq(tc.id, tc.seq)
	}
	sess.Run(reqs...)
	for i, tc := range cases {
		c := claims[i]
		if reqs[i].Err() != nil || c.Outcome != tc.want || c.Job.Status != tc.status || !c.Locked() {
			t.Errorf("claim %d: %v, job %q, locked %v (%v); want %v, job %q", i, c.Outcome, c.Job.Status, c.Locked(), reqs[i].Err(), tc.want, tc.status)
		}
		if tc.want == store.Claimed && tc.seq == 1 && c.PrevResponseID != "resp_x"+tc.id[:4] {
			t.Errorf("claim %d continues from %q", i, c.PrevResponseID)
		}
		if c.Outcome != store.Missing && c.Job.ID != tc.id {
			t.Errorf("claim %d read job %s", i, c.Job.ID)
		}
	}
	var unlocks []store.TestReq
	for _, c := range claims {
		unlocks = append(unlocks, c.UnlockReq())
	}
	sess.Run(unlocks...)
}
