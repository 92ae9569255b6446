package carryovertype

import (
	"encoding/json"
	"slices"
)

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
