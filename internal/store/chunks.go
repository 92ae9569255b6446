package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClaimOutcome says what a chunk task found when it tried to claim its chunk.
type ClaimOutcome int

const (
	// Claimed: the caller holds the job's lease and may call the model.
	Claimed ClaimOutcome = iota
	// AlreadyStored: the chunk is stored (a redelivery); no model call.
	AlreadyStored
	// Leased: another delivery holds the lease and is calling the model now.
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

// Claim is the result of ClaimChunk.
type Claim struct {
	Outcome    ClaimOutcome
	Job        Job       // on Claimed the full row; otherwise at least ID, Status, NextSeq
	CallID     int64     // the llm_calls row recording this attempt (Claimed only)
	LeaseUntil time.Time // Leased: when the other holder's lease runs out
}

// ClaimChunk takes the job's lease for chunk seq and records the model call
// attempt before it happens, in one statement: an attempt is on record even
// if the worker dies mid-call, and two deliveries of one task can never both
// call the model. A lease left by a dead worker is taken over once it
// expires, and that worker's in-flight call is marked lost.
func (s *Store) ClaimChunk(ctx context.Context, jobID string, seq int, token string, ttl time.Duration, attempt int) (Claim, error) {
	var c Claim
	dest := append(jobDest(&c.Job), &c.CallID)
	err := s.pool.QueryRow(ctx, `
WITH prev AS (
	SELECT status FROM jobs WHERE id = $1::uuid
), j AS (
	UPDATE jobs SET status = 'running', lease_token = $3::uuid, lease_until = now() + $4 * interval '1 millisecond',
	       started_at = coalesce(started_at, now()), updated_at = now()
	WHERE id = $1::uuid AND next_seq = $2 AND status IN ('queued','running')
	  AND (lease_until IS NULL OR lease_until < now())
	RETURNING *
), lost AS (
	UPDATE llm_calls SET status = 'lost', finished_at = now(), error = 'worker lost its lease mid-call'
	WHERE job_id = $1::uuid AND seq = $2 AND status = 'in_flight' AND EXISTS (SELECT 1 FROM j)
), call AS (
	INSERT INTO llm_calls (job_id, seq, attempt, model, previous_response_id)
	SELECT id, $2, $5, model, last_response_id FROM j
	RETURNING id
), ev AS (
	INSERT INTO job_events (job_id, level, type, message)
	SELECT j.id, 'info', 'status', 'running' FROM j, prev WHERE prev.status = 'queued'
)
SELECT `+prefixed("j.", jobColumns)+`, call.id FROM j, call`,
		jobID, seq, token, ttl.Milliseconds(), attempt).Scan(dest...)
	if err == nil {
		c.Outcome = Claimed
		return c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Claim{}, fmt.Errorf("store: claim chunk %d of job %s: %w", seq, jobID, err)
	}
	// The slow path: say why the claim was refused.
	var leaseUntil *time.Time
	err = s.pool.QueryRow(ctx, `SELECT id::text, status, next_seq, lease_until FROM jobs WHERE id = $1::uuid`, jobID).
		Scan(&c.Job.ID, &c.Job.Status, &c.Job.NextSeq, &leaseUntil)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		c.Outcome = Missing
	case err != nil:
		return Claim{}, fmt.Errorf("store: claim chunk %d of job %s: %w", seq, jobID, err)
	case c.Job.Status != StatusQueued && c.Job.Status != StatusRunning:
		c.Outcome = JobDone
	case c.Job.NextSeq > seq:
		c.Outcome = AlreadyStored
	case c.Job.NextSeq < seq:
		c.Outcome = Ahead
	default:
		c.Outcome = Leased
		if leaseUntil != nil {
			c.LeaseUntil = *leaseUntil
		}
	}
	return c, nil
}

