package continuation

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/carryover/carryover/carryovertype"
)

// Input is a job's input: a prompt string or a list of messages.
type Input struct {
	Prompt   string                  `json:"prompt,omitempty"`
	Messages []carryovertype.Message `json:"messages,omitempty"`
}

// CallRequest is one model call for one chunk.
type CallRequest struct {
	Model        string
	Instructions string
	Input        Input                  // the job's input: sent on the first call, and on every call but stateful ones
	Strategy     carryovertype.Strategy // "" is stateful
	// PreviousID is the response to continue (stateful); "" for a first call.
	PreviousID string
	// Partial is the answer so far, when the server does not hold it: the
	// whole merged answer for history, prefill and overlap; for stateful, the
	// text that arrived after PreviousID's response (a stream that broke).
	Partial string
	// Prompt is the continuation prompt ("" for a first call and prefill).
	Prompt          string
	MaxOutputTokens int
	// Tools are function tools offered to the model, in the Responses API's
	// shape ({"type":"function","name",...}); the chat transport converts them.
	Tools json.RawMessage
	// JSONSchema asks for structured output. Only a first call carries it: a
	// continuation held to a strict schema would start a new object.
	JSONSchema *carryovertype.JSONSchema
	// Stream asks for a streamed reply; if the stream breaks mid-answer the
	// text received so far comes back (StreamBroken) instead of nothing.
	Stream bool
}

// Usage is what a call consumed. Reasoning tokens are inside Output.
type Usage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_tokens"`
}

// Response is a provider's answer, normalized.
type Response struct {
	ID               string
	Model            string // the model the provider says answered (maybe a snapshot of the one asked for); "" if unsaid
	Text             string
	RawStatus        string
	IncompleteReason string
	Finish           FinishReason
	ErrorMessage     string // for status failed
	Usage            Usage
	Latency          time.Duration
	ToolCalls        []carryovertype.ToolCall
	// StreamBroken: the stream ended before the response did; Text is what
	// arrived and Finish is incomplete.
	StreamBroken bool
	// ServerLatency is how long the provider took from creating the
	// response to finishing it, by its own clock (created_at, completed_at);
	// 0 when it does not say. For a background call it is the latency to
	// learn from: the time the poll saw the end also counts the poll's delay.
	ServerLatency time.Duration
}

// Pending reports whether the response is a background one still queued or
// in progress.
func (r Response) Pending() bool { return r.Finish == FinishPending }

// ToolError describes the first unusable tool call, or "" when every call
// (if any) is usable: a truncated call or arguments that are not JSON.
func (r Response) ToolError() string {
	for _, c := range r.ToolCalls {
		switch {
		case c.Truncated:
			return fmt.Sprintf("tool call %s (%s) was cut off by the output-token limit", c.Name, c.CallID)
		case c.Invalid != "":
			return fmt.Sprintf("tool call %s (%s): %s", c.Name, c.CallID, c.Invalid)
		}
	}
	return ""
}

// Provider makes one model call. A response that arrived — even incomplete or
// failed — is returned with a nil error; an error means nothing usable came
// back and is a *CallError.
type Provider interface {
	Call(ctx context.Context, req CallRequest) (Response, error)
}

// Detacher is a Provider that can also run a stateful call detached from
// the task waiting on it (the Responses API's background mode): Start
// returns as soon as the provider has the call, with its id and a pending
// status; Poll reads its state; Cancel stops it and says what was used up
// to then. A response the provider no longer knows (expired) is a
// *CallError with HTTPStatus 404. maxOutputTokens is the budget the call
// was made with, which bounds the reply Poll and Cancel read (0 for
// unknown: the largest any job may ask).
type Detacher interface {
	Provider
	Start(ctx context.Context, req CallRequest) (Response, error)
	Poll(ctx context.Context, responseID string, maxOutputTokens int) (Response, error)
	Cancel(ctx context.Context, responseID string, maxOutputTokens int) (Response, error)
}
