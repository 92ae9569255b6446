package jobs

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/tracing"
)

// Span names. A job is one trace: the enqueue span is its root, and every
// task span (chunk, merge, webhook) is the root's child — the payload
// carries the root's traceparent — with each model call a child of its
// chunk's span.
const (
	SpanEnqueue = "carryover.enqueue"
	SpanChunk   = "carryover.chunk"
	SpanMerge   = "carryover.merge"
	SpanWebhook = "carryover.webhook"
	SpanResume  = "carryover.resume"  // a resumed job's new run: a trace of its own
	SpanRemerge = "carryover.remerge" // a job's new merge: a trace of its own
)

// carryover's own span attributes; model calls use the GenAI semantic
// conventions' (gen_ai.*).
const (
	AttrJobID    = attribute.Key("carryover.job_id")
	AttrSeq      = attribute.Key("carryover.seq")
	AttrTenant   = attribute.Key("carryover.tenant")
	AttrModel    = attribute.Key("carryover.model") // the job's model (its calls' spans say gen_ai.request.model)
	AttrFormat   = attribute.Key("carryover.format")
	AttrCreated  = attribute.Key("carryover.created")  // false: an idempotency key named an existing job
	AttrTaskID   = attribute.Key("carryover.task_id")  // the asynq TaskID
	AttrAttempt  = attribute.Key("carryover.attempt")  // the delivery's retry count (0 for the first)
	AttrQueue    = attribute.Key("carryover.queue")    // the asynq queue it came from
	AttrOutcome  = attribute.Key("carryover.outcome")  // done, waited (a retry that is no failure) or failed
	AttrClaim    = attribute.Key("carryover.claim")    // what the chunk task's claim found (claimed, already_stored...)
	AttrStatus   = attribute.Key("carryover.status")   // the job's status the task left it in / the webhook's event
	AttrStrategy = attribute.Key("carryover.strategy") // the continuation strategy of a model call
	AttrPending  = attribute.Key("carryover.pending")  // a background call still running when the delivery let go of it
	// AttrGenAISystem is gen_ai.system, the name gen_ai.provider.name had
	// up to semantic conventions v1.36; still read by many GenAI tools.
	AttrGenAISystem = attribute.Key("gen_ai.system")
)

// genAIProvider is the gen_ai.provider.name of carryover's calls: every
// provider it speaks to talks OpenAI's wire format.
const genAIProvider = "openai"

// startTask starts the span of a task delivery as a child of the job's
// trace (the payload's traceparent). A task without one — queued by the
// reconciler, or before tracing was on — starts a new trace, which the
// job's later tasks then join. The returned ctx carries the job's root for
// the tasks enqueued under it.
func startTask(ctx context.Context, tracer trace.Tracer, name, traceparent, jobID string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx = tracing.Extract(ctx, traceparent)
	root := trace.SpanContextFromContext(ctx)
	ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer))
	if !span.IsRecording() {
		// Tracing off (or this trace not sampled): nothing to describe.
		return tracing.WithJob(ctx, jobID, root), span
	}
	attrs = append(attrs, AttrJobID.String(jobID))
	if id, ok := asynq.GetTaskID(ctx); ok {
		attrs = append(attrs, AttrTaskID.String(id))
	}
	if n, ok := asynq.GetRetryCount(ctx); ok {
		attrs = append(attrs, AttrAttempt.Int(n))
	}
	if q, ok := asynq.GetQueueName(ctx); ok {
		attrs = append(attrs, AttrQueue.String(q))
	}
	span.SetAttributes(attrs...)
	if !root.IsValid() {
		root = span.SpanContext()
	}
	return tracing.WithJob(ctx, jobID, root), span
}

// endTask ends a task's span with the task's outcome: a RetryLater is a
// wait, not an error.
func endTask(span trace.Span, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	var rl *RetryLater
	switch {
	case err == nil:
		span.SetAttributes(AttrOutcome.String("done"))
	case errors.As(err, &rl):
		span.SetAttributes(AttrOutcome.String("waited"))
		span.AddEvent("retry later", trace.WithAttributes(attribute.String("reason", rl.Reason),
			attribute.Float64("delay_seconds", rl.Delay.Seconds())))
	default:
		span.SetAttributes(AttrOutcome.String("failed"))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startCall starts a model call's span, named and attributed as the GenAI
// semantic conventions' inference span ("chat <model>", kind client).
func startCall(ctx context.Context, tracer trace.Tracer, req continuation.CallRequest) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(genAIProvider),
			AttrGenAISystem.String(genAIProvider),
			semconv.GenAIRequestModel(req.Model),
			semconv.GenAIRequestMaxTokens(req.MaxOutputTokens),
			AttrStrategy.String(strategyName(req)),
		)
	}
	return ctx, span
}

// strategyName is the call's strategy, stateful when unnamed.
func strategyName(req continuation.CallRequest) string {
	if req.Strategy == "" {
		return "stateful"
	}
	return string(req.Strategy)
}

// endCall ends a model call's span with what the reply said: its id and
// model, usage, finish reason; a failed call carries error.type (the
// error policy's class: rate_limit, timeout, model...).
func endCall(span trace.Span, resp continuation.Response, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	var attrs []attribute.KeyValue
	if resp.ID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(resp.ID))
	}
	if resp.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(resp.Model))
	}
	if resp.Finish != "" && !resp.Pending() {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(string(resp.Finish)))
	}
	if u := resp.Usage; u != (continuation.Usage{}) {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(int(u.Input)), semconv.GenAIUsageOutputTokens(int(u.Output)),
			semconv.GenAIUsageCacheReadInputTokens(int(u.Cached)), semconv.GenAIUsageReasoningOutputTokens(int(u.Reasoning)))
	}
	var w *waiting
	switch {
	case errors.As(err, &w):
		attrs = append(attrs, AttrPending.Bool(true))
	case err != nil:
		ce := continuation.Classify(err)
		attrs = append(attrs, semconv.ErrorTypeKey.String(string(ce.Type)))
		if ce.HTTPStatus != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(ce.HTTPStatus))
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, ce.Error())
	}
	span.SetAttributes(attrs...)
	span.End()
}
