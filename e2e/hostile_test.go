package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// A hostile model endpoint, end to end: a worker whose OPENAI_BASE_URL is an
// OpenAI-compatible server on loopback that answers the first call of a job
// honestly (an answer cut off by the token limit) and the second with the
// attack. Each job must end — partial, with the first chunk and the stop
// explained, or succeeded where the reply could be kept — with the model
// called exactly twice: no redelivery calls it again.

// hostileModel serves POST /v1/responses: call 1 with an honest cut-off
// answer, every later call with second.
type hostileModel struct {
	calls  atomic.Int64
	wrote  atomic.Int64
	second func(m *hostileModel, w http.ResponseWriter)
}

func (m *hostileModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	n := m.calls.Add(1)
	if n == 1 {
		first := responseJSON("resp_1", "incomplete", jsonText("hello "), `{"input_tokens":10,"output_tokens":64,"total_tokens":74}`)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}`+"\n\n"+
				`data: {"type":"response.output_text.delta","delta":"hello "}`+"\n\n"+
				`data: {"type":"response.incomplete","response":`+first+"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, first)
		return
	}
	m.second(m, w)
}

// responseJSON is a Responses API object with one message of text.
func responseJSON(id, status, text, usage string) string {
	incomplete := "null"
	if status == "incomplete" {
		incomplete = `{"reason":"max_output_tokens"}`
	}
	return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1,"status":%q,"incomplete_details":%s,"model":"gpt-4.1-mini",`+
		`"output":[{"type":"message","id":"msg_%s","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}],"usage":%s}`,
		id, status, incomplete, id, text, usage)
}

// jsonText is s as a JSON string (with \u0000 for NUL, as a server sends it).
func jsonText(s string) string {
	return `"` + strings.ReplaceAll(s, "\x00", `\u0000`) + `"`
}

// hostileCase is one attack: the hostile second reply, and how the job
// must end.
type hostileCase struct {
	stream bool
	second func(m *hostileModel, w http.ResponseWriter)
	// setup prepares the test's database (the unstorable reply's constraint).
	setup func(h *harness)
	// status and what the job's error (or, succeeded, its result) must say.
	status, says string
}

const mib = 1 << 20

// A 200 MiB reply is refused near its cap: a malformed model error under
// the error policy, the first chunk kept (partial).
func TestSecurityOversizedReplyEndToEnd(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{status: "partial", says: "larger than",
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			head := `{"id":"resp_2","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"`
			piece := strings.Repeat("a", 64<<10)
			n, err := io.WriteString(w, head)
			m.wrote.Add(int64(n))
			for err == nil && m.wrote.Load() < 200*mib {
				n, err = io.WriteString(w, piece)
				m.wrote.Add(int64(n))
			}
		}})
}

