package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ClaimOutcome says what a chunk task found when it tried to claim its chunk.
type ClaimOutcome int

const (
	// Claimed: the caller holds the job's lock and may call the model.
	Claimed ClaimOutcome = iota
	// AlreadyStored: the chunk is stored (a redelivery); no model call.
	AlreadyStored
	// Leased: another delivery holds the job's lock and is calling the model now.
	Leased
	// JobDone: the job is terminal, merging, or cancelled; nothing to do.
	JobDone
	// Ahead: the task's chunk is beyond the next one to generate (a stray task).
	Ahead
	// Missing: there is no such job.
	Missing
)

func (o ClaimOutcome) String() string {
	return [...]string{"claimed", "already_stored", "leased", "job_done", "ahead", "missing"}[o]
}

// lockClass namespaces carryover's advisory locks ("co").
const lockClass int32 = 0x636f

// lockKey maps a job to its advisory lock. Two jobs sharing a key (one in
// 2^32) only ever wait for each other; they never share a chunk.
func lockKey(jobID string) int32 {
	u, err := uuid.Parse(jobID)
	if err != nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(u[:4]))
}

// Claim is one delivery's hold on a job while it makes a chunk: the job's
// advisory lock, held by the worker's lock session (see locker.go),
// so two deliveries can never both call the model for the job, with no write
// at all: if the worker dies, Postgres ends its session and frees the locks.
// Always Release a Claim (Save and Fail release it themselves).
type Claim struct {
	Outcome ClaimOutcome
	// Job holds what a chunk needs of the job: its ID, status, model,
	// format, instructions, max_output_tokens, continuation settings,
	// webhook URL and start, and its input for chunk 0 only.
	Job            Job
	Seq            int
	NextSeq        int      // chunks stored
	PrevResponseID string   // the response to continue from ("" for chunk 0)
	PrevSHA        string   // sha256 of the previous chunk
	PrevTail       string   // the previous chunk's last bytes (a guard's text may straddle the cut)
	CumOutput      int64    // output tokens of the chunks so far
	CumCost        *float64 // their cost (nil when unpriced)
	CumRecords     int64    // records in the chunks so far (max_records guard)
	InQuote        bool     // the CSV so far ends inside a quoted field
	PrevStrategy   string   // how the previous chunk was asked for ("" for chunk 0)
	PrevBroken     bool     // the previous chunk is what arrived before its stream broke
	FirstHead      string   // the first chunk's opening bytes, for an auto or json job's content type (until PrevKind is known)
	PrevKind       string   // the content type the previous chunk's prompt was written for ("" if none was recorded)
	// Background is the chunk's detached call still in flight at the
	// provider (committed by an earlier delivery), or nil: a delivery that
	// finds one resumes it instead of paying for a new call.
	Background *BackgroundCall
	// LostCalls: earlier deliveries of the chunk started calls and recorded
	// no outcome (they died after sending); RecordLostCalls records them.
	LostCalls bool
	// callID is the start of this delivery's call (StartCall) until its
	// outcome is recorded; "" when no call is under way.
	callID string
	store  *Store
	jobID  string
	key    int32
	sess   *lockSession
	gen    uint64 // the session's connection that took the lock
	locked bool   // the session holds the lock for this claim
	held   bool   // the key is in the worker's set of held keys
	// What the claim read, resolved into the fields above.
	found                     bool
	lastSeq                   *int
	prevResp, prevSHA, prevTl *string
	cumOut                    *int64
	cumRec                    *int64
	inQuote, prevBroken       *bool
	prevStrategy, firstHead   *string
	prevKind                  *string
	watched                   bool // someone listens to the job's progress (job_watchers)
	bg                        struct {
		id, taskID         *string
		attempt, maxTokens *int
		created            *time.Time
		polls              *int
	}
}

