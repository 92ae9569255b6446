package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/simulator"
)

// Every way a job can end, through the simulator on real Redis and Postgres:
// each reaches its terminal state with its stop reason, its chunks and its
// attempts on record.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.CallTimeout = 1500 * time.Millisecond // a slow@ fault of 2.5s is a timeout; the time limit's 1.2s is not
	h.startWorker()
	off := false
	policy := func(s string) *client.ErrorPolicy {
		p, err := client.ParseErrorPolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	tools := json.RawMessage(`[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"query":{"type":"string"},"page":{"type":"integer"}}}}]`)
	cases := []struct {
		name       string
		directive  string
		model      string
		cont       client.Continuation
		tools      json.RawMessage
		status     string
		stop       string
		chunks     int // -1: any number
		failedRows int // rows in call_failures
		check      func(t *testing.T, c outcome)
	}{
		{name: "completed", directive: "format=csv size=1500", status: "succeeded", stop: "completed", chunks: -1},
		{name: "max attempts, partial", directive: "format=csv size=3000", cont: client.Continuation{MaxAttempts: 2},
			status: "partial", stop: "steps_limit_reached", chunks: 2, check: func(t *testing.T, c outcome) {
				resultIsPrefix(t, c)
				// The README's query answers why the job stopped and what each criterion said.
				rows, err := c.h.store.Pool().Query(context.Background(), `SELECT seq, finish_reason, outcome, resolved_by, criterion, verdict, reason, coalesce(stop_reason, '')
FROM chunk_decisions WHERE job_id = $1::uuid ORDER BY seq, criterion`, c.id)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var got []string
				for rows.Next() {
					var seq int
					var finish, outcome, by, crit, verdict, reason, stop string
					if err := rows.Scan(&seq, &finish, &outcome, &by, &crit, &verdict, &reason, &stop); err != nil {
						t.Fatal(err)
					}
					got = append(got, fmt.Sprintf("%d %s %s %s %s", seq, crit, verdict, by, stop))
				}
				want := []string{
					"0 finish_reason request_continuation finish_reason ",
					"0 max_attempts allow_continuation finish_reason ",
					"1 finish_reason request_continuation max_attempts steps_limit_reached",
					"1 max_attempts forbid_continuation max_attempts steps_limit_reached",
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("chunk_decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}},
		{name: "max attempts, raise_error", directive: "format=csv size=3000", cont: client.Continuation{MaxAttempts: 2, OnFailure: "raise_error"},
			status: "failed", stop: "steps_limit_reached", chunks: 2, check: resultIsPrefix},
		{name: "continuation disabled", directive: "format=text size=3000", cont: client.Continuation{Enabled: &off},
			status: "partial", stop: "steps_limit_reached", chunks: 1, check: resultIsPrefix},
		{name: "429 honored", directive: "format=text size=1500 faults=429@1:1", status: "succeeded", stop: "completed", chunks: -1, failedRows: 1,
			check: func(t *testing.T, c outcome) {
				var waited time.Duration
				var at429 time.Time
				for _, call := range c.calls {
					if call.Depth == 1 && call.Outcome == "error:429" {
						at429 = call.At
					} else if call.Depth == 1 && !at429.IsZero() && waited == 0 {
						waited = call.At.Sub(at429)
					}
				}
				if waited < 950*time.Millisecond || waited > 3*time.Second { // rounding to whole seconds adds up to 1s; asynq's 5s forwarder would show
					t.Fatalf("Retry-After: 1 not honored: the retry came %s after the 429", waited)
				}
				t.Logf("retry came %s after the 429 (Retry-After: 1)", waited.Round(time.Millisecond))
				if c.h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND error_type = 'rate_limit' AND NOT counted`, c.id) != 1 {
					t.Fatal("the rate-limit wait is not on record as an uncounted failure")
				}
			}},
		// Error types under the error policy. The default,
		// retry_transient_errors(3), retries a passing 5xx, malformed body,
		// timeout or dropped connection with backoff, and stops after the
		// fourth in a row; stop_on_any_error ends generation at the first.
		{name: "one model error (500) on chunk 2 retried by default", directive: "format=text size=3000 faults=500@2",
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1, check: failureTyped("model")},
		{name: "one model error (500) on chunk 2 stops under stop_on_any_error", directive: "format=text size=3000 faults=500@2",
			cont: client.Continuation{ErrorPolicy: policy("stop_on_any_error")}, status: "partial", stop: "error_forbade", chunks: 2, failedRows: 1,
			check: failureTyped("model")},
		{name: "three consecutive model errors retried by default", directive: "format=text size=1500 faults=500@1x3",
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 3, check: failureTyped("model")},
		{name: "four consecutive model errors stop by default", directive: "format=text size=3000 faults=500@1x4",
			status: "partial", stop: "retry_limit_reached", chunks: 1, failedRows: 4, check: failureTyped("model")},
		{name: "model error (500) retried", directive: "format=text size=1500 faults=500@1x2", cont: client.Continuation{ErrorPolicy: policy("retry_all(3)")},
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 2, check: failureTyped("model")},
		{name: "malformed body retried by default", directive: "format=text size=1500 faults=malformed@0",
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1},
		{name: "malformed body retried", directive: "format=text size=1500 faults=malformed@0", cont: client.Continuation{ErrorPolicy: policy("retry_all(3)")},
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1},
		{name: "failed response retried by a per-type rule", directive: "format=text size=1500 faults=failed@1", cont: client.Continuation{ErrorPolicy: policy("stop_on_any_error,model=retry:1")},
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1},
		{name: "retries exhausted", directive: "format=text size=3000 faults=500@1x9", cont: client.Continuation{ErrorPolicy: policy("retry_all(3)")},
			status: "partial", stop: "retry_limit_reached", chunks: 1, failedRows: 4},
		{name: "timeout error retried by default", directive: "format=text size=1500 faults=slow@1:2500ms",
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1, check: failureTyped("timeout")},
		{name: "timeout error stops under stop_on_any_error", directive: "format=text size=3000 faults=slow@1:2500ms",
			cont: client.Continuation{ErrorPolicy: policy("stop_on_any_error")}, status: "partial", stop: "error_forbade", chunks: 1, failedRows: 1,
			check: failureTyped("timeout")},
		{name: "timeout error retried", directive: "format=text size=1500 faults=slow@1:2500ms", cont: client.Continuation{ErrorPolicy: policy("stop_on_any_error,timeout=retry:2")},
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1, check: failureTyped("timeout")},
		{name: "unknown error (connection dropped) retried by default", directive: "format=text size=1500 faults=break@1",
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1, check: failureTyped("unknown")},
		{name: "unknown error (connection dropped) stops under stop_on_any_error", directive: "format=text size=3000 faults=break@1",
			cont: client.Continuation{ErrorPolicy: policy("stop_on_any_error")}, status: "partial", stop: "error_forbade", chunks: 1, failedRows: 1,
			check: failureTyped("unknown")},
		{name: "unknown error retried", directive: "format=text size=1500 faults=break@1", cont: client.Continuation{ErrorPolicy: policy("retry_all(2)")},
			status: "succeeded", stop: "completed", chunks: -1, failedRows: 1, check: failureTyped("unknown")},
		{name: "validation error (400) stops by default", directive: "format=text size=3000 faults=400@1", status: "partial", stop: "error_forbade", chunks: 1, failedRows: 1,
			check: failureTyped("validation")},
		{name: "ignored error merges what is stored even under raise_error", directive: "format=text size=3000 faults=400@1",
			cont:   client.Continuation{OnFailure: "raise_error", ErrorPolicy: policy("stop_on_any_error,validation=ignore")},
			status: "partial", stop: "error_forbade", chunks: 1, failedRows: 1, check: resultIsPrefix},
		{name: "tool call kept, not continued", directive: "format=text size=3000 tool=1", tools: tools, status: "succeeded", stop: "completed", chunks: 2,
			check: toolCalls(false, false)},
		{name: "tool error (invalid arguments) stops by default", directive: "format=text size=3000 tool=1:invalid", tools: tools,
			status: "partial", stop: "error_forbade", chunks: 2, check: toolCalls(false, true)},
		{name: "tool error retried until the policy gives up", directive: "format=text size=3000 tool=1:invalid", tools: tools,
			cont: client.Continuation{ErrorPolicy: policy("retry_tool_errors(2)")}, status: "partial", stop: "retry_limit_reached", chunks: 2, failedRows: 2,
			check: failureTyped("tool")},
		{name: "tool error ignored", directive: "format=text size=3000 tool=1:invalid", tools: tools,
			cont: client.Continuation{ErrorPolicy: policy("ignore_tool_errors")}, status: "succeeded", stop: "completed", chunks: 2, check: toolCalls(false, true)},
		{name: "truncated tool call is marked, never continued", directive: "format=text size=3000 tool=1:truncated", tools: tools,
			cont: client.Continuation{ErrorPolicy: policy("ignore_tool_errors")}, status: "partial", stop: "finish_reason_received", chunks: 2, check: toolCalls(true, true)},
		{name: "record guard", directive: "format=csv size=4000", cont: client.Continuation{MaxRecords: 30}, status: "partial", stop: "guard_forbade", chunks: -1,
			check: func(t *testing.T, c outcome) {
				resultIsPrefix(t, c)
				if rows := strings.Count(c.result.Content, "\n") - 1; rows < 30 || rows > 60 {
					t.Fatalf("stopped with %d rows for max_records 30", rows)
				}
			}},
		{name: "400 on the first call fails", directive: "format=text size=3000 faults=400@0", status: "failed", stop: "error_forbade", chunks: 0, failedRows: 1},
		{name: "content filter", directive: "format=text size=3000 faults=content_filter@1", status: "partial", stop: "finish_reason_received", chunks: 2,
			check: eventLogged("content_filter")},
		{name: "other incompleteness", directive: "format=text size=3000 faults=cutoff@1", status: "partial", stop: "finish_reason_received", chunks: 2,
			check: eventLogged("incomplete")},
		{name: "reasoning-only response is no progress", directive: "format=text size=3000 reasoning=200", status: "partial", stop: "no_progress", chunks: 1},
		{name: "token budget", directive: "format=text size=3000", cont: client.Continuation{MaxTotalOutputTokens: 250},
			status: "partial", stop: "token_limit_reached", chunks: 3, check: resultIsPrefix},
		{name: "cost budget", directive: "format=text size=3000", cont: client.Continuation{MaxCostUSD: 0.0003},
			status: "partial", stop: "cost_limit_reached", chunks: -1, check: func(t *testing.T, c outcome) {
				resultIsPrefix(t, c)
				if c.meta.TotalCostEstimate == nil || *c.meta.TotalCostEstimate < 0.0003 || c.status.Chunks < 2 {
					t.Fatalf("stopped at cost %v after %d chunks", c.meta.TotalCostEstimate, c.status.Chunks)
				}
			}},
		{name: "cost budget needs a price", directive: "format=text size=3000", model: "sim-unpriced-2", cont: client.Continuation{MaxCostUSD: 1},
			status: "partial", stop: "cost_limit_reached", chunks: 1},
		{name: "time limit", directive: "format=text size=3000 faults=slow@1:1200ms", cont: client.Continuation{TimeLimitSeconds: 1},
			status: "partial", stop: "time_limit_reached", chunks: 2, check: resultIsPrefix},
		{name: "unpriced model", directive: "format=text size=1500", model: "sim-unpriced-1", status: "succeeded", stop: "completed", chunks: -1,
			check: func(t *testing.T, c outcome) {
				if c.meta.TotalCostEstimate != nil || !strings.Contains(c.meta.CostNote, "no price") || c.status.CostUSD != nil {
					t.Fatalf("an unpriced model got cost %v (%q)", c.meta.TotalCostEstimate, c.meta.CostNote)
				}
			}},
	}
	ids := make([]job, len(cases))
	for i, c := range cases {
		ids[i] = h.enqueue(c.directive+fmt.Sprintf(" seed=%d", i+1), client.Request{Model: c.model, MaxOutputTokens: 100, Continuation: c.cont, Tools: c.tools})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ids[i]
			st := h.wait(s.id, 90*time.Second)
			if st.Status != c.status || st.StopReason != c.stop || (c.chunks >= 0 && st.Chunks != c.chunks) {
				t.Fatalf("status %s stop_reason %s chunks %d error %q; want %s %s %d", st.Status, st.StopReason, st.Chunks, st.Error, c.status, c.stop, c.chunks)
			}
			if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND status = 'failed'`, s.id); n != c.failedRows {
				t.Fatalf("%d failed attempts on record, want %d", n, c.failedRows)
			}
			if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid`, s.id); n != len(h.sim.Calls(s.tag)) {
				t.Fatalf("llm_calls has %d attempts, the model saw %d calls", n, len(h.sim.Calls(s.tag)))
			}
			o := outcome{h: h, id: s.id, doc: s.doc, status: st, calls: h.sim.Calls(s.tag)}
			if res, err := h.client.Result(context.Background(), s.id); err == nil {
				o.result = res
				if err := json.Unmarshal(res.Metadata, &o.meta); err != nil {
					t.Fatal(err)
				}
				if o.meta.StopReason != c.stop {
					t.Fatalf("metadata stop_reason %q", o.meta.StopReason)
				}
			} else if c.chunks != 0 {
				t.Fatalf("no result: %v", err)
			}
			if c.status == "succeeded" && c.tools == nil && o.result.Content != s.doc {
				t.Fatal("succeeded with a document different from the model's")
			}
			if c.check != nil {
				c.check(t, o)
			}
		})
	}
}

type outcome struct {
	h      *harness
	id     string
	doc    string
	status client.Status
	result client.Result
	meta   jobs.Metadata
	calls  []simulator.Call
}

// resultIsPrefix: a stopped job's result is what the model wrote so far.
func resultIsPrefix(t *testing.T, c outcome) {
	t.Helper()
	if c.result.Content == "" || !strings.HasPrefix(c.doc, c.result.Content) {
		t.Fatalf("partial result (%d bytes) is not the start of the document", len(c.result.Content))
	}
	if c.status.Error == "" {
		t.Fatal("a stopped job must say why in its error")
	}
}

// failureTyped: the failed attempts on record carry the error type.
func failureTyped(typ string) func(t *testing.T, c outcome) {
	return func(t *testing.T, c outcome) {
		t.Helper()
		if n := c.h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND status = 'failed' AND error_type <> $2`, c.id, typ); n != 0 {
			t.Fatalf("%d failed attempts not typed %s", n, typ)
		}
	}
}

// toolCalls: the result keeps the tool call of the last chunk, marked as it should be.
func toolCalls(truncated, unusable bool) func(t *testing.T, c outcome) {
	return func(t *testing.T, c outcome) {
		t.Helper()
		if len(c.meta.ToolCalls) != 1 {
			t.Fatalf("%d tool calls in the metadata, want 1", len(c.meta.ToolCalls))
		}
		tc := c.meta.ToolCalls[0]
		if tc.Name != "lookup" || tc.Seq != 1 || tc.Truncated != truncated || (tc.Invalid != "" || tc.Truncated) != unusable {
			t.Fatalf("tool call %+v; want truncated=%v unusable=%v", tc, truncated, unusable)
		}
		if !strings.HasPrefix(c.doc, c.result.Content) || c.result.Content == "" {
			t.Fatal("the text before the tool call is not the start of the document")
		}
	}
}

func eventLogged(typ string) func(t *testing.T, c outcome) {
	return func(t *testing.T, c outcome) {
		t.Helper()
		if c.h.count(`SELECT count(*) FROM job_events WHERE job_id = $1::uuid AND type = $2 AND level = 'warn' AND message LIKE 'response resp_%'`, c.id, typ) != 1 {
			t.Fatalf("no %s warning event naming the response", typ)
		}
	}
}

// A guard stops the job once the answer contains its stop sequence.
func TestStopSequenceGuard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	doc, _, _ := simulator.DocumentFor("[[sim format=text size=3000 seed=77]]")
	sentinel := doc[600:612] // inside chunk 1 (chunks are about 400 bytes at 100 tokens)
	j := h.enqueue("format=text size=3000 seed=77", client.Request{MaxOutputTokens: 100, Continuation: client.Continuation{StopSequence: sentinel}})
	st := h.wait(j.id, 30*time.Second)
	if st.Status != "partial" || st.StopReason != "guard_forbade" || st.Chunks != 2 {
		t.Fatalf("status %s stop_reason %s chunks %d", st.Status, st.StopReason, st.Chunks)
	}
	res, err := h.client.Result(context.Background(), j.id)
	if err != nil || !strings.Contains(res.Content, sentinel) || !strings.HasPrefix(doc, res.Content) {
		t.Fatalf("result does not end past the sentinel: %v", err)
	}
}
