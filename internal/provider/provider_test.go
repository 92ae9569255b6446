package provider_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/simulator"
)

// newResponsesSim starts a simulator and returns the Responses provider on
// it, and a function making one first call with a directive.
func newResponsesSim(t *testing.T) (*provider.Responses, func(directive string, max int) (continuation.Response, error)) {
	t.Helper()
	ts := httptest.NewServer(simulator.New(simulator.Config{}))
	t.Cleanup(ts.Close)
	p := provider.NewResponses(provider.Config{BaseURL: ts.URL + "/v1", APIKey: "sk-test"})
	return p, func(directive string, max int) (continuation.Response, error) {
		return p.Call(context.Background(), continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: max,
			Input: continuation.Input{Prompt: "[[sim " + directive + "]] go"}})
	}
}

// The provider against the simulator's real wire format, through openai-go:
// a cut-off answer chains by previous_response_id to the whole document,
// with its usage read.
func TestResponsesWireChain(t *testing.T) {
	p, call := newResponsesSim(t)
	doc, _, _ := simulator.DocumentFor("[[sim format=csv size=600 seed=3]] go")
	r, err := call("format=csv size=600 seed=3", 64)
	if err != nil || r.Finish != continuation.FinishLength || r.RawStatus != "incomplete" || r.IncompleteReason != "max_output_tokens" {
		t.Fatalf("first call: %+v %v", r, err)
	}
	got := r.Text
	for i := 0; r.Finish == continuation.FinishLength; i++ {
		if i > 50 {
			t.Fatal("never finished")
		}
		r, err = p.Call(context.Background(), continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64, PreviousID: r.ID,
			Prompt: continuation.ContinuePrompt("csv")})
		if err != nil {
			t.Fatal(err)
		}
		got += r.Text
	}
	if r.Finish != continuation.FinishStop || got != doc {
		t.Fatalf("finish %s; document equal=%v", r.Finish, got == doc)
	}
	if r.Usage.Output <= 0 || r.Usage.Input <= 0 || r.Usage.Cached <= 0 {
		t.Fatalf("usage not read: %+v", r.Usage)
	}
}

// Every finish reason is normalized as DESIGN.md's table says.
func TestResponsesWire(t *testing.T) {
	p, call := newResponsesSim(t)
	t.Run("messages input and instructions", func(t *testing.T) {
		doc, _, _ := simulator.DocumentFor("[[sim format=json size=300 seed=5]]")
		r, err := p.Call(context.Background(), continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 4096, Instructions: "Answer in JSON.",
			Input: continuation.Input{Messages: []carryovertype.Message{{Role: "system", Content: "You write data."},
				{Role: "user", Content: "[[sim format=json size=300 seed=5]] Produce it."}}}})
		if err != nil || r.Finish != continuation.FinishStop || r.Text != doc {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("reasoning tokens are inside output tokens", func(t *testing.T) {
		r, err := call("format=text size=2000 reasoning=20", 100)
		if err != nil || r.Usage.Reasoning != 20 || r.Usage.Output != 100 {
			t.Fatalf("%+v %v", r.Usage, err)
		}
	})
	t.Run("content filter", func(t *testing.T) {
		r, err := call("format=text faults=content_filter@0", 64)
		if err != nil || r.Finish != continuation.FinishContentFilter {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("other incompleteness", func(t *testing.T) {
		r, err := call("format=text faults=cutoff@0", 64)
		if err != nil || r.Finish != continuation.FinishIncomplete || r.ID == "" {
			t.Fatalf("%+v %v", r, err)
		}
	})
}

// Every fault is classified as DESIGN.md's table says, and no error message
// carries the API key.
func TestResponsesWireErrors(t *testing.T) {
	_, call := newResponsesSim(t)
	errCases := []struct {
		directive string
		typ       carryovertype.ErrorType
		status    int
		malformed bool
	}{
		{"faults=429@0:2", carryovertype.ErrRateLimit, 429, false},
		{"faults=500@0", carryovertype.ErrModel, 500, false},
		{"faults=400@0", carryovertype.ErrValidation, 400, false},
		{"faults=failed@0", carryovertype.ErrModel, 200, false},
		{"faults=malformed@0", carryovertype.ErrModel, 0, true},
	}
	for _, c := range errCases {
		t.Run(c.directive, func(t *testing.T) {
			_, err := call("format=text "+c.directive, 64)
			ce := continuation.Classify(err)
			if err == nil || ce.Type != c.typ || (c.status != 0 && ce.HTTPStatus != c.status) || ce.Malformed != c.malformed {
				t.Fatalf("err=%v classified %+v", err, ce)
			}
			if c.typ == carryovertype.ErrRateLimit && ce.RetryAfter != 2*time.Second {
				t.Fatalf("Retry-After not read: %s", ce.RetryAfter)
			}
			if strings.Contains(err.Error(), "sk-test") {
				t.Fatal("API key in an error message")
			}
		})
	}
}

// Tool calls, streams and breaks read the same from both APIs, streamed or
// not: a call is marked truncated or invalid, never passed on as complete,
// and a broken stream keeps the text that arrived.
func TestToolCallsAndStreams(t *testing.T) {
	ts := httptest.NewServer(simulator.New(simulator.Config{}))
	defer ts.Close()
	p := provider.New(provider.Config{BaseURL: ts.URL + "/v1", APIKey: "sk-test"})
	tools := []byte(`[{"type":"function","name":"lookup","parameters":{"type":"object"}}]`)
	cases := []struct {
		directive string
		max       int
		finish    continuation.FinishReason
		truncated bool
		invalid   bool
		broken    bool
	}{
		{"tool=0", 200, continuation.FinishToolCalls, false, false, false},
		{"tool=0:invalid", 200, continuation.FinishToolCalls, false, true, false},
		{"tool=0:truncated", 60, continuation.FinishLength, true, true, false},
		{"faults=break@0", 100, continuation.FinishIncomplete, false, false, true},
	}
	n := 0
	for _, strategy := range []carryovertype.Strategy{carryovertype.StrategyStateful, carryovertype.StrategyHistory} {
		for _, stream := range []bool{false, true} {
			for _, c := range cases {
				if c.broken && !stream {
					continue // a non-streamed break is a transport error, not a response
				}
				n++
				name := fmt.Sprintf("%s/stream=%v/%s", strategy, stream, c.directive)
				t.Run(name, func(t *testing.T) {
					r, err := p.Call(context.Background(), continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: c.max,
						Strategy: strategy, Stream: stream, Tools: tools,
						Input: continuation.Input{Prompt: fmt.Sprintf("[[sim format=text size=3000 seed=%d %s]] go", n, c.directive)}})
					if err != nil {
						t.Fatal(err)
					}
					if r.Finish != c.finish || r.StreamBroken != c.broken {
						t.Fatalf("finish %s broken %v", r.Finish, r.StreamBroken)
					}
					if c.broken {
						if r.Text == "" || len(r.ToolCalls) != 0 {
							t.Fatalf("a broken stream kept %d bytes and %d calls", len(r.Text), len(r.ToolCalls))
						}
						return
					}
					if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "lookup" || r.ToolCalls[0].CallID == "" {
						t.Fatalf("tool calls %+v", r.ToolCalls)
					}
					tc := r.ToolCalls[0]
					if tc.Truncated != c.truncated || (tc.Invalid != "") != c.invalid || (r.ToolError() != "") != (c.truncated || c.invalid) {
						t.Fatalf("tool call %+v, tool error %q", tc, r.ToolError())
					}
				})
			}
		}
	}
}
