package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
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

// Price is a model's price in USD per one million tokens.
type Price struct {
	Model         string    `json:"model"`
	EffectiveFrom time.Time `json:"effective_from"`
	Input         float64   `json:"input_per_mtok"`
	CachedInput   *float64  `json:"cached_input_per_mtok,omitempty"`
	Output        float64   `json:"output_per_mtok"`
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
	store          *Store
	jobID          string
	key            int32
	sess           *lockSession
	gen            uint64 // the session's connection that took the lock
	locked         bool   // the session holds the lock for this claim
	held           bool   // the key is in the worker's set of held keys
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
// the job, so that its save notifies.
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
	EXISTS (SELECT 1 FROM job_watchers w WHERE w.job_id = j.id)
FROM unnest($1::uuid[], $2::int4[]) WITH ORDINALITY AS t(id, seq, i)
LEFT JOIN jobs j ON j.id = t.id
LEFT JOIN LATERAL (
	SELECT seq, response_id, content_sha, content, cum_output_tokens, cum_cost_usd, cum_records, in_quote, strategy, stream_broken,
		content_kind
	FROM chunks WHERE job_id = j.id ORDER BY seq DESC LIMIT 1
) last ON true
ORDER BY t.i`

// scanRead keeps the claim's row of claimSQL.
func (c *Claim) scanRead(row pgx.Row) error {
	j := &c.Job
	var id *string // NULL: no such job
	err := row.Scan(&id, &j.Status, &j.Model, &j.Format, &j.Instructions, rawJSON(&j.Input), &j.MaxOutputTokens, rawJSON(&j.Continuation),
		&j.WebhookURL, &j.StartedAt, &j.TenantID, rawJSON(&j.Options), &c.lastSeq, &c.prevResp, &c.prevSHA, &c.prevTl, &c.cumOut, &c.CumCost,
		&c.cumRec, &c.inQuote, &c.prevStrategy, &c.prevBroken, &c.firstHead, &c.prevKind, &c.watched)
	if err != nil || id == nil {
		return err
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
	WHERE id = ANY($1::uuid[]) AND status = 'queued' RETURNING id
), ev AS (
	INSERT INTO job_events (job_id, level, type, message) SELECT id, 'info', 'status', 'running' FROM j
)
SELECT id::text FROM j`

// RecordLostAttempts records the deliveries of taskID before this one
// (attempts 0..retried-1) that left no trace: their worker died, maybe in the
// middle of a model call that was billed. Each is recorded once, as lost.
func (c *Claim) RecordLostAttempts(ctx context.Context, taskID string, retried int) (int, error) {
	if retried <= 0 {
		return 0, nil
	}
	tag, err := c.store.pool.Exec(ctx, `
INSERT INTO call_failures (job_id, seq, task_id, attempt, status, error_type, error, previous_response_id)
SELECT $1::uuid, $2, $3, a, 'lost', 'unknown', 'the delivery ended without a trace (worker died); a model call may have been made and billed', nullif($5, '')
FROM generate_series(0, $4 - 1) a
WHERE NOT EXISTS (SELECT 1 FROM call_failures f WHERE f.job_id = $1::uuid AND f.seq = $2 AND f.task_id = $3 AND f.attempt = a AND f.counted)`,
		c.Job.ID, c.Seq, taskID, retried, c.PrevResponseID)
	if err != nil {
		return 0, fmt.Errorf("store: record lost attempts of job %s: %w", c.Job.ID, err)
	}
	return int(tag.RowsAffected()), nil
}

// Usage is token usage as the provider reported it. Reasoning tokens are a
// part of Output, never extra.
type Usage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_tokens"`
}

