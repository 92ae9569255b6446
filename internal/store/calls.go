package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Call starts.
//
// A model call is on record as lost only when its request was sent and
// nothing says what came of it. So a call's start is committed before its
// request is sent (StartCall: a row of call_starts), and removed in the same
// transaction as the call's outcome — its chunk (Save), its failure (Fail,
// RecordAttempt) or its background call's id (StartBackground). A start
// still there when the chunk is claimed again belongs to a delivery that
// died, or lost Postgres, after sending: RecordLostCalls turns it into a
// 'lost' row. A delivery that ended before its call — at the claim, in
// prepare, Postgres being down — left no start, and is never a lost call.
//
// The cost: the starts go through the lock session, which already commits
// the chunks of each round trip in one transaction; the starts of a round
// trip are one more statement in it (and the outcome's removal one more for
// all its chunks), so a worker under load pays no commit of its own for
// them. At rest a start is a round trip and a commit before the call.

// ErrLockLost means the claim's job lock went with the lock session's
// connection (Postgres restarted, or the connection broke) after the claim:
// another delivery may hold the job by now, so no call is started.
var ErrLockLost = errors.New("store: the job's lock was lost with the lock session's connection")

// callStart is a reqStart's row of call_starts.
type callStart struct {
	id, taskID string
	attempt    int
}

