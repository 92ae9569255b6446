package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/internal/tracing"
)

// startTracing sets up the tracer provider the OTEL_* environment
// describes (the no-op one when it names no exporter) as the process's
// global one, with W3C trace context propagation and the SDK's errors
// logged through log. stop flushes the spans still batched, for at most
// five seconds.
func startTracing(service string, log *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	tp, shutdown, err := tracing.Setup(context.Background(), service)
	if err != nil {
		return nil, nil, err
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if tracing.Enabled(os.Getenv) {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
		log.Info("tracing on: spans are exported over OTLP/HTTP", "service", service)
	}
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("could not flush the last spans", "err", err)
		}
	}, nil
}