// NewChunk is one model response and the decision taken after it.
type NewChunk struct {
	Content          string
	ContentSHA       string
	FinishReason     string
	RawStatus        string
	IncompleteReason string
	ResponseID       string
	TaskID           string
	Attempt          int
	Usage            Usage
	CostUSD          *float64
	CumOutput        int64    // output tokens of chunks 0..this one
	CumCost          *float64 // their cost
	CallStarted      time.Time
	Latency          time.Duration
	ShouldContinue   bool
	StopReason       string // set when !ShouldContinue
	Decision         json.RawMessage
	// DecisionNote summarizes the decision for the chunk's 'decision' event;
	// "" writes none (a routine continuation: the chunk row holds it all).
	DecisionNote string
	// Event, when set, is recorded with a stopping chunk (a warning).
	Event           *EventNote
	Strategy        string
	Prompt          string          // the continuation prompt sent ("" for none)
	MaxOutputTokens int             // the call's output budget
	ToolCalls       json.RawMessage // nil for none
	CumRecords      int64
	InQuote         bool
	StreamBroken    bool
	// ContentKind is the content type the continuation prompt was written
	// for ("" for none); later chunks reuse it instead of detecting it again.
	ContentKind string
}

// EventNote is an event written in the same statement as a chunk.
type EventNote struct {
	Level, Type, Message string
}

// ErrChunkExists means the chunk was stored by someone else, which the lock
// should make impossible; the caller treats it as a redelivery.
var ErrChunkExists = errors.New("chunk already stored")

// insertChunks stores chunks given as arrays, one element per chunk (see
// chunkRows), in one statement however many there are: Postgres spends more
// CPU setting up a statement than on inserting a row. Costs are sent as
// float8 and become numeric in Postgres: pgx's own float64-to-numeric
// encoding cost more than a percent of the pipeline's CPU. A chunk stored
// already is skipped.
const insertChunks = `INSERT INTO chunks (job_id, seq, content, content_sha, finish_reason, raw_status, incomplete_reason,
	response_id, previous_response_id, task_id, attempt, input_tokens, cached_tokens, output_tokens, reasoning_tokens,
	cost_usd, latency_ms, call_started_at, should_continue, stop_reason, decision, cum_output_tokens, cum_cost_usd,
	strategy, prompt, max_output_tokens, tool_calls, cum_records, in_quote, stream_broken, content_kind)
SELECT job_id, seq, content, content_sha, finish_reason, raw_status, nullif(incomplete_reason, ''),
	nullif(response_id, ''), nullif(previous_response_id, ''), task_id, attempt, input_tokens, cached_tokens, output_tokens, reasoning_tokens,
	cost_usd, latency_ms, call_started_at, should_continue, nullif(stop_reason, ''), decision::jsonb, cum_output_tokens, cum_cost_usd,
	strategy, nullif(prompt, ''), max_output_tokens, tool_calls::jsonb, cum_records, in_quote, stream_broken, nullif(content_kind, '')
FROM unnest($1::uuid[], $2::int4[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
	$11::int4[], $12::int8[], $13::int8[], $14::int8[], $15::int8[], $16::float8[], $17::int8[], $18::timestamptz[],
	$19::bool[], $20::text[], $21::text[], $22::int8[], $23::float8[], $24::text[], $25::text[], $26::int4[], $27::text[],
	$28::int8[], $29::bool[], $30::bool[], $31::text[])
	AS t(job_id, seq, content, content_sha, finish_reason, raw_status, incomplete_reason, response_id, previous_response_id, task_id,
	attempt, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost_usd, latency_ms, call_started_at,
	should_continue, stop_reason, decision, cum_output_tokens, cum_cost_usd, strategy, prompt, max_output_tokens, tool_calls,
	cum_records, in_quote, stream_broken, content_kind)
ON CONFLICT DO NOTHING`

// decisionRow is the chunk's 'decision' event, selected from the chunk
// insert's CTE ch ($32 its summary; none without one); the stopping and
// the noted continuing save write it.
const decisionRow = `SELECT ch.job_id, 'info' AS level, 'decision' AS type, $32::text AS message,
	jsonb_build_object('should_continue', ch.should_continue, 'decision', ch.decision->>'decision',
		'resolved_by', ch.decision->>'resolved_by', 'stop_reason', ch.stop_reason) AS data FROM ch WHERE $32::text IS NOT NULL`

