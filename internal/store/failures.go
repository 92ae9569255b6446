package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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
	// Lost: the call was billed but its result is gone (a background
	// response the provider no longer knows); recorded as status lost.
	Lost bool
	// CloseBackground closes the background call of ResponseID with this
	// status (RecordAttempt); "" leaves it.
	CloseBackground string
	// Sent: the request reached the provider (it was written whole, or an
	// answer came back). False for a delivery that stopped before calling
	// and for a request that never left (a refused connection). Fail
	// records it; RecordAttempt's attempts were all sent.
	Sent bool
}

// clean makes the failure's text storable: its error and response id may
// carry what a model endpoint sent (see Text).
func (f *CallFailure) clean() {
	f.Error, f.ResponseID = Text(f.Error), Text(f.ResponseID)
}

// Stop ends a job's generation along with a failure: with Merge and stored
// chunks the job goes to merging, otherwise it fails.
type Stop struct {
	Reason string
	Error  string
	Merge  bool
}

// Fail records a failed attempt — and the end of its call's start, if it
// made a call — and, with stop, ends the job's generation,
// while still holding the lock; then it commits and releases the claim. It
// returns, with stop, the job's status. (A caller that decides by the count
// of earlier failures asks Failures first.)
func (c *Claim) Fail(ctx context.Context, f CallFailure, stop *Stop) (status string, err error) {
	defer c.Release()
	f.clean()
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
	                           reasoning_tokens, cost_usd, latency_ms, started_at, request_sent, call_id)
	VALUES ($1::uuid, $2, $3, $4, $5, 'failed', nullif($6, ''), nullif($7, ''), $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
	        $18, nullif($19, '')::uuid)
)
INSERT INTO job_events (job_id, seq, level, type, message, data)
VALUES ($1::uuid, $2, 'warn', 'call_failed', $10, jsonb_build_object('error_type', $9::text, 'http_status', $8::int, 'attempt', $4::int))`,
		c.Job.ID, c.Seq, f.TaskID, f.Attempt, f.Counted, c.PrevResponseID, f.ResponseID, status0, f.ErrorType, f.Error,
		u.Input, u.Cached, u.Output, u.Reasoning, f.CostUSD, f.Latency.Milliseconds(), f.Started, f.Sent, c.callID)
	b.Queue(endCallSQL, c.callID, c.Job.ID, c.Seq)
	if f.CloseBackground != "" {
		b.Queue(`UPDATE background_calls SET status = $2, closed_at = now() WHERE response_id = $1 AND closed_at IS NULL`,
			f.ResponseID, f.CloseBackground)
	}
	if stop != nil {
		b.Queue(stopSQL, c.Job.ID, stop.Reason, Text(stop.Error), stop.Merge)
	}
	b.Queue("COMMIT")
	// A pooled connection commits it (the claim's lock stays held until
	// Release, after the commit); one that fails mid-transaction is closed
	// by the pool.
	br := c.store.pool.SendBatch(ctx, b)
	_, e1 := br.Exec()
	_, e2 := br.Exec()
	_, e7 := br.Exec()
	var e3 error
	if f.CloseBackground != "" {
		_, e3 = br.Exec()
	}
	var e4 error
	if stop != nil {
		e4 = br.QueryRow().Scan(&status)
		if errors.Is(e4, pgx.ErrNoRows) {
			e4 = nil // the job was no longer live (cancelled meanwhile)
		}
	}
	_, e5 := br.Exec()
	e6 := br.Close()
	if err := errors.Join(e1, e2, e7, e3, e4, e5, e6); err != nil {
		return "", fmt.Errorf("store: record failed call of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	c.callID = ""
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
// reasoning-only reply made again with a larger budget; a background call
// the provider forgot before it was read; a reply to a chunk another
// delivery stored first) and keeps the claim; the call's start, if it is
// this delivery's call, ends with it. An attempt with a response id is
// recorded once however often it is reported (a delivery that died after
// recording it reports it again), and not at all when it is a stored
// chunk's (two deliveries read one background call); the background call of
// that id, if any, is closed as f.CloseBackground says in the same
// statement.
func (c *Claim) RecordAttempt(ctx context.Context, f CallFailure) error {
	f.clean()
	u := Usage{}
	if f.Usage != nil {
		u = *f.Usage
	}
	status, httpStatus := "failed", 200
	if f.Lost {
		status = "lost"
	}
	if f.HTTPStatus != 0 {
		httpStatus = f.HTTPStatus
	}
	_, err := c.store.pool.Exec(ctx, `
WITH f AS (
	INSERT INTO call_failures (job_id, seq, task_id, attempt, counted, status, previous_response_id, response_id,
	                           http_status, error_type, error, input_tokens, cached_tokens, output_tokens,
	                           reasoning_tokens, cost_usd, latency_ms, started_at, request_sent, call_id)
	SELECT $1::uuid, $2, $3, $4, $5, $17, nullif($6, ''), nullif($7, ''), $18, $8, $9, $10, $11, $12, $13, $14, $15, $16,
	       true, nullif($20, '')::uuid
	WHERE $7 = '' OR NOT EXISTS (SELECT 1 FROM call_failures WHERE job_id = $1::uuid AND seq = $2 AND response_id = $7)
		AND NOT EXISTS (SELECT 1 FROM chunks WHERE job_id = $1::uuid AND seq = $2 AND response_id = $7)
), s AS (
	DELETE FROM call_starts WHERE id = nullif($20, '')::uuid RETURNING id
), l AS (
	DELETE FROM call_failures WHERE $20 <> '' AND job_id = $1::uuid AND seq = $2 AND call_id = nullif($20, '')::uuid
		AND status = 'lost' AND NOT EXISTS (SELECT 1 FROM s)
)
UPDATE background_calls SET status = $19, closed_at = now() WHERE $19 <> '' AND response_id = $7 AND closed_at IS NULL`,
		c.Job.ID, c.Seq, f.TaskID, f.Attempt, f.Counted, c.PrevResponseID, f.ResponseID, f.ErrorType, f.Error,
		u.Input, u.Cached, u.Output, u.Reasoning, f.CostUSD, f.Latency.Milliseconds(), f.Started, status, httpStatus, f.CloseBackground,
		c.callID)
	if err != nil {
		return fmt.Errorf("store: record attempt of job %s chunk %d: %w", c.Job.ID, c.Seq, err)
	}
	c.callID = ""
	if c.Background != nil && f.CloseBackground != "" && c.Background.ResponseID == f.ResponseID {
		c.Background = nil
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
	WHERE id = $1::uuid AND status || '' IN ('queued','running') -- by key (package doc)
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
	err := s.pool.QueryRow(ctx, stopSQL, jobID, stop.Reason, Text(stop.Error), stop.Merge).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		j, err := s.GetJob(ctx, jobID)
		return j.Status, err
	}
	if err != nil {
		return "", fmt.Errorf("store: stop job %s: %w", jobID, err)
	}
	return status, nil
}
