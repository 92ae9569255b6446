package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"

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
	var final json.RawMessage // the terminal event's response
	var done bool             // a terminal event arrived
	var streamErr error
	err := sseEvents(hr, func(data []byte) bool {
		var ev struct {
			Type     string          `json:"type"`
			Delta    string          `json:"delta"`
			Response json.RawMessage `json:"response"`
			Message  string          `json:"message"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return false
		}
		switch ev.Type {
		case "response.created":
			var created struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(ev.Response, &created) == nil {
				id = created.ID
			}
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			final, done = ev.Response, true
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
	if !done {
		return broken(id, text.String(), nil, latency, err)
	}
	r, err := decodeResponses(final, latency)
	if r.ID == "" {
		// The terminal response did not decode (or named no ID): keep the
		// one response.created gave.
		r.ID = id
	}
	return r, err
}

// readChatStream reads streamed chat.completion.chunk events; usage arrives
// in a last chunk with no choices (stream_options.include_usage).
func readChatStream(hr *http.Response, start time.Time) (continuation.Response, error) {
	var cc chatWireCompletion
	var text strings.Builder
	var calls []carryovertype.ToolCall
	var finish *string
	err := sseEvents(hr, func(data []byte) bool {
		if string(data) == "[DONE]" {
			return true
		}
		var ch struct {
			ID      string `json:"id"`
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatWireUsage `json:"usage"`
		}
		if json.Unmarshal(data, &ch) != nil {
			return false
		}
		if ch.ID != "" {
			cc.ID = ch.ID
		}
		if ch.Usage != nil {
			cc.Usage = *ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			text.WriteString(c.Delta.Content)
			for _, d := range c.Delta.ToolCalls {
				for len(calls) <= d.Index {
					calls = append(calls, carryovertype.ToolCall{})
				}
				tc := &calls[d.Index]
				if d.ID != "" {
					tc.ID, tc.CallID = d.ID, d.ID
				}
				tc.Name += d.Function.Name
				tc.Arguments += d.Function.Arguments
			}
			if c.FinishReason != nil {
				finish = c.FinishReason
			}
		}
		return false
	})
	latency := time.Since(start)
	if finish == nil {
		// No finish_reason: the stream ended before the answer did.
		return broken(cc.ID, text.String(), calls, latency, err)
	}
	return cc.normalize(finish, text.String(), calls, latency)
}
