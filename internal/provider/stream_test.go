package provider

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// sse is a response whose body is the given events, each a data line.
func sse(events ...string) *http.Response {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(b.String()))}
}

// A streamed Responses reply's terminal event is read as a non-streamed
// body is; one that is not a Responses object is malformed, and keeps the ID
// response.created gave.
func TestResponsesStreamTerminal(t *testing.T) {
	created := `{"type":"response.created","response":{"id":"resp_s","status":"in_progress","usage":"not an object"}}`
	delta := `{"type":"response.output_text.delta","delta":"partial"}`
	completed := `{"type":"response.completed","response":{"id":"resp_s","status":"completed",` +
		`"output":[{"type":"message","content":[{"type":"output_text","text":"whole"}]}],"usage":{"input_tokens":3,"output_tokens":5}}}`

	r, err := readResponsesStream(sse(created, delta, completed), time.Now(), 1<<20)
	if err != nil || r.ID != "resp_s" || r.Text != "whole" || r.Finish != continuation.FinishStop || r.Usage.Output != 5 || r.StreamBroken {
		t.Fatalf("completed stream: %+v %v", r, err)
	}

	for _, terminal := range []string{
		`{"type":"response.completed","response":"not an object"}`,
		`{"type":"response.incomplete"}`,
	} {
		r, err = readResponsesStream(sse(created, delta, terminal), time.Now(), 1<<20)
		var ce *continuation.CallError
		if !errors.As(err, &ce) || !ce.Malformed || ce.Type != carryovertype.ErrModel || ce.HTTPStatus != http.StatusOK || r.ID != "resp_s" || r.Text != "" {
			t.Fatalf("%s: %+v %v", terminal, r, err)
		}
	}

	r, err = readResponsesStream(sse(created, delta), time.Now(), 1<<20)
	if err != nil || r.ID != "resp_s" || r.Text != "partial" || !r.StreamBroken || r.Finish != continuation.FinishIncomplete {
		t.Fatalf("broken stream: %+v %v", r, err)
	}
}

// An event's data lines are joined by newlines; an event the body ends
// before closing is not dispatched.
func TestSSEEvents(t *testing.T) {
	body := "event: x\ndata: {\"a\":\ndata: 1}\n\n: a comment\ndata: [DONE]\n\ndata: unclosed\n"
	hr := &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body))}
	var got []string
	if err := sseEvents(hr, func(data []byte) bool { got = append(got, string(data)); return false }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"{\"a\":\n1}", "[DONE]"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A streamed chat completion's tool calls are gathered from their pieces by
// index; usage comes from the last chunk. (Hostile indexes:
// TestSecurityToolCallIndex.)
func TestChatStreamToolDeltas(t *testing.T) {
	chunk := func(s string) string { return `{"id":"cc_1","object":"chat.completion.chunk","choices":[` + s + `]}` }
	events := []string{
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"get","arguments":"{\"k\":"}}]}}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"put","arguments":"{}"}}]},"finish_reason":"tool_calls"}`),
		`{"id":"cc_1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":9}}`,
		"[DONE]",
	}
	r, err := readChatStream(sse(events...), time.Now(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []carryovertype.ToolCall{{ID: "call_a", CallID: "call_a", Name: "get", Arguments: `{"k":1}`},
		{ID: "call_b", CallID: "call_b", Name: "put", Arguments: "{}"}}
	if !slices.Equal(r.ToolCalls, want) || r.ID != "cc_1" || r.Usage.Input != 7 || r.Usage.Output != 9 || r.RawStatus != "tool_calls" {
		t.Fatalf("got %+v", r)
	}

	r, err = readChatStream(sse(events[:2]...), time.Now(), 1<<20)
	if err == nil || r.StreamBroken {
		t.Fatalf("a stream with tool pieces and no text that breaks is a transport error: %+v %v", r, err)
	}
}