// Save stores the chunk — which is also the record of its model call — and,
// when generation stops, moves the job to merging; the lock session commits
// it (together with the other chunks saved meanwhile) and only then unlocks.
// If the session was lost since the claim, the lock went with it: a save
// that finds a new session in its place still stores the chunk (the call was
// paid for; the primary key keeps a chunk once), and one that loses the
// session during its own round trip fails, so that its delivery retries.
// A continuing chunk costs one INSERT in a shared transaction. It returns the
// job's status as this claim knew it, or its new status when generation
// stopped (a cancel during the call is honored by the next claim, before any
// model call), and releases the claim.
func (c *Claim) Save(ctx context.Context, n NewChunk) (string, error) {
	defer c.Release()
	if !c.locked {
		return "", fmt.Errorf("store: save chunk %d of job %s: the claim holds no lock", c.Seq, c.Job.ID)
	}
	r := c.saveReq(n)
	err := c.sess.do(r)
	c.locked = false // the session unlocked it, or lost it
	if errors.Is(err, ErrChunkExists) {
		return "", ErrChunkExists
	}
	if err != nil {
		return "", fmt.Errorf("store: save chunk %d of job %s: %w", c.Seq, c.Job.ID, err)
	}
	return r.status, nil
}

// saveReq is the lock session's request to store n.
func (c *Claim) saveReq(n NewChunk) *lockReq {
	r := &lockReq{kind: reqSave, claim: c, done: make(chan struct{})}
	if c.watched {
		r.notify = c.Job.ID
	}
	if n.ShouldContinue && n.DecisionNote == "" {
		r.chunk = &n // a routine continuation: see routineChunksSQL
		return r
	}
	var row chunkRows
	row.add(c, &n)
	var note *string
	if n.DecisionNote != "" {
		note = &n.DecisionNote
	}
	r.sql, r.args = continueChunkSQL, append(row.args(), note, c.Job.Status)
	if !n.ShouldContinue {
		var evLevel, evType, evMsg *string
		if n.Event != nil {
			evLevel, evType, evMsg = &n.Event.Level, &n.Event.Type, &n.Event.Message
		}
		r.sql, r.args = stopChunkSQL, append(r.args[:32], evLevel, evType, evMsg)
	}
	return r
}

// routineChunksSQL stores the chunks of routine continuations — most of
// them — saved in one round trip, and returns the ones it stored; one
// missing was stored already.
const routineChunksSQL = insertChunks + ` RETURNING job_id::text, seq`

// chunkRows are chunks as insertChunks' arguments, one array per column.
type chunkRows struct {
	jobIDs, contents, shas, finishes, rawStatuses, incompletes          []string
	responseIDs, prevResponseIDs, taskIDs, stopReasons                  []string
	seqs, attempts, maxOutputs                                          []int32
	input, cached, output, reasoning, latencies, cumOutputs, cumRecords []int64
	costs, cumCosts                                                     []*float64
	started                                                             []time.Time
	decisions, strategies, prompts, kinds                               []string
	toolCalls                                                           []*string
	continues, inQuotes, broken                                         []bool
}

