package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

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

// Save stores the chunk — which is also the record of its model call, so
// the call's start goes in the same transaction (see StartCall) — and,
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
		c.callID = "" // the transaction committed: the call's start is gone
		return "", ErrChunkExists
	}
	if err != nil {
		return "", fmt.Errorf("store: save chunk %d of job %s: %w", c.Seq, c.Job.ID, err)
	}
	c.callID = ""
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
