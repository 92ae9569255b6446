package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/store"
)

// Every strategy on every content type, through the simulator (Responses
// API for stateful, Chat Completions for the rest) on real Redis and
// Postgres: the merged document is the model's exactly, each chunk records
// the prompt its strategy sent, and the model saw what the strategy promises.
func TestStrategies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	formats := []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"}
	variants := []struct {
		name     string
		strategy client.Strategy
		behavior string
		api      string
	}{
		{"stateful", carryovertype.StrategyStateful, "exact", "responses"},
		{"history", carryovertype.StrategyHistory, "exact", "chat"},
		{"history, chatty model", carryovertype.StrategyHistory, "preamble", "chat"},
		{"prefill", carryovertype.StrategyPrefill, "exact", "chat"},
		{"overlap, obeyed", carryovertype.StrategyOverlap, "exact", "chat"},
		{"overlap, ignored", carryovertype.StrategyOverlap, "ignore_overlap", "chat"},
	}
	type run struct {
		j      job
		format string
	}
	runs := map[string]run{}
	seed := 0
	for _, v := range variants {
		for _, f := range formats {
			seed++
			j := h.enqueue(fmt.Sprintf("format=%s size=1400 seed=%d behavior=%s", f, seed, v.behavior),
				client.Request{Format: f, MaxOutputTokens: 120, Continuation: client.Continuation{Strategy: v.strategy}})
			runs[v.name+"/"+f] = run{j, f}
		}
	}
	for _, v := range variants {
		for _, f := range formats {
			t.Run(v.name+"/"+f, func(t *testing.T) {
				r := runs[v.name+"/"+f]
				st := h.wait(r.j.id, 120*time.Second)
				res, err := h.client.Result(context.Background(), r.j.id)
				if err != nil {
					t.Fatal(err)
				}
				if st.Status != "succeeded" || res.Content != r.j.doc {
					chunks, _ := h.store.Chunks(context.Background(), r.j.id, store.ChunkTexts)
					var b strings.Builder
					for _, c := range chunks {
						fmt.Fprintf(&b, "--- chunk %d (%s)\n%s\n", c.Seq, c.FinishReason, c.Content)
					}
					t.Fatalf("status %s (%s); document equal: %v\n--- got\n%s\n--- want\n%s\n%s", st.Status, st.Error, res.Content == r.j.doc, res.Content, r.j.doc, b.String())
				}
				var meta jobs.Metadata
				if err := json.Unmarshal(res.Metadata, &meta); err != nil {
					t.Fatal(err)
				}
				if meta.Strategy != string(v.strategy) || meta.ContinuationCount < 2 {
					t.Fatalf("strategy %q after %d continuations", meta.Strategy, meta.ContinuationCount)
				}
				calls := h.sim.Calls(r.j.tag)
				for _, c := range calls {
					if c.API != v.api {
						t.Fatalf("a %s call went to the %s API", v.strategy, c.API)
					}
				}
				for seq, p := range meta.Prompts {
					switch {
					case seq == 0 && p != "":
						t.Fatalf("a first call carries a continuation prompt: %q", p)
					case seq == 0:
					case v.strategy == carryovertype.StrategyPrefill && p != "":
						t.Fatalf("prefill sent a prompt: %q", p)
					case v.strategy == carryovertype.StrategyOverlap && !strings.Contains(p, "repeat the last") && p != continuation.ContinuePrompt(f):
						t.Fatalf("overlap prompt neither asks for the overlap nor falls back to history's: %q", p)
					case (v.strategy == carryovertype.StrategyHistory || v.strategy == carryovertype.StrategyStateful) &&
						(p == "" || strings.Contains(p, continuation.OverlapBegin)):
						t.Fatalf("%s prompt: %q", v.strategy, p)
					}
				}
				// The model was sent exactly the prompts on record, in order.
				var sent []string
				for _, c := range calls {
					if c.Depth > 0 || c.API == "chat" {
						sent = append(sent, c.Prompt)
					}
				}
				if v.strategy != carryovertype.StrategyPrefill && v.strategy != carryovertype.StrategyStateful {
					for seq := 1; seq < len(meta.Prompts); seq++ {
						if seq >= len(sent) || sent[seq] != meta.Prompts[seq] {
							t.Fatalf("chunk %d's prompt on record is not the one the model got", seq)
						}
					}
				}
				// Context is re-sent on every chat call: the input tokens of each
				// call grow with the answer so far, and the metadata shows it.
				if v.api == "chat" {
					for i := 1; i < len(meta.ChunkInputTokens); i++ {
						if meta.ChunkInputTokens[i] <= meta.ChunkInputTokens[i-1] {
							t.Fatalf("input tokens per call do not grow with the history: %v", meta.ChunkInputTokens)
						}
					}
				}
				if v.name == "overlap, obeyed" {
					for _, j := range meta.Joins {
						if strings.Contains(meta.Prompts[j.Seq], "repeat the last") && j.Method != "overlap_markers" {
							t.Fatalf("join %d placed by %s, not by the repeated lines", j.Seq, j.Method)
						}
					}
				}
			})
		}
	}
}

