package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/tracing"
)

// Enqueuer is the one way jobs enter the system, shared by the Go client, the
// CLI and the HTTP API: validate, store, then enqueue the first chunk.
type Enqueuer struct {
	store    *store.Store
	tasks    *Dispatcher
	logger   *slog.Logger
	quota    *store.Quota
	webhooks egress.Policy
	tracer   trace.Tracer
}

// EnqueuerOption adjusts an Enqueuer.
type EnqueuerOption func(*Enqueuer)

// WithWebhookPolicy checks webhook URLs against an operator's egress policy
// (CARRYOVER_WEBHOOK_ALLOW) instead of the default (https, no reserved
// literal address).
func WithWebhookPolicy(p egress.Policy) EnqueuerOption {
	return func(e *Enqueuer) { e.webhooks = p }
}

// WithTracerProvider makes the enqueue spans with tp instead of the global
// provider.
func WithTracerProvider(tp trace.TracerProvider) EnqueuerOption {
	return func(e *Enqueuer) {
		if tp != nil {
			e.tracer = tracing.Tracer(tp)
		}
	}
}

// NewEnqueuer builds an Enqueuer. With a quota, a job whose tenant is at it
// is refused with a *store.QuotaError; nil checks none.
func NewEnqueuer(s *store.Store, d *Dispatcher, logger *slog.Logger, quota *store.Quota, opts ...EnqueuerOption) *Enqueuer {
	if logger == nil {
		logger = slog.Default()
	}
	e := &Enqueuer{store: s, tasks: d, logger: logger, quota: quota, tracer: tracing.Tracer(nil)}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Enqueue validates req, stores the job and enqueues its first chunk. It
// returns created=false when the idempotency key names an existing job. If
// the enqueue itself fails the job is still stored and the reconciler will
// queue it; the error is returned so the caller knows it may be late.
//
// The enqueue is the root span of the job's trace (SpanEnqueue), a child
// of ctx's span if it has one; the job's tasks carry it on.
func (e *Enqueuer) Enqueue(ctx context.Context, req carryovertype.Request) (job store.Job, created bool, err error) {
	ctx, span := e.tracer.Start(ctx, SpanEnqueue, trace.WithSpanKind(trace.SpanKindProducer))
	defer func() {
		if job.ID != "" {
			span.SetAttributes(AttrJobID.String(job.ID), AttrTenant.String(job.TenantID), AttrCreated.Bool(created),
				AttrModel.String(job.Model), AttrFormat.String(job.Format))
		}
		endOp(span, err)
	}()
	return e.enqueue(ctx, req)
}

// startOp starts the span of an operation on a stored job that queues its
// next task (resume, remerge): that task's trace is the span's.
func (e *Enqueuer) startOp(ctx context.Context, name, jobID string) (context.Context, trace.Span) {
	return e.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(AttrJobID.String(jobID)))
}