// claimSQL reads what the claims of a round trip need of their jobs, one
// row per claim in the order of $1 (job IDs) and $2 (their chunks' sequence
// numbers); a job that does not exist reads as a NULL ID. One statement serves
// every claim of the batch: Postgres spends more CPU setting up a statement
// than on reading a job's row and its last chunk.
//
// It reads what a chunk needs of its job — not the caller's metadata,
// the totals or the timestamps, and the input (a prompt or a conversation,
// maybe large) only when the call sends it: for chunk 0, and for a
// strategy that re-sends the conversation (any but stateful, or after a
// broken stream) — and its last chunk: one index probe gives the next
// sequence number and what to continue from. The chunk's tail is read (and
// a large chunk's text decompressed) only for a job with a stop sequence.
// An auto or json job's content type is read from the last chunk once a
// continuation recorded it; only before that are the input and the first
// chunk's opening read to detect it. It also says whether anyone watches
// the job, so that its save notifies, and whether calls started for the
// chunk have no outcome (an index probe of call_starts, empty but for calls
// in flight).
const claimSQL = `SELECT j.id::text, coalesce(j.status, ''), coalesce(j.model, ''), coalesce(j.format, ''), coalesce(j.instructions, ''),
	CASE WHEN t.seq = 0 OR last.strategy <> 'stateful' OR last.stream_broken OR (j.format = 'auto' AND last.content_kind IS NULL)
		THEN j.input END,
	coalesce(j.max_output_tokens, 0), j.continuation, j.webhook_url, j.started_at, coalesce(j.tenant_id, ''), j.options,
	last.seq, last.response_id, last.content_sha,
	CASE WHEN j.continuation ? 'stop_sequence' THEN right(last.content, 256) END,
	last.cum_output_tokens, last.cum_cost_usd::float8, last.cum_records, last.in_quote, last.strategy, last.stream_broken,
	CASE WHEN j.format IN ('auto', 'json') AND last.seq IS NOT NULL AND last.content_kind IS NULL
		THEN (SELECT left(content, 2048) FROM chunks WHERE job_id = j.id AND seq = 0) END,
	last.content_kind,
	EXISTS (SELECT 1 FROM job_watchers w WHERE w.job_id = j.id),
	bg.response_id, bg.task_id, bg.attempt, bg.max_output_tokens, bg.created_at, bg.polls,
	EXISTS (SELECT 1 FROM call_starts s WHERE s.job_id = j.id AND s.seq = t.seq)
FROM unnest($1::uuid[], $2::int4[]) WITH ORDINALITY AS t(id, seq, i)
LEFT JOIN jobs j ON j.id = t.id
LEFT JOIN LATERAL (
	SELECT seq, response_id, content_sha, content, cum_output_tokens, cum_cost_usd, cum_records, in_quote, strategy, stream_broken,
		content_kind
	FROM chunks WHERE job_id = j.id ORDER BY seq DESC LIMIT 1
) last ON true
LEFT JOIN LATERAL (
	SELECT response_id, coalesce(task_id, '') AS task_id, attempt, coalesce(max_output_tokens, 0) AS max_output_tokens, created_at, polls
	FROM background_calls WHERE job_id = j.id AND seq = t.seq AND closed_at IS NULL ORDER BY created_at DESC LIMIT 1
) bg ON true
ORDER BY t.i`

// scanRead keeps the claim's row of claimSQL.
func (c *Claim) scanRead(row pgx.Row) error {
	j := &c.Job
	var id *string // NULL: no such job
	err := row.Scan(&id, &j.Status, &j.Model, &j.Format, &j.Instructions, rawJSON(&j.Input), &j.MaxOutputTokens, rawJSON(&j.Continuation),
		&j.WebhookURL, &j.StartedAt, &j.TenantID, rawJSON(&j.Options), &c.lastSeq, &c.prevResp, &c.prevSHA, &c.prevTl, &c.cumOut, &c.CumCost,
		&c.cumRec, &c.inQuote, &c.prevStrategy, &c.prevBroken, &c.firstHead, &c.prevKind, &c.watched,
		&c.bg.id, &c.bg.taskID, &c.bg.attempt, &c.bg.maxTokens, &c.bg.created, &c.bg.polls, &c.LostCalls)
	if err != nil || id == nil {
		return err
	}
	if c.bg.id != nil {
		c.Background = &BackgroundCall{ResponseID: *c.bg.id, TaskID: *c.bg.taskID, Attempt: *c.bg.attempt,
			MaxOutputTokens: *c.bg.maxTokens, Created: *c.bg.created, Polls: *c.bg.polls}
	}
	j.ID, c.found = *id, true
	return nil
}

