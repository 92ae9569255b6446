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
//
// The text is held to maxText bytes: a stream that goes on past it is a
// malformed model error (as is one whose body outgrows its cap, which ends
// a stream that sends no text at all).
func readResponsesStream(hr *http.Response, start time.Time, maxText int64) (continuation.Response, error) {
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
			if int64(text.Len()+len(ev.Delta)) > maxText {
				streamErr = tooMuchText(maxText)
				return true
			}
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
		if tooLarge(err) {
			return continuation.Response{ID: id, Latency: latency}, classify(err)
		}
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
// in a last chunk with no choices (stream_options.include_usage). The text
// and tool calls are held to maxText bytes and continuation.MaxToolCalls, as
// readResponsesStream's text is.
func readChatStream(hr *http.Response, start time.Time, maxText int64) (continuation.Response, error) {
	var c chatReply
	var text strings.Builder
	var calls []*toolPieces
	var size int64 // bytes of text and tool calls so far
	var streamErr error
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
		if chunk.Model != "" {
			c.model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			c.usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			size += int64(len(ch.Delta.Content))
			for _, d := range ch.Delta.ToolCalls {
				size += int64(len(d.ID) + len(d.Function.Name) + len(d.Function.Arguments))
			}
			if size > maxText {
				streamErr = tooMuchText(maxText)
				return true
			}
			text.WriteString(ch.Delta.Content)
			if calls, streamErr = addToolDeltas(calls, ch.Delta.ToolCalls); streamErr != nil {
				return true
			}
			if ch.JSON.FinishReason.Valid() {
				c.finish, c.finished = ch.FinishReason, true
			}
		}
		return false
	})
	latency := time.Since(start)
	if streamErr != nil {
		return continuation.Response{ID: c.id, Latency: latency}, streamErr
	}
	if tooLarge(err) {
		return continuation.Response{ID: c.id, Latency: latency}, classify(err)
	}
	c.text = text.String()
	for _, p := range calls {
		c.calls = append(c.calls, carryovertype.ToolCall{ID: p.id, CallID: p.id, Name: p.name.String(), Arguments: p.args.String()})
	}
	if !c.finished {
		// No finish_reason: the stream ended before the answer did.
		return broken(c.id, c.text, c.calls, latency, err)
	}
	return c.normalize(latency)
}

// toolPieces is a streamed tool call as its pieces arrive: builders, not
// strings, as a string grown by += is copied whole for every piece (a
// hostile stream of one-byte pieces would cost the square of its length).
type toolPieces struct {
	id         string
	name, args strings.Builder
}

// addToolDeltas adds a chunk's pieces of tool calls to the calls so far:
// each piece names its call by index and carries a piece of its name and
// arguments. Calls are numbered from 0 in the order they start, so a piece
// may name a call so far or the next one; an index that is negative, skips
// ahead or reaches continuation.MaxToolCalls is a malformed reply (before
// the bound, index 3,000,000 allocated that many calls and -1 panicked).
func addToolDeltas(calls []*toolPieces, deltas []openai.ChatCompletionChunkChoiceDeltaToolCall) ([]*toolPieces, error) {
	for _, d := range deltas {
		if d.Index < 0 || d.Index > int64(len(calls)) || d.Index >= continuation.MaxToolCalls {
			return calls, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
				Err: fmt.Errorf("streamed tool call index %d: the calls so far are 0..%d (at most %d calls)",
					d.Index, len(calls)-1, continuation.MaxToolCalls)}
		}
		if d.Index == int64(len(calls)) {
			calls = append(calls, &toolPieces{})
		}
		tc := calls[d.Index]
		if d.ID != "" {
			tc.id = d.ID
		}
		tc.name.WriteString(d.Function.Name)
		tc.args.WriteString(d.Function.Arguments)
	}
	return calls, nil
}

// tooMuchText is the error of a stream whose text outgrew maxText.
func tooMuchText(maxText int64) error {
	return &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
		Err: fmt.Errorf("the streamed reply carries more than %d bytes of text, the most a call of its output budget may return", maxText)}
}

// tooLarge reports whether err is a reply body past its cap.
func tooLarge(err error) bool {
	var big *errReplyTooLarge
	return errors.As(err, &big)
}
