// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables, and carries a job's trace context through the
// queue: a task payload holds a W3C traceparent, so that one job — enqueue,
// chunk tasks, model calls, merge, webhook — is one trace.
//
// Tracing is off unless the environment asks for it: no exporter, the
// no-op tracer provider, and spans that cost a context lookup.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Enabled reports whether the environment asks for traces to be exported:
// OTEL_TRACES_EXPORTER is set to something other than "none", or an OTLP
// endpoint is given (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and OTEL_SDK_DISABLED is not "true".
// Unlike the specification's default (otlp), nothing set means off: a
// process that was never pointed at a collector sends nothing anywhere.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); {
	case exp == "none":
		return false
	case exp != "":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup builds the tracer provider the environment describes, for a
// process whose service.name defaults to service (OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override it). When tracing is off it returns
// the no-op provider. Otherwise spans are batched (OTEL_BSP_*), sampled
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG; default: every trace
// whose parent was sampled, and every new one) and sent over OTLP/HTTP
// with protobuf (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE...). The only exporter is otlp, and its only
// protocol http/protobuf; anything else is refused, naming the variable.
//
// shutdown flushes the spans still batched; call it before exiting.
func Setup(ctx context.Context, service string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	if !Enabled(os.Getenv) {
		return noop.NewTracerProvider(), nothing, nil
	}
	if err := checkEnv(os.Getenv); err != nil {
		return nil, nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}

// checkEnv refuses an exporter or protocol this build does not have.
func checkEnv(getenv func(string) string) error {
	if exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" && exp != "none" {
		return fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp (or none) is supported", exp)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if v != "http/protobuf" {
				return fmt.Errorf("%s=%q: only http/protobuf is supported", k, v)
			}
			return nil // the traces-specific one wins
		}
	}
	return nil
}

// Traceparent is the W3C traceparent a task of job jobID enqueued under ctx
// carries: the job's root span if ctx is inside that job (see WithJob);
// nothing if ctx is inside another job, whose trace this job's must not
// join; else ctx's current span. "" when that is no valid span context
// (tracing off, or no span).
func Traceparent(ctx context.Context, jobID string) string {
	var sc trace.SpanContext
	if j, ok := ctx.Value(jobKey{}).(jobRoot); ok {
		if j.jobID == jobID {
			sc = j.root
		}
	} else {
		sc = trace.SpanContextFromContext(ctx)
	}
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// Extract returns ctx with the remote span context a traceparent names as
// its parent; an empty or malformed traceparent changes nothing.
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

type jobKey struct{}

// jobRoot is the root span of the job a task works for.
type jobRoot struct {
	jobID string
	root  trace.SpanContext
}

// WithJob returns ctx inside job jobID, whose trace's root span is root:
// the job's tasks enqueued under ctx name root as their parent
// (Traceparent), rather than the current task's span, so that a job's
// chunk tasks are siblings under its enqueue span instead of a chain as
// deep as the job is long.
func WithJob(ctx context.Context, jobID string, root trace.SpanContext) context.Context {
	if !root.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, jobKey{}, jobRoot{jobID: jobID, root: root})
}

// TracerName is the instrumentation scope of carryover's spans.
const TracerName = "github.com/carryover/carryover"

// Tracer is carryover's tracer from tp, or from the global provider when tp
// is nil (the no-op one unless the program set another).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return otel.GetTracerProvider().Tracer(TracerName)
	}
	return tp.Tracer(TracerName)
}
