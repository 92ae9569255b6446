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

	r, err := readResponsesStream(sse(created, delta, completed), time.Now())
	if err != nil || r.ID != "resp_s" || r.Text != "whole" || r.Finish != continuation.FinishStop || r.Usage.Output != 5 || r.StreamBroken {
		t.Fatalf("completed stream: %+v %v", r, err)
	}

	for _, terminal := range []string{
		`{"type":"response.completed","response":"not an object"}`,
		`{"type":"response.incomplete"}`,
	} {
		r, err = readResponsesStream(sse(created, delta, terminal), time.Now())
		var ce *continuation.CallError
		if !errors.As(err, &ce) || !ce.Malformed || ce.Type != carryovertype.ErrModel || ce.HTTPStatus != http.StatusOK || r.ID != "resp_s" || r.Text != "" {
			t.Fatalf("%s: %+v %v", terminal, r, err)
		}
	}

	r, err = readResponsesStream(sse(created, delta), time.Now())
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
