package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/testenv"
)

// A POST /v1/jobs that carries a W3C traceparent puts the job's trace under
// the caller's span; a malformed one is ignored (the job's trace is new).
func TestTraceparentHeader(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: testenv.Queue(t),
		Logger: log, MaxConns: 2, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(conform(t, api.New(c, log).Handler()))
	t.Cleanup(srv.Close)
	e := newEnv(t, false)
	e.url = srv.URL
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, c := range []struct {
		header string
		child  bool
	}{
		{"00-" + trace + "-" + parent + "-01", true},
		{"00-" + trace + "-not-a-span-id-01", false},
	} {
		exp.Reset()
		resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"hello","format":"text"}`, "traceparent", c.header)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("create: %d %s", resp.StatusCode, body)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 || spans[0].Name != jobs.SpanEnqueue {
			t.Fatalf("spans %v, want one enqueue span", spans)
		}
		s := spans[0]
		if got := s.Parent.IsValid() && s.Parent.TraceID().String() == trace && s.Parent.SpanID().String() == parent &&
			s.SpanContext.TraceID().String() == trace; got != c.child {
			t.Errorf("traceparent %q: enqueue span %s/%s with parent %s, child of the caller's: %v, want %v", c.header,
				s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID(), got, c.child)
		}
		var id string
		for _, kv := range s.Attributes {
			if kv.Key == jobs.AttrJobID {
				id = kv.Value.AsString()
			}
		}
		if id == "" || !strings.Contains(string(body), id) {
			t.Errorf("enqueue span's job id %q is not the accepted job's: %s", id, body)
		}
	}
}