// endOp ends a producer-side span, with its error if any.
func endOp(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (e *Enqueuer) enqueue(ctx context.Context, req carryovertype.Request) (store.Job, bool, error) {
	req, err := NormalizeFor(req, e.webhooks)
	if err != nil {
		return store.Job{}, false, err
	}
	in := continuation.Input{Prompt: req.Input.Prompt, Messages: req.Input.Messages}
	inJSON, err := json.Marshal(in)
	if err != nil {
		return store.Job{}, false, fmt.Errorf("encode input: %w", err)
	}
	contJSON, err := json.Marshal(req.Continuation)
	if err != nil {
		return store.Job{}, false, fmt.Errorf("encode continuation: %w", err)
	}
	var optJSON json.RawMessage
	if o := (Options{Tools: req.Tools, JSONSchema: req.JSONSchema, Stream: req.Stream}); len(o.Tools) > 0 || o.JSONSchema != nil || o.Stream {
		if optJSON, err = json.Marshal(o); err != nil {
			return store.Job{}, false, fmt.Errorf("encode options: %w", err)
		}
	}
	job, created, err := e.store.InsertJob(ctx, store.NewJob{
		ID:              uuid.NewString(),
		TenantID:        req.Tenant,
		Model:           req.Model,
		Format:          req.Format,
		Instructions:    req.Instructions,
		Input:           inJSON,
		MaxOutputTokens: req.MaxOutputTokens,
		Continuation:    contJSON,
		Metadata:        req.Metadata,
		IdempotencyKey:  req.IdempotencyKey,
		RequestHash:     requestHash(req),
		WebhookURL:      req.WebhookURL,
		Options:         optJSON,
		Quota:           e.quota,
	})
	if err != nil {
		if errors.Is(err, store.ErrIdempotencyConflict) {
			return store.Job{}, false, &carryovertype.ValidationError{Fields: []carryovertype.FieldError{{Field: "idempotency_key", Message: err.Error()}}}
		}
		if errors.Is(err, store.ErrUnknownTenant) {
			return store.Job{}, false, &carryovertype.ValidationError{Fields: []carryovertype.FieldError{{Field: "tenant", Message: fmt.Sprintf("no tenant %q (a tenant is made with its first API key: worker apikey create --tenant %s)", req.Tenant, req.Tenant)}}}
		}
		return store.Job{}, false, err
	}
	if !created {
		return job, false, nil
	}
	if err := e.tasks.Chunk(ctx, job.ID, 0); err != nil {
		e.logger.WarnContext(ctx, "job stored but not yet queued; the reconciler will queue it",
			"job_id", job.ID, "seq", 0, "err", err)
		return job, true, fmt.Errorf("job %s stored, enqueue deferred to the reconciler: %w", job.ID, err)
	}
	e.logger.InfoContext(ctx, "job enqueued", "job_id", job.ID, "seq", 0, "model", job.Model, "format", job.Format)
	return job, true, nil
}

// Cancel stops a live job: no model call starts after it. It reports whether
// the job changed.
func (e *Enqueuer) Cancel(ctx context.Context, jobID string) (store.Job, bool, error) {
	job, changed, err := e.store.Cancel(ctx, jobID)
	if err == nil && changed {
		e.logger.InfoContext(ctx, "job cancelled", "job_id", jobID)
		if job.WebhookURL != nil {
			if werr := QueueWebhooks(ctx, e.store, e.tasks, jobID, store.StatusCancelled); werr != nil {
				e.logger.WarnContext(ctx, "could not queue the webhook; the reconciler will", "job_id", jobID, "err", werr)
			}
		}
	}
	return job, changed, err
}

// Remerge moves a finished or cancelled job with stored chunks back to
// merging and queues its merge. It reports false when the job is still
// generating or has no chunks.
//
// A job's trace is not stored, so the new merge roots a trace of its own
// (SpanRemerge).
func (e *Enqueuer) Remerge(ctx context.Context, jobID string) (ok bool, err error) {
	ctx, span := e.startOp(ctx, SpanRemerge, jobID)
	defer func() { endOp(span, err) }()
	ok, err = e.store.Remerge(ctx, jobID, e.quota)
	if err != nil || !ok {
		return ok, err
	}
	e.logger.InfoContext(ctx, "job queued for a new merge", "job_id", jobID)
	return true, e.tasks.Merge(ctx, jobID)
}

// Validate fills a request's defaults and validates it as Enqueue does,
// with the enqueuer's webhook policy, storing nothing.
func (e *Enqueuer) Validate(r carryovertype.Request) (carryovertype.Request, error) {
	return NormalizeFor(r, e.webhooks)
}

// ErrNotResumable is returned when a job did not stop for a reason new
// settings can lift.
var ErrNotResumable = errors.New("the job did not stop at a limit, a budget, a guard, an error or a cancel")

// Resume continues a job stopped by a limit, a budget, exhausted retries or
// a cancel, with raised limits, from its last stored response. Bad settings
// are refused with a *ValidationError naming each field as ResumeOptions
// names it; max_attempts may rise past carryovertype.MaxMaxAttempts, up to
// that many chunks more than the job has stored (see CheckResume).
//
// A job's trace is not stored, so the resumed run roots a trace of its own
// (SpanResume).
func (e *Enqueuer) Resume(ctx context.Context, jobID string, o carryovertype.ResumeOptions) (err error) {
	ctx, span := e.startOp(ctx, SpanResume, jobID)
	defer func() { endOp(span, err) }()
	job, err := e.store.GetJob(ctx, jobID)
	if err != nil {
		return err
	}
	cont, err := decodeContinuation(job.Continuation)
	if err != nil {
		return err
	}
	// Checked as the caller named them (max_attempts, not
	// continuation.max_attempts): first on their own, then, for a job that
	// can be resumed at all (else 409, not a 400 about its limit), against
	// its chunks; the cap on chunks applies per execution. The chunks are
	// counted only then: a refused resume costs no CallStats query.
	if err := CheckResume(o); err != nil {
		return err
	}
	if !resumable(job) {
		return ErrNotResumable
	}
	calls, err := e.store.CallStats(ctx, jobID)
	if err != nil {
		return err
	}
	var v fieldErrors
	v.resumeAttempts(o.MaxAttempts, &storedChunks{limit: cont.MaxAttempts, stored: calls.Succeeded})
	if err := v.err(); err != nil {
		return err
	}
	cont = withResume(cont, o)
	raw, err := json.Marshal(cont)
	if err != nil {
		return fmt.Errorf("encode continuation: %w", err)
	}
	next, ok, err := e.store.Resume(ctx, jobID, raw, e.quota)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotResumable
	}
	e.logger.InfoContext(ctx, "job resumed", "job_id", jobID, "seq", next)
	// Its own TaskID: an earlier task for this chunk may still be archived under the canonical one.
	return e.tasks.ChunkWithID(ctx, jobID, next, fmt.Sprintf("%s:resume:%d", ChunkTaskID(jobID, next), time.Now().UnixNano()))
}
