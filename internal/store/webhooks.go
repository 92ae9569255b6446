package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookEvent is a job's end event as written when the job ended (the
// jobs_webhook_event trigger, migration 11): its id is the webhook-id of
// every attempt, its body the exact bytes every attempt POSTs.
type WebhookEvent struct {
	ID          string
	JobID       string
	Type        string // job.succeeded, job.partial, job.failed, job.cancelled
	Body        []byte
	CreatedAt   time.Time
	DeliveredAt *time.Time // the first 2xx answer; nil while undelivered
	WebhookURL  *string    // the job's, read with the event
}

// GetWebhookEvent loads an event with its job's webhook URL; ErrNotFound when
// the event (or its job) is gone.
func (s *Store) GetWebhookEvent(ctx context.Context, id string) (WebhookEvent, error) {
	e := WebhookEvent{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT e.job_id::text, e.type, e.body, e.created_at, e.delivered_at, j.webhook_url
FROM webhook_events e JOIN jobs j ON j.id = e.job_id WHERE e.id = $1`, id).
		Scan(&e.JobID, &e.Type, &e.Body, &e.CreatedAt, &e.DeliveredAt, &e.WebhookURL)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookEvent{}, ErrNotFound
	}
	if err != nil {
		return WebhookEvent{}, fmt.Errorf("store: webhook event %s: %w", id, err)
	}
	return e, nil
}

// PendingWebhookEvents lists the ids of a job's events not yet delivered,
// oldest first: what a process that ended the job queues for delivery.
func (s *Store) PendingWebhookEvents(ctx context.Context, jobID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM webhook_events WHERE job_id = $1::uuid AND delivered_at IS NULL
ORDER BY created_at, id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("store: pending webhook events of job %s: %w", jobID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: pending webhook events of job %s: %w", jobID, err)
	}
	return ids, nil
}

// UndeliveredEvent names an event not yet delivered.
type UndeliveredEvent struct{ JobID, ID string }

// UndeliveredWebhookEvents lists events not yet delivered that were written
// between from and to and have had no attempt since quiet, oldest first, at
// most limit: the reconciler queues them again in case their task was lost
// (Redis lost its keys, or the process died between its commit and the
// enqueue). A task still retrying makes an attempt at least every
// WebhookRetryDelay's longest wait, so quiet is set earlier than that.
func (s *Store) UndeliveredWebhookEvents(ctx context.Context, from, to, quiet time.Time, limit int) ([]UndeliveredEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.job_id::text, e.id FROM webhook_events e
WHERE e.delivered_at IS NULL AND e.created_at >= $1 AND e.created_at < $2
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.job_id = e.job_id AND d.event_id = e.id AND d.created_at >= $3)
ORDER BY e.created_at LIMIT $4`, from, to, quiet, limit)
	if err != nil {
		return nil, fmt.Errorf("store: undelivered webhook events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (UndeliveredEvent, error) {
		var e UndeliveredEvent
		err := r.Scan(&e.JobID, &e.ID)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: undelivered webhook events: %w", err)
	}
	return out, nil
}

// LegacyWebhookEvent returns the event a webhook task queued before
// migration 11 (it names a job and a status, no event) is to deliver: the
// job's latest event of that status, or, for a job that ended before events
// were stored, one written now from the job row, with the id the task's
// earlier attempts sent (evt_<job>_<status>) and the job's finish as its
// time. ErrNotFound when the job no longer has that status (it was resumed
// or remerged since; its new ending has an event of its own).
func (s *Store) LegacyWebhookEvent(ctx context.Context, jobID, status string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `
WITH found AS (
	SELECT id FROM webhook_events WHERE job_id = $1::uuid AND type = 'job.' || $2 ORDER BY created_at DESC LIMIT 1
), made AS (
	INSERT INTO webhook_events (id, job_id, type, body, created_at)
	SELECT 'evt_' || j.id || '_' || j.status, j.id, 'job.' || j.status,
	       carryover_webhook_body(j, coalesce(j.finished_at, now())), coalesce(j.finished_at, now())
	FROM jobs j WHERE j.id = $1::uuid AND j.status = $2 AND NOT EXISTS (SELECT 1 FROM found)
	ON CONFLICT (id) DO NOTHING
	RETURNING id
)
SELECT id FROM found UNION ALL SELECT id FROM made`, jobID, status).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: legacy webhook event of job %s: %w", jobID, err)
	}
	return id, nil
}