// A stream that never ends is cut once its text passes the budget's bound,
// not at the call timeout.
func TestSecurityEndlessStreamEndToEnd(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{stream: true, status: "partial", says: "bytes of text",
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			ev := `data: {"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 1024) + "\"}\n\n"
			var err error
			for err == nil && m.wrote.Load() < 1<<40 {
				var n int
				n, err = io.WriteString(w, ev)
				m.wrote.Add(int64(n))
				w.(http.Flusher).Flush()
			}
		}})
}

// A NUL in the text is stored as U+FFFD, and an event says so; the job
// succeeds instead of failing to save on every redelivery.
func TestSecurityNULReply(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{status: "succeeded", says: "hello wor\uFFFDld",
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, responseJSON("resp_2", "completed", jsonText("wor\x00ld"), `{"input_tokens":80,"output_tokens":3}`))
		}})
}

// output_tokens past 2^31-1 is a malformed reply, recorded, and the job
// ends; the made-up usage is neither billed nor counted.
func TestSecurityUsageOverflow(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{status: "partial", says: "absurd usage",
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, responseJSON("resp_2", "completed", jsonText("world"), `{"input_tokens":80,"output_tokens":2147483653}`))
		}})
}

// Negative usage is a malformed reply: budgets are not bypassed, and
// daily_cost never goes negative.
func TestSecurityNegativeUsage(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{status: "partial", says: "negative usage",
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, responseJSON("resp_2", "completed", jsonText("world"), `{"input_tokens":-1000000000,"output_tokens":-850000000}`))
		}})
}

// Any write Postgres refuses as data — here a constraint the test adds,
// standing in for whatever the bounds do not foresee — is a recorded
// failure under the error policy, not a delivery that dies and calls the
// model again.
func TestSecurityUnstorableReply(t *testing.T) {
	t.Parallel()
	runHostile(t, hostileCase{status: "partial", says: "could not be stored",
		setup: func(h *harness) {
			if _, err := h.store.Pool().Exec(context.Background(),
				`ALTER TABLE chunks ADD CONSTRAINT test_no_poison CHECK (content NOT LIKE '%poison%')`); err != nil {
				h.t.Fatal(err)
			}
		},
		second: func(m *hostileModel, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, responseJSON("resp_2", "completed", jsonText("poison"), `{"input_tokens":80,"output_tokens":1}`))
		}})
}

// runHostile runs one job against the hostile model and checks how it ended.
func runHostile(t *testing.T, c hostileCase) {
	t.Helper()
	h := newHarness(t)
	m := &hostileModel{second: c.second}
	ts := httptest.NewServer(m)
	t.Cleanup(ts.Close)
	h.cfg.OpenAIBaseURL = ts.URL + "/v1"
	h.cfg.CallTimeout = time.Minute // the old code read an endless stream until this ended
	if c.setup != nil {
		c.setup(h)
	}
	h.startWorker()
	// stop_on_any_error: a hostile reply is a malformed model error, which
	// the default policy would call again; here the model must be called
	// exactly twice, so that no call past the recorded one goes unnoticed.
	stop, err := client.ParseErrorPolicy("stop_on_any_error")
	if err != nil {
		t.Fatal(err)
	}
	j, err := h.client.Enqueue(context.Background(), client.Request{Model: "gpt-4.1-mini", Format: "text",
		MaxOutputTokens: 64, Stream: c.stream, Input: client.Input{Prompt: "write"},
		Continuation: client.Continuation{MaxAttempts: 5, ErrorPolicy: &stop}})
	if err != nil {
		t.Fatal(err)
	}
	st := h.wait(j.ID, 90*time.Second)
	// Let a redelivery, if any were coming, happen.
	time.Sleep(2 * time.Second)
	if got := m.calls.Load(); got != 2 {
		t.Fatalf("the model was called %d times, want 2 (no call again after the hostile reply)", got)
	}
	if st.Status != c.status {
		t.Fatalf("job %s, want %s (stop %q, error %q)", st.Status, c.status, st.StopReason, st.Error)
	}
	if c.status == "succeeded" {
		res, err := h.client.Result(context.Background(), j.ID)
		if err != nil || res.Content != c.says {
			t.Fatalf("result %q, %v", res.Content, err)
		}
		if n := h.count(`SELECT count(*) FROM job_events WHERE job_id = $1::uuid AND message LIKE '%U+FFFD%'`, j.ID); n == 0 {
			t.Fatal("no event tells the operator the text was changed to store it")
		}
	} else {
		if st.Chunks != 1 || st.StopReason == "" || !strings.Contains(st.Error, c.says) {
			t.Fatalf("chunks %d, stop %q, error %q; want the first chunk kept and the stop saying %q", st.Chunks, st.StopReason, st.Error, c.says)
		}
		if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND error_type = 'model' AND error LIKE '%'||$2||'%'`, j.ID, c.says); n != 1 {
			t.Fatalf("%d failed calls recorded for the hostile reply, want 1", n)
		}
	}
	if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND status = 'lost'`, j.ID); n != 0 {
		t.Fatalf("%d deliveries lost", n)
	}
	// No usage the model made up is counted or priced.
	if n := h.count(`SELECT count(*) FROM daily_cost WHERE cost_usd < 0 OR input_tokens < 0 OR output_tokens < 0 OR output_tokens > 1000000`); n != 0 {
		t.Fatal("daily_cost holds negative or absurd usage")
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1::uuid AND (cost_usd < 0 OR output_tokens < 0 OR output_tokens > 1000000)`, j.ID); n != 0 {
		t.Fatal("the job's totals hold negative or absurd usage")
	}
	if w := m.wrote.Load(); w >= 200*mib {
		t.Fatalf("the hostile server wrote all of its %d bytes", w)
	}
}
