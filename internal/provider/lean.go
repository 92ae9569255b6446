package provider

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/continuation"
)

// leanResponse is what the service reads of a Responses API object, for
// its common shape: text (message and reasoning items), usage, status. A
// worker with thousands of background calls in flight reads one such object
// per poll, and openai-go's decoder, which builds every field of every item
// through reflection and keeps each field's raw JSON, was about a tenth of
// the worker's CPU (a CPU profile of the worker during make bench-inflight;
// BenchmarkDecodeResponse compares the two); this is a plain encoding/json
// decode of a few fields. Anything else — a tool call, an item
// type or a field of a type this does not know — goes to openai-go's
// decoder as before (decodeResponses), so the two never have to agree on
// more than this shape, which TestLeanDecodeAgrees checks.
type leanResponse struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	IncompleteDetails *leanIncomplete `json:"incomplete_details"`
	Error             *leanError      `json:"error"`
	CreatedAt         float64         `json:"created_at"`
	CompletedAt       *float64        `json:"completed_at"`
	Output            []leanItem      `json:"output"`
	Usage             *leanUsage      `json:"usage"`
}

type leanIncomplete struct {
	Reason string `json:"reason"`
}

type leanError struct {
	Message string `json:"message"`
}

type leanItem struct {
	Type    string        `json:"type"`
	Content []leanContent `json:"content"`
}

type leanContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type leanUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// decodeLean decodes raw if it has the common shape: false for anything
// else (a body that is not such an object, an item other than a message or
// reasoning), which openai-go's decoder then reads.
func decodeLean(raw []byte) (*leanResponse, bool) {
	var r leanResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false
	}
	for _, it := range r.Output {
		if it.Type != "message" && it.Type != "reasoning" {
			return nil, false
		}
	}
	return &r, true
}

// normalize is normalizeResponse for the common shape.
func (r *leanResponse) normalize(latency time.Duration) (continuation.Response, error) {
	out := continuation.Response{ID: r.ID, Model: r.Model, RawStatus: r.Status, Latency: latency}
	if r.IncompleteDetails != nil {
		out.IncompleteReason = r.IncompleteDetails.Reason
	}
	if r.Error != nil {
		out.ErrorMessage = r.Error.Message
	}
	var completed float64
	if r.CompletedAt != nil {
		completed = *r.CompletedAt
	}
	out.ServerLatency = serverLatency(r.CreatedAt, completed)
	var text strings.Builder // as openai-go's OutputText: every output_text part of every item
	for _, it := range r.Output {
		for _, c := range it.Content {
			if c.Type == "output_text" {
				text.WriteString(c.Text)
			}
		}
	}
	out.Text = text.String()
	if u := r.Usage; u != nil {
		out.Usage = continuation.Usage{Input: u.InputTokens, Cached: u.InputTokensDetails.CachedTokens,
			Output: u.OutputTokens, Reasoning: u.OutputTokensDetails.ReasoningTokens}
	}
	return finishResponse(out)
}
