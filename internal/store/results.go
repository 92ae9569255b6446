package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Chunk is a stored chunk row (and the record of the call that made it).
type Chunk struct {
	Seq              int             `json:"seq"`
	Content          string          `json:"-"`
	Size             int             `json:"size"`
	FinishReason     string          `json:"finish_reason"`
	RawStatus        string          `json:"raw_status"`
	IncompleteReason *string         `json:"incomplete_reason,omitempty"`
	ResponseID       *string         `json:"response_id,omitempty"`
	TaskID           *string         `json:"task_id,omitempty"`
	Attempt          int             `json:"attempt"`
	Usage            Usage           `json:"usage"`
	CostUSD          *float64        `json:"cost_usd"`
	LatencyMS        int64           `json:"latency_ms"`
	ShouldContinue   bool            `json:"should_continue"`
	StopReason       *string         `json:"stop_reason,omitempty"`
	ResolvedBy       string          `json:"resolved_by,omitempty"` // the criterion that decided, from Decision
	Decision         json.RawMessage `json:"decision"`
	CreatedAt        time.Time       `json:"created_at"`
	Strategy         string          `json:"strategy"`
	Prompt           string          `json:"prompt,omitempty"` // the continuation prompt sent ("" for none)
	MaxOutputTokens  *int            `json:"max_output_tokens,omitempty"`
	ToolCalls        json.RawMessage `json:"tool_calls,omitempty"`
	StreamBroken     bool            `json:"stream_broken,omitempty"`
}

// ChunkFields picks what Chunks reads besides every chunk's figures.
type ChunkFields int

const (
	// ChunkDecisions reads each chunk's whole decision (status pages), not its text.
	ChunkDecisions ChunkFields = iota
	// ChunkTexts reads each chunk's text (merges, transcripts), not its whole
	// decision, which they never use: rendering a 40-chunk job's decisions
	// as JSON text took half or more of the read's time in Postgres.
	ChunkTexts
)

// chunksSQL reads a job's chunks in order, with the fields asked for. A
// chunk's cost is read exactly, in units of 1e-8 USD (see usd8): both its
// float and the job's totals derive from that.
func chunksSQL(fields ChunkFields) string {
	content, decision := "''", "decision"
	if fields == ChunkTexts {
		content, decision = "content", "NULL::jsonb"
	}
	return `SELECT seq, ` + content + `, length(content), finish_reason, raw_status, incomplete_reason,
	response_id, task_id, attempt, input_tokens, cached_tokens, output_tokens, reasoning_tokens, (cost_usd * 100000000)::int8,
	latency_ms, should_continue, stop_reason, coalesce(decision->>'resolved_by', ''), ` + decision + `, created_at, strategy, coalesce(prompt, ''),
	max_output_tokens, tool_calls, stream_broken
FROM chunks WHERE job_id = $1::uuid ORDER BY seq`
}

// Chunks loads a job's chunks in order, with the fields asked for.
func (s *Store) Chunks(ctx context.Context, jobID string, fields ChunkFields) ([]Chunk, error) {
	rows, err := s.pool.Query(ctx, chunksSQL(fields), jobID)
	if err != nil {
		return nil, fmt.Errorf("store: chunks of job %s: %w", jobID, err)
	}
	chunks, _, err := collectChunks(rows)
	if err != nil {
		return nil, fmt.Errorf("store: chunks of job %s: %w", jobID, err)
	}
	return chunks, nil
}

// collectChunks scans the rows of chunksSQL, and sums their usage and cost
// as it goes (the chunks' share of the job's totals).
func collectChunks(rows pgx.Rows) ([]Chunk, JobTotals, error) {
	defer rows.Close()
	var (
		chunks []Chunk
		t      JobTotals
		cost   pgtype.Int8
	)
	for rows.Next() {
		var c Chunk
		err := rows.Scan(&c.Seq, &c.Content, &c.Size, &c.FinishReason, &c.RawStatus, &c.IncompleteReason, &c.ResponseID,
			&c.TaskID, &c.Attempt, &c.Usage.Input, &c.Usage.Cached, &c.Usage.Output, &c.Usage.Reasoning, &cost,
			&c.LatencyMS, &c.ShouldContinue, &c.StopReason, &c.ResolvedBy, rawJSON(&c.Decision), &c.CreatedAt, &c.Strategy, &c.Prompt,
			&c.MaxOutputTokens, rawJSON(&c.ToolCalls), &c.StreamBroken)
		if err != nil {
			return nil, JobTotals{}, err
		}
		if cost.Valid {
			f := usd8(cost.Int64).float()
			c.CostUSD = &f
		}
		t.add(c.Usage, cost)
		chunks = append(chunks, c)
	}
	if err := rows.Err(); err != nil {
		return nil, JobTotals{}, err
	}
	t.Chunks = len(chunks)
	return chunks, t, nil
}

// Result is a stored merged document.
type Result struct {
	JobID        string
	PrunedAt     *time.Time
	Content      string
	Metadata     json.RawMessage
	CostUSD      *float64
	MergeSuccess bool
	MergeError   *string
	CreatedAt    time.Time
}

