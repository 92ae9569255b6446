package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Job statuses. queued, running and merging are live; the rest are terminal.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusMerging   = "merging"
	StatusSucceeded = "succeeded"
	StatusPartial   = "partial"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Statuses lists every job status, live ones first.
func Statuses() []string {
	return []string{StatusQueued, StatusRunning, StatusMerging, StatusSucceeded, StatusPartial, StatusFailed, StatusCancelled}
}

// Terminal reports whether a job in status s will never change again.
func Terminal(s string) bool {
	switch s {
	case StatusSucceeded, StatusPartial, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// ErrUnknownTenant is returned for a job of a tenant that does not exist.
var ErrUnknownTenant = errors.New("unknown tenant")

// ErrIdempotencyConflict is returned when an idempotency key is reused with a
// different request.
var ErrIdempotencyConflict = errors.New("idempotency key already used with a different request")

// NewJob is a validated request ready to be stored.
type NewJob struct {
	ID              string
	TenantID        string
	Model           string
	Format          string
	Instructions    string
	Input           json.RawMessage
	MaxOutputTokens int
	Continuation    json.RawMessage
	Metadata        json.RawMessage // nil when the caller sent none
	IdempotencyKey  string          // "" for none
	RequestHash     string
	WebhookURL      string          // "" for none
	Options         json.RawMessage // tools, json_schema, stream; nil for none
	// Quota, when set, is checked before the insert, in the same
	// transaction (see insertWithin); nil checks none.
	Quota *Quota
}

// Job is a row of the jobs table.
type Job struct {
	ID              string
	TenantID        string
	Status          string
	Model           string
	Format          string
	Instructions    string
	Input           json.RawMessage
	MaxOutputTokens int
	Continuation    json.RawMessage
	Metadata        json.RawMessage
	IdempotencyKey  *string
	WebhookURL      *string
	StopReason      *string
	Error           *string
	ChunkCount      int // final totals: written when generation stops
	InputTokens     int64
	CachedTokens    int64
	OutputTokens    int64
	ReasoningTokens int64
	CostUSD         *float64
	CreatedAt       time.Time
	UpdatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	ActiveMS        int64 // time of earlier executions, before resumes
	Options         json.RawMessage
}

const jobColumns = `id::text, tenant_id, status, model, format, instructions, input, max_output_tokens, continuation,
	metadata, idempotency_key, webhook_url, stop_reason, error, chunk_count, input_tokens, cached_tokens, output_tokens,
	reasoning_tokens, cost_usd::float8, created_at, updated_at, started_at, finished_at, active_ms, options`

// rawJSON scans a json or jsonb column into m as the bytes Postgres sent:
// pgx would otherwise run json.Unmarshal into the RawMessage, scanning the
// text again only to check what Postgres already guarantees is valid JSON.
func rawJSON(m *json.RawMessage) *[]byte { return (*[]byte)(m) }

func jobDest(j *Job) []any {
	return []any{&j.ID, &j.TenantID, &j.Status, &j.Model, &j.Format, &j.Instructions, rawJSON(&j.Input), &j.MaxOutputTokens,
		rawJSON(&j.Continuation), rawJSON(&j.Metadata), &j.IdempotencyKey, &j.WebhookURL, &j.StopReason, &j.Error, &j.ChunkCount,
		&j.InputTokens, &j.CachedTokens, &j.OutputTokens, &j.ReasoningTokens, &j.CostUSD,
		&j.CreatedAt, &j.UpdatedAt, &j.StartedAt, &j.FinishedAt, &j.ActiveMS, rawJSON(&j.Options)}
}

// InsertJob stores a new job in status queued. With an idempotency key that
// was used before it returns the existing job and created=false, or
// ErrIdempotencyConflict when the earlier request differs. With n.Quota it
// returns a *QuotaError, storing nothing, when the tenant is at a quota.
func (s *Store) InsertJob(ctx context.Context, n NewJob) (job Job, created bool, err error) {
	var key *string
	if n.IdempotencyKey != "" {
		key = &n.IdempotencyKey
	}
	if n.TenantID == "" {
		n.TenantID = "default"
	}
	var meta, opts any
	if len(n.Metadata) > 0 {
		meta = n.Metadata
	}
	if len(n.Options) > 0 {
		opts = n.Options
	}
	if n.Quota != nil {
		err = insertWithin(ctx, s.pool, n, key, meta, opts, &job)
	} else {
		err = insertJob(ctx, s.pool, n, key, meta, opts, &job)
	}
	if err == nil {
		return job, true, nil
	}
	var qe *QuotaError
	if errors.As(err, &qe) || errors.Is(err, ErrUnknownTenant) {
		return Job{}, false, err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" && pgErr.ConstraintName == "jobs_tenant_id_fkey" {
		return Job{}, false, ErrUnknownTenant
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Job{}, false, fmt.Errorf("store: insert job: %w", err)
	}
	var hash string
	dest := append(jobDest(&job), &hash)
	err = s.pool.QueryRow(ctx, `SELECT `+jobColumns+`, request_hash FROM jobs WHERE tenant_id = $2 AND idempotency_key = $1`,
		key, n.TenantID).Scan(dest...)
	if err != nil {
		return Job{}, false, fmt.Errorf("store: load job for idempotency key: %w", err)
	}
	if hash != n.RequestHash {
		return Job{}, false, ErrIdempotencyConflict
	}
	return job, false, nil
}

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// insertJob inserts n with its "queued" event; pgx.ErrNoRows when its
// idempotency key is taken.
func insertJob(ctx context.Context, q queryRower, n NewJob, key *string, meta, opts any, job *Job) error {
	return q.QueryRow(ctx, `
WITH j AS (
	INSERT INTO jobs (id, model, format, instructions, input, max_output_tokens, continuation, metadata,
	                  idempotency_key, request_hash, tenant_id, webhook_url, options)
	VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, nullif($12, ''), coalesce($13::jsonb, '{}'))
	ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
	RETURNING *
), ev AS (
	INSERT INTO job_events (job_id, level, type, message)
	SELECT id, 'info', 'status', 'queued' FROM j
)
SELECT `+jobColumns+` FROM j`,
		n.ID, n.Model, n.Format, n.Instructions, n.Input, n.MaxOutputTokens, n.Continuation, meta, key,
		n.RequestHash, n.TenantID, n.WebhookURL, opts).Scan(jobDest(job)...)
}

// GetJob loads one job.
func (s *Store) GetJob(ctx context.Context, id string) (Job, error) {
	var j Job
	err := s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1::uuid`, id).Scan(jobDest(&j)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", id, err)
	}
	return j, nil
}

// Cancel moves a live job to cancelled. It reports whether the job changed;
// a job already terminal is left alone.
func (s *Store) Cancel(ctx context.Context, id string) (Job, bool, error) {
	var changed bool
	err := s.pool.QueryRow(ctx, `
WITH j AS (
	UPDATE jobs SET status = 'cancelled', stop_reason = 'user_requested', finished_at = now(), updated_at = now(),
	       `+totalsSQL+`
	WHERE id = $1::uuid AND status || '' IN ('queued','running','merging') -- by key (package doc)
	RETURNING id
), ev AS (
	INSERT INTO job_events (job_id, level, type, message) SELECT id, 'info', 'status', 'cancelled' FROM j
)
SELECT EXISTS (SELECT 1 FROM j)`, id).Scan(&changed)
	if err != nil {
		return Job{}, false, fmt.Errorf("store: cancel job %s: %w", id, err)
	}
	j, err := s.GetJob(ctx, id)
	return j, changed, err
}

// StaleJob is a live job that has made no progress for a while.
type StaleJob struct {
	ID      string
	Status  string
	NextSeq int // chunks stored: the next chunk to make
}

// StaleJobs lists live jobs with no progress (status change, chunk or failed
// attempt) since before, oldest first.
func (s *Store) StaleJobs(ctx context.Context, before time.Time, limit int) ([]StaleJob, error) {
	rows, err := s.pool.Query(ctx, `
SELECT j.id::text, j.status, coalesce(c.seq + 1, 0) FROM jobs j
LEFT JOIN LATERAL (SELECT seq, created_at FROM chunks WHERE job_id = j.id ORDER BY seq DESC LIMIT 1) c ON true
LEFT JOIN LATERAL (SELECT max(finished_at) AS at FROM call_failures WHERE job_id = j.id) f ON true
WHERE j.status IN ('queued','running','merging')
  AND greatest(j.updated_at, c.created_at, f.at) < $1
ORDER BY j.created_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("store: stale jobs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaleJob, error) {
		var j StaleJob
		err := r.Scan(&j.ID, &j.Status, &j.NextSeq)
		return j, err
	})
}

// AddEvent records an event in a job's history.
func (s *Store) AddEvent(ctx context.Context, jobID string, seq *int, level, typ, msg string, data any) error {
	var raw []byte
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return fmt.Errorf("store: encode event data: %w", err)
		}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO job_events (job_id, seq, level, type, message, data) VALUES ($1::uuid, $2, $3, $4, $5, $6)`,
		jobID, seq, level, typ, msg, raw)
	if err != nil {
		return fmt.Errorf("store: add event: %w", err)
	}
	return nil
}

// Event is a row of job_events.
type Event struct {
	ID        int64           `json:"id"`
	Seq       *int            `json:"seq,omitempty"`
	Level     string          `json:"level"`
	Type      string          `json:"type"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// Events lists a job's events after the given id, oldest first.
func (s *Store) Events(ctx context.Context, jobID string, afterID int64) ([]Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, seq, level, type, message, data, created_at FROM job_events
WHERE job_id = $1::uuid AND id > $2 ORDER BY id`, jobID, afterID)
	if err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.ID, &e.Seq, &e.Level, &e.Type, &e.Message, &e.Data, &e.CreatedAt)
		return e, err
	})
}

// FailJob ends a live job as failed with an error.
func (s *Store) FailJob(ctx context.Context, id, errMsg string) error {
	_, err := s.pool.Exec(ctx, `
WITH j AS (
	UPDATE jobs SET status = 'failed', error = $2, finished_at = now(), updated_at = now(), `+totalsSQL+`
	WHERE id = $1::uuid AND status || '' IN ('queued','running','merging') -- by key (package doc)
	RETURNING id
)
INSERT INTO job_events (job_id, level, type, message, data)
SELECT id, 'error', 'status', 'failed', jsonb_build_object('error', $2::text) FROM j`, id, errMsg)
	if err != nil {
		return fmt.Errorf("store: fail job %s: %w", id, err)
	}
	return nil
}

// Remerge moves a terminal job that has chunks back to merging. It reports
// whether it did; ErrNotFound when there is no such job. With a quota, a
// tenant at its jobs in flight gets a *QuotaError.
func (s *Store) Remerge(ctx context.Context, id string, quota *Quota) (bool, error) {
	var changed bool
	var err error
	remerge := func(q queryRower) error {
		return q.QueryRow(ctx, `
WITH j AS (
	UPDATE jobs SET status = 'merging', finished_at = NULL, updated_at = now()
	WHERE id = $1::uuid AND status || '' IN ('succeeded','partial','failed','cancelled') -- by key (package doc)
	  AND EXISTS (SELECT 1 FROM chunks WHERE job_id = $1::uuid)
	RETURNING id
), ev AS (
	INSERT INTO job_events (job_id, level, type, message) SELECT id, 'info', 'status', 'merging' FROM j
)
SELECT EXISTS (SELECT 1 FROM j), EXISTS (SELECT 1 FROM jobs WHERE id = $1::uuid)`, id).Scan(&changed, new(bool))
	}
	if quota == nil {
		err = remerge(s.pool)
	} else {
		err = s.withinQuota(ctx, id, *quota, false, func(tx pgx.Tx) error { return remerge(tx) })
	}
	var qe *QuotaError
	if errors.As(err, &qe) || errors.Is(err, ErrNotFound) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("store: remerge job %s: %w", id, err)
	}
	if !changed {
		if _, err := s.GetJob(ctx, id); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// ResumableStops returns the stop reasons a job can be resumed from: limits,
// budgets and guards that new settings can raise, errors a new error policy
// can retry, and a cancel. Each call returns a new slice, so no caller can
// change the set for the others.
func ResumableStops() []string {
	return []string{"steps_limit_reached", "token_limit_reached", "cost_limit_reached",
		"time_limit_reached", "retry_limit_reached", "user_requested", "error_forbade", "guard_forbade"}
}

// Resume puts a job stopped by one of ResumableStops back to running with new
// continuation settings, starting a new execution (its time limit counts from
// now; the time of the earlier one is kept in active_ms). It returns the next
// chunk to make, and false when the job cannot be resumed. With a quota, a
// tenant at a quota gets a *QuotaError.
func (s *Store) Resume(ctx context.Context, id string, continuation json.RawMessage, quota *Quota) (nextSeq int, ok bool, err error) {
	resume := func(q queryRower) error {
		return q.QueryRow(ctx, `
WITH j AS (
	UPDATE jobs SET status = 'running', continuation = $2, stop_reason = NULL, error = NULL,
	       active_ms = active_ms + coalesce((extract(epoch FROM coalesce(finished_at, now()) - started_at) * 1000)::bigint, 0),
	       started_at = now(), finished_at = NULL, updated_at = now()
	WHERE id = $1::uuid AND status || '' IN ('partial','failed','cancelled') AND stop_reason = ANY($3)
	RETURNING id
), ev AS (
	INSERT INTO job_events (job_id, level, type, message, data) SELECT id, 'info', 'status', 'running', jsonb_build_object('resumed', true) FROM j
)
SELECT (SELECT coalesce(max(seq) + 1, 0) FROM chunks WHERE job_id = $1::uuid) FROM j`, id, continuation, ResumableStops()).Scan(&nextSeq)
	}
	if quota == nil {
		err = resume(s.pool)
	} else {
		err = s.withinQuota(ctx, id, *quota, true, func(tx pgx.Tx) error { return resume(tx) })
	}
	var qe *QuotaError
	if errors.As(err, &qe) || errors.Is(err, ErrNotFound) {
		return 0, false, err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = s.GetJob(ctx, id)
		return 0, false, err
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: resume job %s: %w", id, err)
	}
	return nextSeq, true, nil
}

// CountByStatus counts jobs per status.
func (s *Store) CountByStatus(ctx context.Context) (map[string]int64, error) {
	return s.countBy(ctx, "jobs", `SELECT status, count(*) FROM jobs GROUP BY status`)
}

// countBy reads a count per key (sql selects the key and its count).
func (s *Store) countBy(ctx context.Context, what, sql string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("store: count %s: %w", what, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			return nil, fmt.Errorf("store: count %s: %w", what, err)
		}
		out[key] = n
	}
	return out, rows.Err()
}

// WebhookDelivery is one attempt to deliver a job's event.
type WebhookDelivery struct {
	JobID, EventID, EventType string
	Attempt                   int
	HTTPStatus                int
	Error                     string
	Latency                   time.Duration
	Delivered                 bool
}

// RecordWebhook records a delivery attempt; a delivered one marks its event
// delivered (webhook_events.delivered_at), so that a later delivery of the
// same task sends nothing.
func (s *Store) RecordWebhook(ctx context.Context, d WebhookDelivery) error {
	var status *int
	if d.HTTPStatus != 0 {
		status = &d.HTTPStatus
	}
	_, err := s.pool.Exec(ctx, `WITH e AS (
	UPDATE webhook_events SET delivered_at = now() WHERE $8 AND id = $2 AND delivered_at IS NULL
)
INSERT INTO webhook_deliveries (job_id, event_id, event_type, attempt, http_status, error, latency_ms, delivered)
VALUES ($1::uuid, $2, $3, $4, $5, nullif($6, ''), $7, $8)`, d.JobID, d.EventID, d.EventType, d.Attempt, status, d.Error,
		d.Latency.Milliseconds(), d.Delivered)
	if err != nil {
		return fmt.Errorf("store: record webhook delivery: %w", err)
	}
	return nil
}

// Listen calls changed whenever a job's chunks or events change, until ctx
// ends. It holds no connection: see Watch.
func (s *Store) Listen(ctx context.Context, jobID string, changed func()) error {
	sub, err := s.Watch(ctx, jobID)
	if err != nil {
		return fmt.Errorf("store: listen: %w", err)
	}
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
			changed()
		}
	}
}

// JobTenant returns the tenant a job belongs to (one indexed read of one
// column, for access checks).
func (s *Store) JobTenant(ctx context.Context, id string) (string, error) {
	var t string
	err := s.pool.QueryRow(ctx, `SELECT tenant_id FROM jobs WHERE id = $1::uuid`, id).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: tenant of job %s: %w", id, err)
	}
	return t, nil
}

// withinQuota runs do on job id under its tenant's quota (see underQuota).
func (s *Store) withinQuota(ctx context.Context, id string, q Quota, spend bool, do func(pgx.Tx) error) error {
	tenant, err := s.JobTenant(ctx, id)
	if err != nil {
		return err
	}
	return underQuota(ctx, s.pool, tenant, q, spend, nil, do)
}