// RenewLease extends a held lease; it reports false when the lease was lost.
func (s *Store) RenewLease(ctx context.Context, jobID, token string, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET lease_until = now() + $3 * interval '1 millisecond'
WHERE id = $1::uuid AND lease_token = $2::uuid`, jobID, token, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("store: renew lease of job %s: %w", jobID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// CallFailure describes a model call that returned no usable response.
type CallFailure struct {
	CallID     int64
	HTTPStatus int
	ErrorType  string
	Error      string
	Latency    time.Duration
}

// FailCall records a failed attempt and releases the lease so the retry can
// claim at once. It returns how many attempts at this chunk have failed,
// this one included.
func (s *Store) FailCall(ctx context.Context, jobID, token string, seq int, f CallFailure) (int, error) {
	var status *int
	if f.HTTPStatus != 0 {
		status = &f.HTTPStatus
	}
	var failed int
	err := s.pool.QueryRow(ctx, `
WITH c AS (
	UPDATE llm_calls SET status = 'failed', http_status = $3, error_type = $4, error = $5, latency_ms = $6, finished_at = now()
	WHERE id = $2
), j AS (
	UPDATE jobs SET lease_token = NULL, lease_until = NULL, updated_at = now()
	WHERE id = $1::uuid AND lease_token = $7::uuid
), ev AS (
	INSERT INTO job_events (job_id, seq, level, type, message, data)
	VALUES ($1::uuid, $8, 'warn', 'call_failed', $5, jsonb_build_object('error_type', $4::text, 'http_status', $3::int, 'call_id', $2::bigint))
)
SELECT 1 + count(*) FROM llm_calls WHERE job_id = $1::uuid AND seq = $8 AND status = 'failed' AND id <> $2`,
		jobID, f.CallID, status, f.ErrorType, f.Error, f.Latency.Milliseconds(), token, seq).Scan(&failed)
	if err != nil {
		return 0, fmt.Errorf("store: record failed call %d: %w", f.CallID, err)
	}
	return failed, nil
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
	JobID            string
	Seq              int
	LeaseToken       string
	CallID           int64
	Content          string
	ContentSHA       string // sha256 of Content, kept on the job for the no-progress check
	FinishReason     string
	RawStatus        string
	IncompleteReason string
	ResponseID       string
	Usage            Usage
	CostUSD          *float64
	Latency          time.Duration
	ShouldContinue   bool
	StopReason       string // set when !ShouldContinue
	Decision         json.RawMessage
	// Event, when set, is recorded alongside (a warning or the stop).
	Event *EventNote
}

// EventNote is an event written in the same statement as a chunk.
type EventNote struct {
	Level, Type, Message string
}

// ErrLeaseLost is returned by SaveChunk when the caller no longer holds the
// job's lease (it expired and another delivery took over): the call is
// recorded, the chunk is not.
var ErrLeaseLost = errors.New("lease lost")

// SaveChunk stores a chunk, completes its call record, adds its usage to the
// job and moves the job on (next chunk, or merging) — one statement, one
// commit. It returns the job's status afterwards (cancelled if the job was
// cancelled during the call).
func (s *Store) SaveChunk(ctx context.Context, c NewChunk) (string, error) {
	var stop, incomplete, respID *string
	if c.StopReason != "" {
		stop = &c.StopReason
	}
	if c.IncompleteReason != "" {
		incomplete = &c.IncompleteReason
	}
	if c.ResponseID != "" {
		respID = &c.ResponseID
	}
	var evLevel, evType, evMsg *string
	if c.Event != nil {
		evLevel, evType, evMsg = &c.Event.Level, &c.Event.Type, &c.Event.Message
	}
	var status string
	err := s.pool.QueryRow(ctx, `
WITH call AS (
	UPDATE llm_calls SET status = 'succeeded', response_id = $9, http_status = 200, input_tokens = $10,
	       cached_tokens = $11, output_tokens = $12, reasoning_tokens = $13, latency_ms = $15, finished_at = now()
	WHERE id = $4
), j AS (
	UPDATE jobs SET next_seq = $2 + 1, last_response_id = $9, last_finish_reason = $6, last_chunk_sha = $22,
	       input_tokens = input_tokens + $10, cached_tokens = cached_tokens + $11,
	       output_tokens = output_tokens + $12, reasoning_tokens = reasoning_tokens + $13,
	       cost_usd = CASE WHEN $14::numeric IS NULL THEN NULL ELSE coalesce(cost_usd, 0) + $14::numeric END,
	       status = CASE WHEN status = 'cancelled' OR $16 THEN status ELSE 'merging' END,
	       stop_reason = CASE WHEN status = 'cancelled' THEN stop_reason ELSE $17 END,
	       lease_token = NULL, lease_until = NULL, updated_at = now()
	WHERE id = $1::uuid AND next_seq = $2 AND lease_token = $3::uuid
	RETURNING id, status
), ch AS (
	INSERT INTO chunks (job_id, seq, content, finish_reason, raw_status, incomplete_reason, response_id, call_id,
	                    input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost_usd, latency_ms,
	                    should_continue, stop_reason, decision)
	SELECT j.id, $2, $5, $6, $7, $8, $9, $4, $10, $11, $12, $13, $14, $15, $16, $17, $18 FROM j
), ev AS (
	INSERT INTO job_events (job_id, seq, level, type, message)
	SELECT j.id, $2, $19, $20, $21 FROM j WHERE $19::text IS NOT NULL
), ev2 AS (
	INSERT INTO job_events (job_id, seq, level, type, message, data)
	SELECT j.id, $2, 'info', 'status', 'merging', jsonb_build_object('stop_reason', $17::text) FROM j WHERE j.status = 'merging'
)
SELECT status FROM j`,
		c.JobID, c.Seq, c.LeaseToken, c.CallID, c.Content, c.FinishReason, c.RawStatus, incomplete, respID,
		c.Usage.Input, c.Usage.Cached, c.Usage.Output, c.Usage.Reasoning, c.CostUSD, c.Latency.Milliseconds(),
		c.ShouldContinue, stop, c.Decision, evLevel, evType, evMsg, c.ContentSHA).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrLeaseLost
	}
	if err != nil {
		return "", fmt.Errorf("store: save chunk %d of job %s: %w", c.Seq, c.JobID, err)
	}
	return status, nil
}

// StopJob ends generation without a new chunk (the model call failed for
// good, or a stray task found nothing to do): with stored chunks worth merging
// the job goes to merging, otherwise it fails. It releases any lease and
// returns the new status; a job no longer live is left alone.
func (s *Store) StopJob(ctx context.Context, jobID, stopReason, errMsg string, merge bool) (string, error) {
	var status string
	err := s.pool.QueryRow(ctx, `
WITH j AS (
	UPDATE jobs SET status = CASE WHEN $4 AND next_seq > 0 THEN 'merging' ELSE 'failed' END,
	       stop_reason = $2, error = nullif($3, ''), lease_token = NULL, lease_until = NULL, updated_at = now(),
	       finished_at = CASE WHEN $4 AND next_seq > 0 THEN NULL ELSE now() END
	WHERE id = $1::uuid AND status IN ('queued','running')
	RETURNING id, status
), ev AS (
	INSERT INTO job_events (job_id, level, type, message, data)
	SELECT id, CASE WHEN status = 'failed' THEN 'error' ELSE 'warn' END, 'status', status,
	       jsonb_build_object('stop_reason', $2::text, 'error', nullif($3, '')) FROM j
)
SELECT status FROM j`, jobID, stopReason, errMsg, merge).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		j, err := s.GetJob(ctx, jobID)
		return j.Status, err
	}
	if err != nil {
		return "", fmt.Errorf("store: stop job %s: %w", jobID, err)
	}
	return status, nil
}