// SaveResult stores the merged document and moves the job from merging to
// its final status, with the totals the merge read (see LoadMerge), in one
// statement. A repeated merge (a redelivered merge task) overwrites the same
// row with the same content. The totals are the merge's, not summed again
// here: a merging job gains no chunk, and summing the llm_calls view again
// was most of this statement's time.
func (s *Store) SaveResult(ctx context.Context, r Result, finalStatus, errMsg string, t JobTotals) error {
	_, err := s.pool.Exec(ctx, saveResultSQL,
		r.JobID, r.Content, r.Metadata, r.CostUSD, r.MergeSuccess, r.MergeError, finalStatus, errMsg,
		t.Chunks, t.Usage.Input, t.Usage.Cached, t.Usage.Output, t.Usage.Reasoning, t.cost)
	if err != nil {
		return fmt.Errorf("store: save result of job %s: %w", r.JobID, err)
	}
	return nil
}

// saveResultSQL is SaveResult's statement ($1 the job, $7 its final
// status).
const saveResultSQL = `WITH res AS (
	INSERT INTO job_results (job_id, content, metadata, cost_usd, merge_success, merge_error)
	VALUES ($1::uuid, $2, $3, $4, $5, $6)
	ON CONFLICT (job_id) DO UPDATE SET content = EXCLUDED.content, metadata = EXCLUDED.metadata,
	    cost_usd = EXCLUDED.cost_usd, merge_success = EXCLUDED.merge_success, merge_error = EXCLUDED.merge_error,
	    updated_at = now()
), j AS (
	UPDATE jobs SET status = $7, error = coalesce(nullif($8, ''), error), finished_at = now(), updated_at = now(),
	       chunk_count = $9, input_tokens = $10, cached_tokens = $11, output_tokens = $12, reasoning_tokens = $13,
	       cost_usd = $14::int8 * 0.00000001
	WHERE id = $1::uuid AND status || '' = 'merging' -- by key (package doc)
	RETURNING id
)
INSERT INTO job_events (job_id, level, type, message, data)
SELECT id, CASE $7 WHEN 'succeeded' THEN 'info' WHEN 'partial' THEN 'warn' ELSE 'error' END, 'status', $7,
       jsonb_build_object('merge_success', $5::bool, 'error', nullif($8, '')) FROM j`

// GetResult loads a job's merged document.
func (s *Store) GetResult(ctx context.Context, jobID string) (Result, error) {
	r := Result{JobID: jobID}
	err := s.pool.QueryRow(ctx, `SELECT content, metadata, cost_usd::float8, merge_success, merge_error, created_at, pruned_at
FROM job_results WHERE job_id = $1::uuid`, jobID).Scan(&r.Content, &r.Metadata, &r.CostUSD, &r.MergeSuccess, &r.MergeError, &r.CreatedAt, &r.PrunedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, ErrNotFound
	}
	if err != nil {
		return Result{}, fmt.Errorf("store: result of job %s: %w", jobID, err)
	}
	return r, nil
}

// CallStats counts a job's model call attempts by outcome (every attempt,
// failed and lost ones included, because each may have cost money).
type CallStats struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Lost      int `json:"lost"`
}

// CallStats counts a job's model call attempts.
func (s *Store) CallStats(ctx context.Context, jobID string) (CallStats, error) {
	var c CallStats
	err := s.pool.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM chunks WHERE job_id = $1::uuid),
	count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'lost')
FROM call_failures WHERE job_id = $1::uuid`, jobID).Scan(&c.Succeeded, &c.Failed, &c.Lost)
	if err != nil {
		return c, fmt.Errorf("store: call stats of job %s: %w", jobID, err)
	}
	c.Total = c.Succeeded + c.Failed + c.Lost
	return c, nil
}

// Totals sums a job's usage and cost over every attempt (the llm_calls view):
// failed calls that reported usage were billed too. cost is nil when no
// attempt has a price.
func (s *Store) Totals(ctx context.Context, jobID string) (u Usage, cost *float64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(input_tokens), 0), coalesce(sum(cached_tokens), 0),
	coalesce(sum(output_tokens), 0), coalesce(sum(reasoning_tokens), 0),
	CASE WHEN bool_or(cost_usd IS NOT NULL) THEN sum(cost_usd)::float8 END
FROM llm_calls WHERE job_id = $1::uuid`, jobID).Scan(&u.Input, &u.Cached, &u.Output, &u.Reasoning, &cost)
	if err != nil {
		err = fmt.Errorf("store: totals of job %s: %w", jobID, err)
	}
	return u, cost, err
}

// Prune removes the text of chunks and results of jobs that finished before
// before, keeping every figure (tokens, cost, statuses, metadata), at most
// limit jobs per call. It returns how many jobs it pruned.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
WITH j AS (
	SELECT id FROM jobs
	WHERE status IN ('succeeded','partial','failed','cancelled') AND finished_at < $1
	  AND (EXISTS (SELECT 1 FROM chunks WHERE job_id = jobs.id AND pruned_at IS NULL)
	    OR EXISTS (SELECT 1 FROM job_results WHERE job_id = jobs.id AND pruned_at IS NULL))
	ORDER BY finished_at LIMIT $2
), c AS (
	UPDATE chunks SET content = '', pruned_at = now() WHERE job_id IN (SELECT id FROM j) AND pruned_at IS NULL
), r AS (
	UPDATE job_results SET content = '', pruned_at = now() WHERE job_id IN (SELECT id FROM j) AND pruned_at IS NULL
), ev AS (
	INSERT INTO job_events (job_id, level, type, message) SELECT id, 'info', 'retention', 'content removed by retention' FROM j
), w AS (
	DELETE FROM job_watchers WHERE since < now() - interval '1 day' -- left by a process that died mid-stream
)
SELECT count(*) FROM j`, before, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: prune: %w", err)
	}
	return n, nil
}