// add appends claim c's chunk n.
func (t *chunkRows) add(c *Claim, n *NewChunk) {
	t.jobIDs, t.seqs, t.contents, t.shas = append(t.jobIDs, c.Job.ID), append(t.seqs, int32(c.Seq)), append(t.contents, n.Content), append(t.shas, n.ContentSHA)
	t.finishes, t.rawStatuses, t.incompletes = append(t.finishes, n.FinishReason), append(t.rawStatuses, n.RawStatus), append(t.incompletes, n.IncompleteReason)
	t.responseIDs, t.prevResponseIDs, t.taskIDs = append(t.responseIDs, n.ResponseID), append(t.prevResponseIDs, c.PrevResponseID), append(t.taskIDs, n.TaskID)
	t.attempts, t.input, t.cached = append(t.attempts, int32(n.Attempt)), append(t.input, n.Usage.Input), append(t.cached, n.Usage.Cached)
	t.output, t.reasoning, t.costs = append(t.output, n.Usage.Output), append(t.reasoning, n.Usage.Reasoning), append(t.costs, n.CostUSD)
	t.latencies, t.started = append(t.latencies, n.Latency.Milliseconds()), append(t.started, n.CallStarted)
	t.continues, t.stopReasons = append(t.continues, n.ShouldContinue), append(t.stopReasons, n.StopReason)
	t.decisions, t.cumOutputs, t.cumCosts = append(t.decisions, string(n.Decision)), append(t.cumOutputs, n.CumOutput), append(t.cumCosts, n.CumCost)
	t.strategies, t.prompts, t.maxOutputs = append(t.strategies, n.Strategy), append(t.prompts, n.Prompt), append(t.maxOutputs, int32(n.MaxOutputTokens))
	var tools *string
	if n.ToolCalls != nil {
		s := string(n.ToolCalls)
		tools = &s
	}
	t.toolCalls, t.cumRecords, t.inQuotes = append(t.toolCalls, tools), append(t.cumRecords, n.CumRecords), append(t.inQuotes, n.InQuote)
	t.broken, t.kinds = append(t.broken, n.StreamBroken), append(t.kinds, n.ContentKind)
}

// args are insertChunks' arguments ($1..$31).
func (t *chunkRows) args() []any {
	return []any{t.jobIDs, t.seqs, t.contents, t.shas, t.finishes, t.rawStatuses, t.incompletes, t.responseIDs, t.prevResponseIDs,
		t.taskIDs, t.attempts, t.input, t.cached, t.output, t.reasoning, t.costs, t.latencies, t.started, t.continues, t.stopReasons,
		t.decisions, t.cumOutputs, t.cumCosts, t.strategies, t.prompts, t.maxOutputs, t.toolCalls, t.cumRecords, t.inQuotes, t.broken, t.kinds}
}

// continueChunkSQL stores a chunk after which generation goes on for a
// reason worth an event, and its decision event; it returns the job's
// status as the claim knew it ($33).
const continueChunkSQL = `WITH ch AS (` + insertChunks + ` RETURNING job_id, should_continue, stop_reason, decision
), dev AS (
	INSERT INTO job_events (job_id, seq, level, type, message, data) SELECT job_id, $2[1], level, type, message, data FROM (` + decisionRow + `) d
) SELECT $33::text FROM ch`

// stopChunkSQL stores a chunk that ends generation: the job moves to merging
// (unless it was cancelled meanwhile). One INSERT writes the chunk's events
// in order — its decision, a warning, the status change — so their ids read
// as they happened (data-modifying CTEs run in no defined order).
const stopChunkSQL = `WITH ch AS (` + insertChunks + ` RETURNING job_id, should_continue, stop_reason, decision
), j AS (
	UPDATE jobs SET status = CASE WHEN jobs.status = 'cancelled' THEN jobs.status ELSE 'merging' END,
	       stop_reason = CASE WHEN jobs.status = 'cancelled' THEN jobs.stop_reason ELSE ch.stop_reason END, updated_at = now()
	FROM ch WHERE jobs.id = ch.job_id
	RETURNING jobs.id, jobs.status, jobs.stop_reason
), ev AS (
	INSERT INTO job_events (job_id, seq, level, type, message, data)
	SELECT job_id, $2[1], level, type, message, data FROM (
		SELECT 1 AS o, d.* FROM (` + decisionRow + `) d
		UNION ALL SELECT 2, j.id, $33::text, $34::text, $35::text, NULL FROM j WHERE $33::text IS NOT NULL
		UNION ALL SELECT 3, j.id, 'info', 'status', j.status, jsonb_build_object('stop_reason', j.stop_reason) FROM j
		WHERE j.status = 'merging'
	) e ORDER BY o
)
SELECT status FROM j`