// A stream that breaks mid-answer keeps what arrived as the chunk and the
// job continues from it, on both APIs, without paying for the text again.
func TestStreamBreak(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	for i, s := range []client.Strategy{carryovertype.StrategyStateful, carryovertype.StrategyHistory, carryovertype.StrategyPrefill} {
		t.Run(string(s), func(t *testing.T) {
			j := h.enqueue(fmt.Sprintf("format=csv size=1500 seed=%d faults=break@1", 40+i),
				client.Request{Format: "csv", MaxOutputTokens: 120, Stream: true, Continuation: client.Continuation{Strategy: s}})
			st := h.wait(j.id, 60*time.Second)
			res, err := h.client.Result(context.Background(), j.id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != "succeeded" || res.Content != j.doc {
				t.Fatalf("status %s (%s); document equal: %v", st.Status, st.Error, res.Content == j.doc)
			}
			var meta jobs.Metadata
			if err := json.Unmarshal(res.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
			if len(meta.StreamBreaks) != 1 || meta.FinishReasons[meta.StreamBreaks[0]] != "incomplete" || !strings.Contains(meta.CostNote, "stream") {
				t.Fatalf("stream breaks %v, finish reasons %v, cost note %q", meta.StreamBreaks, meta.FinishReasons, meta.CostNote)
			}
			if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid`, j.id); n != 0 {
				t.Fatalf("a broken stream with text was recorded as %d failed attempts", n)
			}
		})
	}
}

// Structured output: the first request carries the schema, continuations
// do not (a strict schema would make the model start a new object), and the
// merged JSON is validated against it; a failure follows on_failure.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	good := &client.JSONSchema{Name: "items", Strict: true, Schema: json.RawMessage(`{"type":"object","required":["items"],
		"properties":{"items":{"type":"array","items":{"type":"object","required":["id","name"]}}}}`)}
	bad := &client.JSONSchema{Name: "report", Strict: true, Schema: json.RawMessage(`{"type":"object","required":["total"]}`)}
	cases := []struct {
		name      string
		schema    *client.JSONSchema
		onFailure string
		strategy  client.Strategy
		status    string
	}{
		{"conforms, stateful", good, "", carryovertype.StrategyStateful, "succeeded"},
		{"conforms, history", good, "", carryovertype.StrategyHistory, "succeeded"},
		{"does not conform, partial", bad, "", carryovertype.StrategyStateful, "partial"},
		{"does not conform, raise_error", bad, "raise_error", carryovertype.StrategyStateful, "failed"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := h.enqueue(fmt.Sprintf("format=json size=1500 seed=%d", 60+i), client.Request{Format: "json", MaxOutputTokens: 120,
				JSONSchema: c.schema, Continuation: client.Continuation{OnFailure: c.onFailure, Strategy: c.strategy}})
			st := h.wait(j.id, 60*time.Second)
			if st.Status != c.status {
				t.Fatalf("status %s (%s), want %s", st.Status, st.Error, c.status)
			}
			calls := h.sim.Calls(j.tag)
			if len(calls) < 3 || !calls[0].Structured {
				t.Fatalf("%d calls; the first carried the schema: %v", len(calls), len(calls) > 0 && calls[0].Structured)
			}
			for _, call := range calls[1:] {
				if call.Structured {
					t.Fatal("a continuation carried the strict schema")
				}
			}
			res, err := h.client.Result(context.Background(), j.id)
			if err != nil {
				t.Fatal(err)
			}
			var meta jobs.Metadata
			if err := json.Unmarshal(res.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
			if meta.SchemaValid == nil || *meta.SchemaValid != (c.status == "succeeded") || res.Content != j.doc {
				t.Fatalf("schema_valid %v (%s); document equal %v", meta.SchemaValid, meta.SchemaError, res.Content == j.doc)
			}
			if c.status != "succeeded" && !strings.Contains(st.Error, "json_schema") {
				t.Fatalf("the error does not say the schema failed: %q", st.Error)
			}
		})
	}
	// A schema that is not one is refused before anything is stored.
	_, err := h.client.Enqueue(context.Background(), client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "x"},
		JSONSchema: &client.JSONSchema{Name: "x", Schema: json.RawMessage(`{"type": 12}`)}})
	var ve *client.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "json_schema.schema" {
		t.Fatalf("a bad schema: %v", err)
	}
}

// A reasoning model that spends the whole budget thinking: without a
// ceiling the job stops (no_progress, in TestOutcomes); with one the call is
// made again with a doubled budget, every attempt on record.
func TestReasoningBudgetRaised(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	j := h.enqueue("format=text size=1200 seed=71 reasoning=150", client.Request{MaxOutputTokens: 100,
		Continuation: client.Continuation{MaxOutputTokensCeiling: 400}})
	st := h.wait(j.id, 60*time.Second)
	res, err := h.client.Result(context.Background(), j.id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "succeeded" || res.Content != j.doc {
		t.Fatalf("status %s (%s)", st.Status, st.Error)
	}
	chunks := h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid AND max_output_tokens = 200 AND reasoning_tokens = 150`, j.id)
	raised := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND error_type = 'reasoning_exhausted' AND output_tokens = 100`, j.id)
	if chunks != st.Chunks || raised != st.Chunks {
		t.Fatalf("%d chunks: %d made with 200 tokens and 150 reasoning, %d reasoning-only attempts on record", st.Chunks, chunks, raised)
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid`, j.id); n != len(h.sim.Calls(j.tag)) {
		t.Fatalf("llm_calls has %d attempts, the model saw %d", n, len(h.sim.Calls(j.tag)))
	}
}
