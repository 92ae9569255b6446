package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/webhook"
)

// Event is the body POSTed to a job's webhook_url when it ends. It is
// written once, in Postgres, in the transaction that ends the job
// (carryover_webhook_body, migration 11), and every attempt sends those
// bytes: this type decodes it.
type Event struct {
	Type string `json:"type"` // job.succeeded, job.partial, job.failed, job.cancelled
	// Timestamp is when the job ended: the event's time, the same on every
	// attempt (the webhook-timestamp header is the attempt's).
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData describes the job as it was when the event happened.
type EventData struct {
	ID         string   `json:"id"`
	Tenant     string   `json:"tenant"`
	Status     string   `json:"status"`
	StopReason string   `json:"stop_reason,omitempty"`
	Error      string   `json:"error,omitempty"`
	Chunks     int      `json:"chunks"`
	CostUSD    *float64 `json:"cost_usd"`
	// Metadata echoes the metadata of the job's request (null without).
	Metadata json.RawMessage `json:"metadata"`
	// Job is the API path of the job, which always answers.
	Job string `json:"job"`
	// Result is the API path of the result, there only when the job had
	// one (a cancelled or failed job without one has none to read).
	Result string `json:"result,omitempty"`
}

// notify queues the delivery of a job's stored end events that are not yet
// delivered (the one its end just wrote, and any whose task went missing).
func (h *Handlers) notify(ctx context.Context, j store.Job, status string) {
	if j.WebhookURL == nil || *j.WebhookURL == "" || !store.Terminal(status) {
		return
	}
	if err := QueueWebhooks(ctx, h.cfg.Store, h.cfg.Tasks, j.ID, status); err != nil {
		h.log.Warn("could not queue the webhook; the reconciler will", "job_id", j.ID, "err", err)
	}
}

// QueueWebhooks queues a delivery task for each of a job's events not yet
// delivered; status is the job's, for the trace.
func QueueWebhooks(ctx context.Context, st *store.Store, tasks *Dispatcher, jobID, status string) error {
	ids, err := st.PendingWebhookEvents(ctx, jobID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := tasks.Webhook(ctx, jobID, status, id); err != nil {
			return err
		}
	}
	return nil
}

// HandleWebhook delivers a stored end event, signed, and records the
// attempt; a failed delivery is retried by the queue with backoff, with the
// same id and body. An event already delivered is not sent again (a
// duplicate delivery of the task, or the reconciler's copy).
func (h *Handlers) HandleWebhook(ctx context.Context, t *asynq.Task) (err error) {
	var p WebhookPayload
	if err := decodePayload("webhook", t.Payload(), &p); err != nil {
		return err
	}
	ctx, span := startTask(ctx, h.tracer, SpanWebhook, p.Traceparent, p.JobID, AttrStatus.String(p.Status))
	defer func() { endTask(span, err) }()
	ev, err := h.webhookEvent(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		h.log.Debug("webhook: no event to deliver", "job_id", p.JobID, "status", p.Status, "event_id", p.EventID)
		return nil
	}
	if err != nil {
		return err
	}
	if ev.WebhookURL == nil || *ev.WebhookURL == "" || ev.DeliveredAt != nil {
		return nil
	}
	attempt, _ := asynq.GetRetryCount(ctx)
	d := store.WebhookDelivery{JobID: ev.JobID, EventID: ev.ID, EventType: ev.Type, Attempt: attempt}
	u, endpoint, err := h.webhookTarget(ctx, ev, &d)
	if err != nil {
		return err
	}
	if err := h.post(ctx, u, endpoint, ev.ID, ev.Body, &d); err != nil {
		return fmt.Errorf("webhook of job %s: %w: %w", ev.JobID, err, asynq.SkipRetry)
	}
	if d.HTTPStatus != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(d.HTTPStatus))
	}
	err = deliveryError(d)
	if err != nil {
		d.Error = err.Error()
		h.breaker.Failure(endpoint)
	} else {
		h.breaker.Success(endpoint)
	}
	if rerr := h.cfg.Store.RecordWebhook(context.WithoutCancel(ctx), d); rerr != nil {
		return rerr
	}
	if err != nil {
		h.log.Warn("webhook delivery failed; will retry", "job_id", ev.JobID, "event_id", ev.ID, "attempt", attempt, "err", err)
		return fmt.Errorf("webhook of job %s: %w", ev.JobID, err)
	}
	h.log.Info("webhook delivered", "job_id", ev.JobID, "event", ev.Type, "event_id", ev.ID, "attempt", attempt)
	return nil
}

