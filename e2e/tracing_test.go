package e2e_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/worker"
)

// One job is one trace: the producer's span → enqueue → every chunk task →
// its model call (GenAI semantic conventions, with the values the chunk
// rows hold) → merge → webhook. A job whose first task carries no trace
// context (queued by an untraced producer, or by the reconciler) gets a
// trace of its own, rooted at its first chunk task, which its later tasks
// join.
func TestTracing(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	hookTrace := make(chan string, 1) // the webhook request's traceparent
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hookTrace <- r.Header.Get("Traceparent"):
		default:
		}
	}))
	defer recv.Close()
	h := newHarness(t)
	h.cfg.WebhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("test-secret-0123456789"))
	h.startWorker(func(o *worker.Options) { o.TracerProvider = tp })
	ctx := context.Background()
	traced, err := client.New(ctx, client.Config{DatabaseURL: h.cfg.DatabaseURL, RedisURL: h.cfg.RedisURL,
		ChunkQueue: h.cfg.ChunkQueue, WebhookAllow: h.cfg.WebhookAllow, MaxConns: 2, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()

	// The producer's own span: the job's trace is its.
	pctx, producer := tp.Tracer("test").Start(ctx, "producer")
	prompt, _ := directive(t, "format=text size=1500 seed=41")
	j, err := traced.Enqueue(pctx, client.Request{Model: "gpt-4.1-mini", Format: "text", MaxOutputTokens: 300,
		Input: client.Input{Prompt: prompt}, WebhookURL: recv.URL + "/hooks"})
	producer.End()
	if err != nil {
		t.Fatal(err)
	}
	// The harness's client has no tracer provider: the global no-op one,
	// so its job's first task carries no traceparent, as the reconciler's.
	untraced := h.enqueue("format=text size=1500 seed=42", client.Request{})
	for _, id := range []string{j.ID, untraced.id} {
		if st := h.wait(id, 60*time.Second); st.Status != "succeeded" || st.Chunks < 2 {
			t.Fatalf("job %s: %s with %d chunks (want succeeded, >= 2 chunks)", id, st.Status, st.Chunks)
		}
	}
	// The webhook is delivered after the job ends.
	var spans tracetest.SpanStubs
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		spans = exp.GetSpans()
		if len(find(spans, jobs.SpanWebhook, j.ID)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook span for job %s among %d spans", j.ID, len(spans))
		}
	}

	// The traced job: every span in the producer's trace.
	tid := producer.SpanContext().TraceID()
	enq := one(t, find(spans, jobs.SpanEnqueue, j.ID))
	if enq.Parent.SpanID() != producer.SpanContext().SpanID() || enq.SpanKind != trace.SpanKindProducer {
		t.Errorf("enqueue span: parent %s kind %s, want the producer's span %s, kind producer", enq.Parent.SpanID(), enq.SpanKind,
			producer.SpanContext().SpanID())
	}
	if attr(enq, jobs.AttrModel).AsString() != "gpt-4.1-mini" || attr(enq, jobs.AttrFormat).AsString() != "text" || !attr(enq, jobs.AttrCreated).AsBool() {
		t.Errorf("enqueue span attributes %v", enq.Attributes)
	}
	root := enq.SpanContext.SpanID()
	checkJobTrace(t, h, spans, j.ID, tid, root, true)
	// The webhook's receiver is told the trace, under the delivery's span.
	hook := one(t, find(spans, jobs.SpanWebhook, j.ID))
	if got, want := <-hookTrace, "00-"+tid.String()+"-"+hook.SpanContext.SpanID().String()+"-01"; got != want {
		t.Errorf("the webhook request's traceparent %q, want %q", got, want)
	}

	// The untraced job: no enqueue span; its first chunk task roots a
	// trace that every later task joins.
	if n := len(find(spans, jobs.SpanEnqueue, untraced.id)); n != 0 {
		t.Errorf("%d enqueue spans for the untraced producer's job", n)
	}
	var first *tracetest.SpanStub
	for _, s := range find(spans, jobs.SpanChunk, untraced.id) {
		if attr(s, jobs.AttrSeq).AsInt64() == 0 {
			first = &s
		}
	}
	if first == nil || first.Parent.IsValid() {
		t.Fatalf("the untraced job's chunk 0 span: %+v, want one with no parent", first)
	}
	if first.SpanContext.TraceID() == tid {
		t.Fatal("the untraced job's trace is the traced one's")
	}
	checkJobTrace(t, h, spans, untraced.id, first.SpanContext.TraceID(), first.SpanContext.SpanID(), false)
}

