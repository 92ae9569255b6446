package continuation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Message is one turn of a conversational input.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Input is a job's input: a prompt string or a list of messages.
type Input struct {
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// Strategy is how a cut-off answer is continued.
type Strategy string

const (
	// StrategyStateful continues through the Responses API with
	// previous_response_id: the server keeps the conversation.
	StrategyStateful Strategy = "stateful"
	// StrategyHistory sends, over Chat Completions, the conversation so far
	// with the partial answer as an assistant message and a continuation
	// prompt; the prompts are never kept in the transcript.
	StrategyHistory Strategy = "history"
	// StrategyPrefill sends the partial answer as the final assistant
	// message for the server to continue in place (vLLM's
	// continue_final_message): nothing is repeated and no prompt is added.
	StrategyPrefill Strategy = "prefill"
	// StrategyOverlap is history whose prompt asks the model to repeat its
	// last lines between markers before continuing, so the merge finds the
	// exact join.
	StrategyOverlap Strategy = "overlap"
)

// Strategies lists every strategy.
func Strategies() []Strategy {
	return []Strategy{StrategyStateful, StrategyHistory, StrategyPrefill, StrategyOverlap}
}

// ValidStrategy reports whether s names a strategy.
func ValidStrategy(s Strategy) bool {
	return slices.Contains(Strategies(), s)
}

// JSONSchema asks for structured output matching a JSON Schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// CallRequest is one model call for one chunk.
type CallRequest struct {
	Model        string
	Instructions string
	Input        Input    // the job's input: sent on the first call, and on every call but stateful ones
	Strategy     Strategy // "" is stateful
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
	JSONSchema *JSONSchema
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

// ToolCall is a function call a response ended with. A call the worker
// cannot use is marked, never passed on as if complete.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Truncated: the output-token limit cut the call off.
	Truncated bool `json:"truncated,omitempty"`
	// Invalid says why the arguments are not a JSON object.
	Invalid string `json:"invalid,omitempty"`
}

// Response is a provider's answer, normalized.
type Response struct {
	ID               string
	Text             string
	RawStatus        string
	IncompleteReason string
	Finish           FinishReason
	ErrorMessage     string // for status failed
	Usage            Usage
	Latency          time.Duration
	ToolCalls        []ToolCall
	// StreamBroken: the stream ended before the response did; Text is what
	// arrived and Finish is incomplete.
	StreamBroken bool
}

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
