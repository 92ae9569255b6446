package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// sseEvents calls fn with the data of every event of a text/event-stream
// body, read by openai-go's ssestream, until fn says stop or the body ends.
// It returns the read error, if the stream broke (nil at a clean end). As
// the SSE format has it, an event the body ends before closing with a blank
// line is not dispatched: the stream broke inside it.
func sseEvents(hr *http.Response, fn func(data []byte) (stop bool)) error {
	dec := ssestream.NewDecoder(hr)
	if dec == nil {
		return errors.New("the stream has no body")
	}
	defer dec.Close()
	for dec.Next() {
		// ssestream ends every data line with a newline; the lines are
		// joined by one, and the last one's is not part of the data.
		if fn(bytes.TrimSuffix(dec.Event().Data, []byte("\n"))) {
			return nil
		}
	}
	return dec.Err()
}

// broken is the Response of a stream that ended before the answer did: the
// text that arrived is kept (and paid for), so the job continues from it
// instead of paying for the whole answer again. With no text at all it is a
// transport error.
func broken(id, text string, calls []carryovertype.ToolCall, latency time.Duration, cause error) (continuation.Response, error) {
	if text == "" {
		if cause == nil {
			cause = fmt.Errorf("the stream ended before any output")
		}
		return continuation.Response{ID: id, Latency: latency}, &continuation.CallError{Type: carryovertype.ErrUnknown, Err: fmt.Errorf("stream broke: %w", cause)}
	}
	r := continuation.Response{ID: id, Text: text, RawStatus: "stream_broken", IncompleteReason: "stream_broken",
		Finish: continuation.FinishIncomplete, Latency: latency, StreamBroken: true}
	if len(calls) > 0 {
		r.ToolCalls = calls
		markToolCalls(r.ToolCalls, true)
	}
	return r, nil
}

// readResponsesStream reads a streamed Responses API reply. The terminal
// event (response.completed, .incomplete or .failed) carries the whole
// response, which is decoded and normalized as a non-streamed one is.
func readResponsesStream(hr *http.Response, start time.Time) (continuation.Response, error) {
	var id string
	var text strings.Builder
	var final *responses.Response // the terminal event's response
	var streamErr error
	err := sseEvents(hr, func(data []byte) bool {
		var ev responses.ResponseStreamEventUnion
		if json.Unmarshal(data, &ev) != nil {
			return false
		}
		switch ev.Type {
		case "response.created":
			id = ev.Response.ID
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			final = &ev.Response
			return true
		case "error":
			streamErr = &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Err: fmt.Errorf("stream error event: %s", ev.Message)}
			return true
		}
		return false
	})
	latency := time.Since(start)
	if streamErr != nil {
		return continuation.Response{ID: id, Latency: latency}, streamErr
	}
	if final == nil {
		return broken(id, text.String(), nil, latency, err)
	}
	r, err := normalizeResponse(final, latency)
	if r.ID == "" {
		// The terminal response named no ID: keep the one
		// response.created gave.
		r.ID = id
	}
	return r, err
}

// readChatStream reads streamed chat.completion.chunk events; usage arrives
// in a last chunk with no choices (stream_options.include_usage).
func readChatStream(hr *http.Response, start time.Time) (continuation.Response, error) {
	var c chatReply
	var text strings.Builder
	err := sseEvents(hr, func(data []byte) bool {
		if string(data) == "[DONE]" {
			return true
		}
		var chunk openai.ChatCompletionChunk
		if json.Unmarshal(data, &chunk) != nil {
			return false
		}
		if chunk.ID != "" {
			c.id = chunk.ID
		}
		if chunk.JSON.Usage.Valid() {
			c.usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			text.WriteString(ch.Delta.Content)
			c.calls = addToolDeltas(c.calls, ch.Delta.ToolCalls)
			if ch.JSON.FinishReason.Valid() {
				c.finish, c.finished = ch.FinishReason, true
			}
		}
		return false
	})
	latency := time.Since(start)
	c.text = text.String()
	if !c.finished {
		// No finish_reason: the stream ended before the answer did.
		return broken(c.id, c.text, c.calls, latency, err)
	}
	return c.normalize(latency)
}

// addToolDeltas adds a chunk's pieces of tool calls to the calls so far:
// each piece names its call by index and carries a piece of its name and
// arguments. A piece whose index skips ahead of the calls so far is
// malformed and dropped, so a hostile index cannot make it allocate.
func addToolDeltas(calls []carryovertype.ToolCall, deltas []openai.ChatCompletionChunkChoiceDeltaToolCall) []carryovertype.ToolCall {
	for _, d := range deltas {
		if d.Index < 0 || d.Index > int64(len(calls)) {
			continue
		}
		if d.Index == int64(len(calls)) {
			calls = append(calls, carryovertype.ToolCall{})
		}
		tc := &calls[d.Index]
		if d.ID != "" {
			tc.ID, tc.CallID = d.ID, d.ID
		}
		tc.Name += d.Function.Name
		tc.Arguments += d.Function.Arguments
	}
	return calls
}
