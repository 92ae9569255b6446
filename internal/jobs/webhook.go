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

// Event is the body POSTed to a job's webhook_url when it ends.
type Event struct {
	Type      string    `json:"type"` // job.succeeded, job.partial, job.failed, job.cancelled
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData describes the job.
type EventData struct {
	ID         string   `json:"id"`
	Tenant     string   `json:"tenant"`
	Status     string   `json:"status"`
	StopReason string   `json:"stop_reason,omitempty"`
	Error      string   `json:"error,omitempty"`
	Chunks     int      `json:"chunks"`
	CostUSD    *float64 `json:"cost_usd"`
	Result     string   `json:"result"` // the API path of the result
}

// notify queues a job's end event when it has a webhook.
func (h *Handlers) notify(ctx context.Context, j store.Job, status string) {
	if j.WebhookURL == nil || *j.WebhookURL == "" || !store.Terminal(status) {
		return
	}
	if err := h.cfg.Tasks.Webhook(ctx, j.ID, status); err != nil {
		h.log.Warn("could not queue the webhook", "job_id", j.ID, "err", err)
	}
}

// HandleWebhook delivers a job's end event, signed, and records the attempt;
// a failed delivery is retried by the queue with backoff.
func (h *Handlers) HandleWebhook(ctx context.Context, t *asynq.Task) (err error) {
	var p WebhookPayload
	if err := decodePayload("webhook", t.Payload(), &p); err != nil {
		return err
	}
	ctx, span := startTask(ctx, h.tracer, SpanWebhook, p.Traceparent, p.JobID, AttrStatus.String(p.Status))
	defer func() { endTask(span, err) }()
	j, err := h.cfg.Store.GetJob(ctx, p.JobID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	if j.WebhookURL == nil || *j.WebhookURL == "" {
		return nil
	}
	attempt, _ := asynq.GetRetryCount(ctx)
	eventID := fmt.Sprintf("evt_%s_%s", j.ID, p.Status)
	d := store.WebhookDelivery{JobID: j.ID, EventID: eventID, EventType: "job." + p.Status, Attempt: attempt}
	if len(h.cfg.WebhookSecret) == 0 {
		d.Error = "no signing secret configured (CARRYOVER_WEBHOOK_SECRET); events are never sent unsigned"
		_ = h.cfg.Store.RecordWebhook(ctx, d)
		return fmt.Errorf("%s: %w", d.Error, asynq.SkipRetry)
	}
	// What the URL says is checked again here: the job may predate the
	// policy, or have been enqueued where another allow-list applied.
	err = h.cfg.Webhooks.Policy.CheckURL(*j.WebhookURL)
	var u *url.URL
	if err == nil {
		u, err = url.Parse(*j.WebhookURL) // parses: CheckURL parsed it
	}
	if err != nil {
		d.Error = "webhook_url " + err.Error()
		_ = h.cfg.Store.RecordWebhook(ctx, d)
		h.log.Warn("webhook refused; not retried", "job_id", j.ID, "err", d.Error)
		return fmt.Errorf("webhook of job %s: %s: %w", j.ID, d.Error, asynq.SkipRetry)
	}
	endpoint := egress.Endpoint(u)
	if err := h.breaker.Allow(endpoint); err != nil {
		// Failed fast, on record, and retried on the queue's schedule.
		d.Error = err.Error()
		if rerr := h.cfg.Store.RecordWebhook(ctx, d); rerr != nil {
			return rerr
		}
		h.log.Warn("webhook not sent; will retry", "job_id", j.ID, "attempt", attempt, "err", err)
		return fmt.Errorf("webhook of job %s: %w", j.ID, err)
	}
	body, _ := json.Marshal(Event{Type: "job." + p.Status, Timestamp: time.Now().UTC(), Data: eventData(j, p.Status)})
	if err := h.post(ctx, u, endpoint, eventID, body, &d); err != nil {
		return fmt.Errorf("webhook of job %s: %w: %w", j.ID, err, asynq.SkipRetry)
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
		h.log.Warn("webhook delivery failed; will retry", "job_id", j.ID, "attempt", attempt, "err", err)
		return fmt.Errorf("webhook of job %s: %w", j.ID, err)
	}
	h.log.Info("webhook delivered", "job_id", j.ID, "event", d.EventType, "attempt", attempt)
	return nil
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

// eventData describes a job that ended with status.
func eventData(j store.Job, status string) EventData {
	data := EventData{ID: j.ID, Tenant: j.TenantID, Status: status, Chunks: j.ChunkCount, CostUSD: j.CostUSD,
		Result: "/v1/jobs/" + j.ID + "/result"}
	if j.StopReason != nil {
		data.StopReason = *j.StopReason
	}
	if j.Error != nil {
		data.Error = *j.Error
	}
	return data
}