// CallFailure describes a model call attempt that produced no chunk.
type CallFailure struct {
	TaskID     string
	Attempt    int
	Counted    bool // false for a rate-limit wait, which does not count as a failed delivery
	ResponseID string
	HTTPStatus int
	ErrorType  string
	Error      string
	Usage      *Usage // when a failed response still reported usage
	CostUSD    *float64
	Started    time.Time
	Latency    time.Duration
}

// Stop ends a job's generation along with a failure: with Merge and stored
// chunks the job goes to merging, otherwise it fails.
type Stop struct {
	Reason string
	Error  string
	Merge  bool
}

// Fail records a failed attempt and, with stop, ends the job's generation,
// while still holding the lock; then it commits and releases the claim. It
// returns, with stop, the job's status. (A caller that decides by the count
// of earlier failures asks Failures first.)
func (c *Claim) Fail(ctx context.Context, f CallFailure, stop *Stop) (status string, err error) {
	defer c.Release()
	var status0 *int
	if f.HTTPStatus != 0 {
		status0 = &f.HTTPStatus
	}
	u := Usage{}
	if f.Usage != nil {
		u = *f.Usage
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`
WITH f AS (
	INSERT INTO call_failures (job_id, seq, task_id, attempt, counted, status, previous_response_id, response_id,
	                           http_status, error_type, error, input_tokens, cached_tokens, output_tokens,
	                           reasoning_tokens, cost_usd, latency_ms, started_at)
	VALUES ($1::uuid, $2, $3, $4, $5, 'failed', nullif($6, ''), nullif($7, ''), $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
)
INSERT INTO job_events (job_id, seq, level, type, message, data)
VALUES ($1::uuid, $2, 'warn', 'call_failed', $10, jsonb_build_object('error_type', $9::text, 'http_status', $8::int, 'attempt', $4::int))`,
		c.Job.ID, c.Seq, f.TaskID, f.Attempt, f.Counted, c.PrevResponseID, f.ResponseID, status0, f.ErrorType, f.Error,
		u.Input, u.Cached, u.Output, u.Reasoning, f.CostUSD, f.Latency.Milliseconds(), f.Started)
	if stop != nil {
		b.Queue(stopSQL, c.Job.ID, stop.Reason, stop.Error, stop.Merge)
	}
	b.Queue("COMMIT")
	// A pooled connection commits it (the claim's lock stays held until
	// Release, after the commit); one that fails mid-transaction is closed
	// by the pool.
	br := c.store.pool.SendBatch(ctx, b)
	_, e1 := br.Exec()
	_, e2 := br.Exec()
	var e4 error
	if stop != nil {
		e4 = br.QueryRow().Scan(&status)
		if errors.Is(e4, pgx.ErrNoRows) {
			e4 = nil // the job was no longer live (cancelled meanwhile)
		}
	}
	_, e5 := br.Exec()
	e6 := br.Close()
	if err := errors.Join(e1, e2, e4, e5, e6); err != nil {
		return "", fmt.Errorf("store: record failed call of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	return status, nil
}

// Failures counts the failed attempts at this chunk with an error type.
func (c *Claim) Failures(ctx context.Context, errorType string) (int, error) {
	var n int
	err := c.store.pool.QueryRow(ctx, `SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND seq = $2 AND status = 'failed' AND error_type = $3`,
		c.Job.ID, c.Seq, errorType).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count failed calls of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	return n, nil
}

// RecordAttempt records a paid attempt whose response is not the chunk (a
// reasoning-only reply made again with a larger budget) and keeps the claim.
func (c *Claim) RecordAttempt(ctx context.Context, f CallFailure) error {
	u := Usage{}
	if f.Usage != nil {
		u = *f.Usage
	}
	_, err := c.store.pool.Exec(ctx, `
INSERT INTO call_failures (job_id, seq, task_id, attempt, counted, status, previous_response_id, response_id,
                           http_status, error_type, error, input_tokens, cached_tokens, output_tokens,
                           reasoning_tokens, cost_usd, latency_ms, started_at)
VALUES ($1::uuid, $2, $3, $4, $5, 'failed', nullif($6, ''), nullif($7, ''), 200, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		c.Job.ID, c.Seq, f.TaskID, f.Attempt, f.Counted, c.PrevResponseID, f.ResponseID, f.ErrorType, f.Error,
		u.Input, u.Cached, u.Output, u.Reasoning, f.CostUSD, f.Latency.Milliseconds(), f.Started)
	if err != nil {
		return fmt.Errorf("store: record attempt of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	return nil
}

// totalsSQL sets a job's totals from every attempt (the llm_calls view):
// failed calls that reported usage were billed too. Lost calls have no
// known usage. $1 is the job ID.
const totalsSQL = `chunk_count = t.n, input_tokens = t.i, cached_tokens = t.ca, output_tokens = t.o,
	reasoning_tokens = t.r, cost_usd = t.c
FROM (SELECT (SELECT count(*) FROM chunks WHERE job_id = $1::uuid) AS n,
	coalesce(sum(input_tokens), 0) AS i, coalesce(sum(cached_tokens), 0) AS ca, coalesce(sum(output_tokens), 0) AS o,
	coalesce(sum(reasoning_tokens), 0) AS r, CASE WHEN bool_or(cost_usd IS NOT NULL) THEN sum(cost_usd) END AS c
	FROM llm_calls WHERE job_id = $1::uuid) t`

// stopSQL ends a live job's generation: $2 stop reason, $3 error, $4 merge.
const stopSQL = `
WITH j AS (
	UPDATE jobs SET status = CASE WHEN $4 AND EXISTS (SELECT 1 FROM chunks WHERE job_id = $1::uuid) THEN 'merging' ELSE 'failed' END,
	       stop_reason = $2, error = nullif($3, ''), updated_at = now(),
	       finished_at = CASE WHEN $4 AND EXISTS (SELECT 1 FROM chunks WHERE job_id = $1::uuid) THEN NULL ELSE now() END,
	       ` + totalsSQL + `
	WHERE id = $1::uuid AND status IN ('queued','running')
	RETURNING id, status
), ev AS (
	INSERT INTO job_events (job_id, level, type, message, data)
	SELECT id, CASE WHEN status = 'failed' THEN 'error' ELSE 'warn' END, 'status', status,
	       jsonb_build_object('stop_reason', $2::text, 'error', nullif($3, '')) FROM j
)
SELECT status FROM j`

// StopJob ends a live job's generation without a claim (the reconciler,
// when asynq gave up on its task). It returns the job's status afterwards.
func (s *Store) StopJob(ctx context.Context, jobID string, stop Stop) (string, error) {
	var status string
	err := s.pool.QueryRow(ctx, stopSQL, jobID, stop.Reason, stop.Error, stop.Merge).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		j, err := s.GetJob(ctx, jobID)
		return j.Status, err
	}
	if err != nil {
		return "", fmt.Errorf("store: stop job %s: %w", jobID, err)
	}
	return status, nil
}

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

// RecordLost records a delivery that died with its worker (seen by the
// reconciler): a call may have been made and billed.
func (s *Store) RecordLost(ctx context.Context, jobID string, seq int, taskID string, attempt int) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO call_failures (job_id, seq, task_id, attempt, status, error_type, error)
SELECT $1::uuid, $2, $3, $4, 'lost', 'unknown', 'the worker died during this delivery; a model call may have been made and billed'
WHERE NOT EXISTS (SELECT 1 FROM call_failures WHERE job_id = $1::uuid AND seq = $2 AND task_id = $3 AND attempt = $4 AND counted)`,
		jobID, seq, taskID, attempt)
	if err != nil {
		return fmt.Errorf("store: record lost attempt of job %s: %w", jobID, err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
