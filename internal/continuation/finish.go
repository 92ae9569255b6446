// Package continuation owns how one chunk is asked for and judged: what a
// model call is (CallRequest, Response, the Provider interface), what the
// wire's status means (finish-reason normalization), whether to continue
// (criteria, decisions, stop reasons), how errors are classified and what
// the error policy does, and the continuation prompts. The transport that
// makes the calls is package provider, which imports this one. Of ours it
// imports only carryovertype, the request's public types.
package continuation

// FinishReason is a provider-neutral reason why a response ended.
type FinishReason string

// Normalized finish reasons, as in DESIGN.md's table.
const (
	FinishStop          FinishReason = "stop"           // the model finished
	FinishLength        FinishReason = "length"         // cut off by the output-token limit: continue
	FinishToolCalls     FinishReason = "tool_calls"     // the model wants tools run: never continued
	FinishContentFilter FinishReason = "content_filter" // stopped by moderation: never continued
	FinishIncomplete    FinishReason = "incomplete"     // incomplete for another reason or cut off in transit
	FinishError         FinishReason = "error"          // the response failed
	FinishMalformed     FinishReason = "malformed"      // missing or unknown status
	// FinishPending: a background response still queued or in progress; it
	// has no answer yet and is never stored as a chunk.
	FinishPending FinishReason = "pending"
)

// NormalizeResponses maps a Responses API status and incomplete_details.reason
// to a finish reason. The Responses API has no finish_reason field: an
// incomplete response with reason max_output_tokens is the length case, and
// it arrives from openai-go with a nil error.
func NormalizeResponses(status, incompleteReason string, hasToolCalls bool) FinishReason {
	switch status {
	case "completed":
		if hasToolCalls {
			return FinishToolCalls
		}
		return FinishStop
	case "incomplete":
		switch incompleteReason {
		case "max_output_tokens":
			return FinishLength
		case "content_filter":
			return FinishContentFilter
		}
		return FinishIncomplete
	case "failed", "cancelled":
		return FinishError
	case "queued", "in_progress":
		return FinishPending
	}
	return FinishMalformed
}

// NormalizeChat maps a Chat Completions finish_reason.
func NormalizeChat(reason string) FinishReason {
	switch reason {
	case "stop":
		return FinishStop
	case "length":
		return FinishLength
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "content_filter":
		return FinishContentFilter
	}
	return FinishMalformed
}
