package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Tracing is on only when the environment names an exporter or an OTLP
// endpoint, and an exporter or protocol this build lacks is refused by name.
func TestEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     []string
		enabled bool
		err     string // what checkEnv's error names, "" for none
	}{
		{name: "nothing set", enabled: false},
		{name: "endpoint", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}, enabled: true},
		{name: "traces endpoint", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"}, enabled: true},
		{name: "exporter otlp", env: []string{"OTEL_TRACES_EXPORTER", "otlp"}, enabled: true},
		{name: "exporter none beats endpoint", env: []string{"OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}},
		{name: "sdk disabled", env: []string{"OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "otlp"}},
		{name: "service name alone", env: []string{"OTEL_SERVICE_NAME", "x"}},
		{name: "console exporter", env: []string{"OTEL_TRACES_EXPORTER", "console"}, enabled: true, err: "OTEL_TRACES_EXPORTER"},
		{name: "grpc", env: []string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, enabled: true, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "traces protocol wins", env: []string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}, enabled: true},
		{name: "http/json", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"},
			enabled: true, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Enabled(env(c.env...)); got != c.enabled {
				t.Errorf("Enabled = %v, want %v", got, c.enabled)
			}
			err := checkEnv(env(c.env...))
			switch {
			case c.err == "" && err != nil:
				t.Errorf("checkEnv: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("checkEnv: %v, want an error naming %s", err, c.err)
			}
		})
	}
}

// With nothing set, Setup gives the no-op provider: no span records.
func TestSetupOff(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	tp, shutdown, err := Setup(context.Background(), "carryover-test")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatal("a span records with tracing off")
	}
}

// A traceparent carries a span context across the queue; inside a job
// (WithJob) it names the job's root, not the current span, and inside
// another job nothing.
func TestTraceparent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, root := tp.Tracer("t").Start(context.Background(), "root")
	tpRoot := Traceparent(ctx, "job-1")
	if !strings.HasPrefix(tpRoot, "00-"+root.SpanContext().TraceID().String()+"-"+root.SpanContext().SpanID().String()) {
		t.Fatalf("traceparent %q does not name the root span", tpRoot)
	}
	remote := trace.SpanContextFromContext(Extract(context.Background(), tpRoot))
	if !remote.IsRemote() || remote.SpanID() != root.SpanContext().SpanID() || remote.TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("extracted %+v", remote)
	}
	task, child := tp.Tracer("t").Start(WithJob(Extract(context.Background(), tpRoot), "job-1", remote), "task")
	if got := Traceparent(task, "job-1"); got != tpRoot {
		t.Fatalf("inside the job a task enqueued %q, want the job's root %q", got, tpRoot)
	}
	if got := Traceparent(task, "job-2"); got != "" {
		t.Fatalf("inside job-1 a task of job-2 carries %q, want none", got)
	}
	if Traceparent(trace.ContextWithSpan(context.Background(), child), "job-1") == tpRoot {
		t.Fatal("outside a job the traceparent is not the current span's")
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if sc := trace.SpanContextFromContext(Extract(context.Background(), bad)); sc.IsValid() {
			t.Errorf("Extract(%q) = %+v, want nothing", bad, sc)
		}
	}
	if Traceparent(context.Background(), "job-1") != "" {
		t.Error("a traceparent without a span")
	}
}

// With an OTLP endpoint set, Setup exports over OTLP/HTTP (protobuf) to it,
// under OTEL_SERVICE_NAME, and shutdown flushes what is batched.
func TestSetupExportsOTLP(t *testing.T) {
	got := make(chan *collectortrace.ExportTraceServiceRequest, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("%s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		} else if err := proto.Unmarshal(body, &req); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		select {
		case got <- &req:
		default:
		}
	}))
	defer srv.Close()
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "", "OTEL_SDK_DISABLED": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "", "OTEL_RESOURCE_ATTRIBUTES": "",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "carryover-from-env"} {
		t.Setenv(k, v)
	}
	tp, shutdown, err := Setup(context.Background(), "carryover-test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("t").Start(context.Background(), "exported")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case req := <-got:
		rs := req.GetResourceSpans()
		if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || rs[0].GetScopeSpans()[0].GetSpans()[0].GetName() != "exported" {
			t.Fatalf("exported %v", req)
		}
		service := ""
		for _, kv := range rs[0].GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		if service != "carryover-from-env" {
			t.Fatalf("service.name %q, want OTEL_SERVICE_NAME's", service)
		}
	default:
		t.Fatal("nothing exported")
	}
}