// StartCall commits that the claim's model call is about to be sent, and
// must return before the request is sent; the call's outcome, recorded
// through the claim, removes the mark. A call with no mark is never made:
// on an error the caller ends the delivery without calling. taskID and
// attempt are the delivery's.
func (c *Claim) StartCall(ctx context.Context, taskID string, attempt int) error {
	if !c.locked || c.sess == nil {
		return fmt.Errorf("store: start call of job %s chunk %d: %w", c.Job.ID, c.Seq, ErrLockLost)
	}
	r := &lockReq{kind: reqStart, claim: c, start: callStart{id: uuid.NewString(), taskID: taskID, attempt: attempt},
		done: make(chan struct{})}
	if err := c.sess.do(r); err != nil {
		// The commit may have happened with a connection that broke: take
		// the start back, so that no call that was not made is counted.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, _ = c.store.pool.Exec(ctx, `DELETE FROM call_starts WHERE id = $1::uuid`, r.start.id)
		cancel()
		return fmt.Errorf("store: start call of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	c.callID = r.start.id
	return nil
}

// startCallsSQL stores the starts of a round trip, one statement for all.
const startCallsSQL = `INSERT INTO call_starts (id, job_id, seq, task_id, attempt, previous_response_id)
SELECT id, job_id, seq, task_id, attempt, nullif(prev, '')
FROM unnest($1::uuid[], $2::uuid[], $3::int4[], $4::text[], $5::int4[], $6::text[]) AS t(id, job_id, seq, task_id, attempt, prev)`

// queueStarts adds the starts' insert to a batch (nothing for none).
func queueStarts(b *pgx.Batch, starts []*lockReq) {
	if len(starts) == 0 {
		return
	}
	n := len(starts)
	ids, jobIDs, taskIDs, prevs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seqs, attempts := make([]int32, n), make([]int32, n)
	for i, r := range starts {
		c := r.claim
		ids[i], jobIDs[i], seqs[i] = r.start.id, c.Job.ID, int32(c.Seq)
		taskIDs[i], attempts[i], prevs[i] = r.start.taskID, int32(r.start.attempt), c.PrevResponseID
	}
	b.Queue(startCallsSQL, ids, jobIDs, seqs, taskIDs, attempts, prevs)
}

// startAll commits the starts in a transaction of their own, reporting
// false if the connection broke.
func (s *lockSession) startAll(ctx context.Context, starts []*lockReq) bool {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	queueStarts(b, starts)
	b.Queue("COMMIT")
	err := s.conn.SendBatch(ctx, b).Close()
	if err == nil {
		finish(starts, nil)
		return true
	}
	ok := s.healthy(ctx)
	if !ok {
		err = fmt.Errorf("%w (%w)", ErrLockLost, err) // the session, and its locks, are gone
	}
	finish(starts, fmt.Errorf("store: start calls: %w", err))
	return ok
}

// outcomes are the call starts that a round trip's saves record the
// outcome of, and so remove. A save whose claim's lock went with an earlier
// connection also removes the lost row another delivery may have made of
// its start meanwhile: its outcome is known after all.
type outcomes struct {
	ids               []string
	lostJobs, lostIDs []string
	lostSeqs          []int32
}

func (o *outcomes) add(c *Claim) {
	if c.callID == "" {
		return
	}
	o.ids = append(o.ids, c.callID)
	if c.sess != nil && c.gen != c.sess.gen {
		o.lostJobs, o.lostSeqs, o.lostIDs = append(o.lostJobs, c.Job.ID), append(o.lostSeqs, int32(c.Seq)), append(o.lostIDs, c.callID)
	}
}

func (o *outcomes) queue(b *pgx.Batch) {
	if len(o.ids) > 0 {
		b.Queue(`DELETE FROM call_starts WHERE id = ANY($1::uuid[])`, o.ids)
	}
	if len(o.lostIDs) > 0 {
		b.Queue(`DELETE FROM call_failures f USING unnest($1::uuid[], $2::int4[], $3::uuid[]) AS t(job_id, seq, id)
WHERE f.job_id = t.job_id AND f.seq = t.seq AND f.call_id = t.id AND f.status = 'lost'`, o.lostJobs, o.lostSeqs, o.lostIDs)
	}
}

func (o *outcomes) read(br pgx.BatchResults) error {
	for range min(len(o.ids), 1) + min(len(o.lostIDs), 1) {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// endCallSQL removes the start of the call whose outcome its statement
// records ($1; ” for none), and a lost row made of it meanwhile (see
// outcomes); $2 and $3 are the job and the chunk.
const endCallSQL = `WITH s AS (DELETE FROM call_starts WHERE id = nullif($1, '')::uuid RETURNING id)
DELETE FROM call_failures WHERE $1 <> '' AND job_id = $2::uuid AND seq = $3 AND call_id = nullif($1, '')::uuid
	AND status = 'lost' AND NOT EXISTS (SELECT 1 FROM s)`

// lostCallsSQL turns call starts with no outcome into lost calls; the
// caller says which (a WHERE condition).
const lostCallsSQL = `WITH s AS (DELETE FROM call_starts WHERE %s RETURNING *)
INSERT INTO call_failures (job_id, seq, task_id, attempt, status, error_type, error, previous_response_id, started_at,
                           request_sent, call_id)
SELECT job_id, seq, task_id, attempt, 'lost', 'unknown',
       'the request was sent, and the delivery ended before recording what came of it (its worker died, or Postgres was unreachable); it may have been billed, its usage is unknown',
       previous_response_id, started_at, true, id
FROM s`

// RecordLostCalls records, as lost, the calls of the claim's chunk that
// earlier deliveries started and recorded no outcome of (the claim read
// them: LostCalls). The claim holds the job's lock, so those deliveries
// have ended. It returns how many there were.
func (c *Claim) RecordLostCalls(ctx context.Context) (int, error) {
	tag, err := c.store.pool.Exec(ctx, fmt.Sprintf(lostCallsSQL, "job_id = $1::uuid AND seq = $2"), c.Job.ID, c.Seq)
	if err != nil {
		return 0, fmt.Errorf("store: record lost calls of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	return int(tag.RowsAffected()), nil
}

// RecordLost records, as lost, every call of the job that was started and
// has no outcome, for the reconciler, which holds the job's lock (TryLockJob)
// and found it without progress: the deliveries that started them are gone.
// A delivery that died before its call left nothing, and a background call
// whose id was committed is resumed, not lost. It returns how many there were.
func (s *Store) RecordLost(ctx context.Context, jobID string) (int, error) {
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(lostCallsSQL, "job_id = $1::uuid"), jobID)
	if err != nil {
		return 0, fmt.Errorf("store: record lost calls of job %s: %w", jobID, err)
	}
	return int(tag.RowsAffected()), nil
}

// RecordLostBefore records, as lost, every call started before t that has
// no outcome, whatever its job's state: a start outlives its delivery only
// if the delivery died, and no delivery outlives its task's timeout. It
// catches the starts no claim of their chunk will see — the job was
// cancelled or stopped meanwhile — for the reconciler. (call_starts holds
// only calls under way and such leftovers: the scan is of a small table.)
func (s *Store) RecordLostBefore(ctx context.Context, t time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(lostCallsSQL, "started_at < $1"), t)
	if err != nil {
		return 0, fmt.Errorf("store: record lost calls started before %s: %w", t.Format(time.RFC3339), err)
	}
	return int(tag.RowsAffected()), nil
}