// checkJobTrace checks a finished job's spans: each in trace tid, every
// task span a child of root (chunk 0's own span for a job rooted there),
// one model call span per stored chunk under a chunk span, carrying the
// chunk row's values, a merge, and a delivered webhook if webhook.
func checkJobTrace(t *testing.T, h *harness, spans tracetest.SpanStubs, jobID string, tid trace.TraceID, root trace.SpanID, webhook bool) {
	t.Helper()
	chunkSpans := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range find(spans, jobs.SpanChunk, jobID) {
		chunkSpans[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID() != tid {
			t.Errorf("chunk %d span in trace %s, want %s", attr(s, jobs.AttrSeq).AsInt64(), s.SpanContext.TraceID(), tid)
		}
		if s.SpanContext.SpanID() != root && s.Parent.SpanID() != root {
			t.Errorf("chunk %d span's parent %s, want the job's root %s", attr(s, jobs.AttrSeq).AsInt64(), s.Parent.SpanID(), root)
		}
		if s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("chunk span kind %s", s.SpanKind)
		}
	}
	calls := map[string]tracetest.SpanStub{} // by gen_ai.response.id
	for _, s := range spans {
		if _, ok := chunkSpans[s.Parent.SpanID()]; ok && s.Parent.TraceID() == tid && s.SpanKind == trace.SpanKindClient {
			calls[attr(s, "gen_ai.response.id").AsString()] = s
		}
	}
	rows, err := h.store.Pool().Query(context.Background(), `SELECT seq, response_id, finish_reason, input_tokens, output_tokens
		FROM chunks WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var seq int
		var respID, finish string
		var in, out int64
		if err := rows.Scan(&seq, &respID, &finish, &in, &out); err != nil {
			t.Fatal(err)
		}
		n++
		c, ok := calls[respID]
		if !ok {
			t.Errorf("chunk %d (response %s): no model call span under a chunk span", seq, respID)
			continue
		}
		want := map[attribute.Key]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
			"gen_ai.request.model": "gpt-4.1-mini", "gen_ai.response.model": "gpt-4.1-mini",
			"gen_ai.request.max_tokens": int64(300), "gen_ai.usage.input_tokens": in, "gen_ai.usage.output_tokens": out,
		}
		for k, v := range want {
			if got := attr(c, k).AsInterface(); got != v {
				t.Errorf("chunk %d call span: %s = %v, want %v", seq, k, got, v)
			}
		}
		if got := attr(c, "gen_ai.response.finish_reasons").AsStringSlice(); len(got) != 1 || got[0] != finish {
			t.Errorf("chunk %d call span: finish reasons %v, want [%s]", seq, got, finish)
		}
		if c.Name != "chat gpt-4.1-mini" {
			t.Errorf("chunk %d call span named %q", seq, c.Name)
		}
		if parent := chunkSpans[c.Parent.SpanID()]; attr(parent, jobs.AttrSeq).AsInt64() != int64(seq) {
			t.Errorf("chunk %d's call span is under chunk %d's task span", seq, attr(parent, jobs.AttrSeq).AsInt64())
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d chunks stored", n)
	}
	merge := one(t, find(spans, jobs.SpanMerge, jobID))
	if merge.SpanContext.TraceID() != tid || merge.Parent.SpanID() != root || attr(merge, jobs.AttrStatus).AsString() != "succeeded" {
		t.Errorf("merge span: trace %s parent %s status %q, want trace %s parent %s, succeeded", merge.SpanContext.TraceID(),
			merge.Parent.SpanID(), attr(merge, jobs.AttrStatus).AsString(), tid, root)
	}
	if !webhook {
		return
	}
	hook := one(t, find(spans, jobs.SpanWebhook, jobID))
	if hook.SpanContext.TraceID() != tid || hook.Parent.SpanID() != root || attr(hook, "http.response.status_code").AsInt64() != 200 {
		t.Errorf("webhook span: trace %s parent %s status code %d, want trace %s parent %s, 200", hook.SpanContext.TraceID(),
			hook.Parent.SpanID(), attr(hook, "http.response.status_code").AsInt64(), tid, root)
	}
}

// find returns the spans named name of a job.
func find(spans tracetest.SpanStubs, name, jobID string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && attr(s, jobs.AttrJobID).AsString() == jobID {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans []tracetest.SpanStub) tracetest.SpanStub {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want one", len(spans))
	}
	return spans[0]
}

// attr is a span's attribute k (the zero Value if it has none).
func attr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}
