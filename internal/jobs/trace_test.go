package jobs

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/tracing"
)

// BenchmarkTaskSpans is what tracing adds to one chunk task — its span,
// its model call's span, and the next task's traceparent — with tracing
// off (the no-op provider, as when no OTEL_* variable is set) and on (the
// SDK, every span sampled, into memory). Compare the two in one run.
func BenchmarkTaskSpans(b *testing.B) {
	req := continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 300}
	resp := continuation.Response{ID: "resp_1", Model: "gpt-4.1-mini", Finish: continuation.FinishLength,
		Usage: continuation.Usage{Input: 120, Output: 300}}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			tracer, parent := tracing.Tracer(noop.NewTracerProvider()), ""
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
				defer tp.Shutdown(context.Background())
				tracer = tracing.Tracer(tp)
				ctx, s := tracer.Start(context.Background(), "enqueue")
				parent = tracing.Traceparent(ctx, "job")
				s.End()
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx, span := startTask(context.Background(), tracer, SpanChunk, parent, "job", AttrSeq.Int(3))
				cctx, call := startCall(ctx, tracer, req)
				endCall(call, resp, nil)
				_ = tracing.Traceparent(cctx, "job")
				endTask(span, nil)
			}
		})
	}
}