// ClaimChunk tries to lock the job for chunk seq and reads what the call
// needs, in one round trip of the lock session; a claim of chunk 0 also
// starts a queued job there (markRunningSQL), the only write. The job is
// read after the lock is held (a new snapshot), so a chunk committed by the
// previous holder is always seen.
func (s *Store) ClaimChunk(ctx context.Context, jobID string, seq int) (*Claim, error) {
	c := &Claim{store: s, jobID: jobID, key: lockKey(jobID), Seq: seq}
	if _, err := uuid.Parse(jobID); err != nil {
		c.Outcome = Missing // no such job can exist
		return c, nil
	}
	lk := s.locks()
	if !lk.hold(c.key) {
		c.Outcome = Leased // another delivery in this worker holds the job
		return c, nil
	}
	c.held, c.sess = true, lk.sess
	if err := c.sess.do(&lockReq{kind: reqClaim, claim: c, done: make(chan struct{})}); err != nil {
		c.Release()
		return nil, fmt.Errorf("store: claim chunk %d of job %s: %w", seq, jobID, err)
	}
	if c.resolve() != Claimed {
		c.Release()
	}
	return c, nil
}

// resolve sets the claim's outcome and fields from what its session read.
func (c *Claim) resolve() ClaimOutcome {
	if c.lastSeq != nil {
		c.NextSeq = *c.lastSeq + 1
		if *c.lastSeq == c.Seq-1 {
			c.PrevResponseID, c.PrevSHA, c.PrevTail = deref(c.prevResp), deref(c.prevSHA), deref(c.prevTl)
			if c.cumOut != nil {
				c.CumOutput = *c.cumOut
			}
			if c.cumRec != nil {
				c.CumRecords, c.InQuote, c.PrevStrategy, c.PrevBroken = *c.cumRec, *c.inQuote, *c.prevStrategy, *c.prevBroken
			}
			c.FirstHead, c.PrevKind = deref(c.firstHead), deref(c.prevKind)
		}
	}
	switch {
	case !c.locked:
		c.Outcome = Leased
	case !c.found:
		c.Outcome = Missing
	case c.Job.Status != StatusQueued && c.Job.Status != StatusRunning:
		c.Outcome = JobDone
	case c.NextSeq > c.Seq:
		c.Outcome = AlreadyStored
	case c.NextSeq < c.Seq:
		c.Outcome = Ahead
	default:
		c.Outcome = Claimed
	}
	return c.Outcome
}

// Release unlocks the job, without waiting for the unlock: the lock session
// runs it before any later claim of the job in this worker. It is safe to call
// more than once.
func (c *Claim) Release() {
	if c.locked {
		_ = c.sess.do(&lockReq{kind: reqUnlock, key: c.key, gen: c.gen})
		c.locked = false
	}
	if c.held {
		c.store.locks().free(c.key)
		c.held = false
	}
}

// markRunningSQL moves queued jobs ($1) to running as their first chunks
// are claimed, in the claims' round trip. It does not wait for the claims'
// locks: a first chunk's task found its job queued, so whichever delivery
// holds the lock is starting the job, and only one of them moves it (and
// writes the event). It returns the jobs this one moved.
const markRunningSQL = `WITH j AS (
	UPDATE jobs SET status = 'running', started_at = coalesce(started_at, now()), updated_at = now()
	WHERE id = ANY($1::uuid[]) AND status || '' = 'queued' RETURNING id -- by key (package doc)
), ev AS (
	INSERT INTO job_events (job_id, level, type, message) SELECT id, 'info', 'status', 'running' FROM j
)
SELECT id::text FROM j`

// TryLockJob takes the job's advisory lock on a dedicated connection if no
// delivery holds it. unlock must be called when ok.
func (s *Store) TryLockJob(ctx context.Context, jobID string) (ok bool, unlock func(), err error) {
	key := lockKey(jobID)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("store: lock job %s: %w", jobID, err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, key).Scan(&ok); err != nil {
		closeConn(conn)
		return false, nil, fmt.Errorf("store: lock job %s: %w", jobID, err)
	}
	if !ok {
		conn.Release()
		return false, nil, nil
	}
	return true, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockClass, key); err != nil {
			closeConn(conn) // closing the session drops the lock
			return
		}
		conn.Release()
	}, nil
}

// closeConn closes a pooled connection, which ends its session and its locks.
func closeConn(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