// webhookEvent loads the event a task delivers. A task queued before events
// were stored names a status instead: its event is the job's latest of
// that status, or one written now from the job row (LegacyWebhookEvent).
func (h *Handlers) webhookEvent(ctx context.Context, p WebhookPayload) (store.WebhookEvent, error) {
	id := p.EventID
	if id == "" {
		var err error
		if id, err = h.cfg.Store.LegacyWebhookEvent(ctx, p.JobID, p.Status); err != nil {
			return store.WebhookEvent{}, err
		}
	}
	return h.cfg.Store.GetWebhookEvent(ctx, id)
}

// webhookTarget checks that an event may be sent to its job's URL now and
// returns the URL and its endpoint (for the breaker). When it may not, the
// attempt is recorded and the error says whether the queue retries it.
func (h *Handlers) webhookTarget(ctx context.Context, ev store.WebhookEvent, d *store.WebhookDelivery) (*url.URL, string, error) {
	if len(h.cfg.WebhookSecret) == 0 {
		d.Error = "no signing secret configured (CARRYOVER_WEBHOOK_SECRET); events are never sent unsigned"
		_ = h.cfg.Store.RecordWebhook(ctx, *d)
		return nil, "", fmt.Errorf("%s: %w", d.Error, asynq.SkipRetry)
	}
	// What the URL says is checked again here: the job may predate the
	// policy, or have been enqueued where another allow-list applied.
	err := h.cfg.Webhooks.Policy.CheckURL(*ev.WebhookURL)
	var u *url.URL
	if err == nil {
		u, err = url.Parse(*ev.WebhookURL) // parses: CheckURL parsed it
	}
	if err != nil {
		d.Error = "webhook_url " + err.Error()
		_ = h.cfg.Store.RecordWebhook(ctx, *d)
		h.log.Warn("webhook refused; not retried", "job_id", ev.JobID, "err", d.Error)
		return nil, "", fmt.Errorf("webhook of job %s: %s: %w", ev.JobID, d.Error, asynq.SkipRetry)
	}
	endpoint := egress.Endpoint(u)
	if err := h.breaker.Allow(endpoint); err != nil {
		// Failed fast, on record, and retried on the queue's schedule.
		d.Error = err.Error()
		if rerr := h.cfg.Store.RecordWebhook(ctx, *d); rerr != nil {
			return nil, "", rerr
		}
		h.log.Warn("webhook not sent; will retry", "job_id", ev.JobID, "attempt", d.Attempt, "err", err)
		return nil, "", fmt.Errorf("webhook of job %s: %w", ev.JobID, err)
	}
	return u, endpoint, nil
}

// post sends one signed event to u and notes the answer's status and the
// latency in d; a transport failure is d.Error. It returns an error only for
// a request that cannot be built, which no retry mends (recorded in d).
func (h *Handlers) post(ctx context.Context, u *url.URL, endpoint, eventID string, body []byte, d *store.WebhookDelivery) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		d.Error = err.Error()
		_ = h.cfg.Store.RecordWebhook(ctx, *d)
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "carryover-webhooks")
	// The webhook-timestamp header is the attempt's (Standard Webhooks:
	// receivers refuse one older than their tolerance, against replays);
	// the body's own timestamp is the event's.
	webhook.SetHeaders(req.Header, h.cfg.WebhookSecret, eventID, time.Now(), body)
	// With tracing on, the receiver can join the job's trace.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	start := time.Now()
	resp, err := h.webhooks.Do(req)
	d.Latency = time.Since(start)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// A *url.Error quotes the whole URL, whose path or query may hold
			// the receiver's token: name the endpoint only.
			err = fmt.Errorf("%s %s: %w", ue.Op, endpoint, ue.Err)
		}
		d.Error = err.Error()
		return nil
	}
	// The answer's body is not wanted: read a little of it (so the
	// connection can be reused) within the client's timeout, drop it.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	d.HTTPStatus = resp.StatusCode
	d.Delivered = resp.StatusCode >= 200 && resp.StatusCode < 300
	return nil
}

// deliveryError says why a sent event was not delivered, or nil.
func deliveryError(d store.WebhookDelivery) error {
	switch {
	case d.Delivered:
		return nil
	case d.Error != "":
		return errors.New(d.Error)
	case d.HTTPStatus >= 300 && d.HTTPStatus < 400:
		return fmt.Errorf("receiver answered %d; redirects are not followed", d.HTTPStatus)
	default:
		return fmt.Errorf("receiver answered %d", d.HTTPStatus)
	}
}
