// Package provider is the transport to OpenAI-compatible model servers: the
// Responses API (stateful calls) and Chat Completions (history, prefill,
// overlap), streamed or not, and the wire types they speak. It implements
// continuation.Provider; what a response means for the job is decided in
// package continuation, which this package imports and never the reverse.
package provider

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// Config configures the OpenAI-compatible providers.
type Config struct {
	BaseURL    string // "" for OpenAI itself
	APIKey     string
	HTTPClient *http.Client
	// PrefillFields are added to a prefill request's body to make the server
	// continue the final assistant message in place. Default: vLLM's
	// {"continue_final_message": true, "add_generation_prompt": false}.
	PrefillFields map[string]any
}

// DefaultPrefillFields are vLLM's request fields for continuing the final
// assistant message.
func DefaultPrefillFields() map[string]any {
	return map[string]any{"continue_final_message": true, "add_generation_prompt": false}
}

// OpenAI is the provider for OpenAI-compatible servers: stateful calls go
// to the Responses API, history, prefill and overlap to Chat Completions.
type OpenAI struct {
	responses *Responses
	chat      *Chat
}

// New builds the OpenAI-compatible provider on openai-go. openai-go's
// own retries are off: the queue owns retries, so every attempt is recorded
// and a 429's Retry-After is honored without holding a worker slot.
func New(cfg Config) *OpenAI {
	c := newClient(cfg)
	fields := cfg.PrefillFields
	if fields == nil {
		fields = DefaultPrefillFields()
	}
	return &OpenAI{responses: &Responses{client: c}, chat: newChat(c, fields)}
}

// Call implements continuation.Provider.
func (p *OpenAI) Call(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	if req.Strategy == "" || req.Strategy == carryovertype.StrategyStateful {
		return p.responses.Call(ctx, req)
	}
	return p.chat.Call(ctx, req)
}

// Start implements continuation.Detacher (the Responses API's background mode).
func (p *OpenAI) Start(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	return p.responses.Start(ctx, req)
}

// Poll implements continuation.Detacher.
func (p *OpenAI) Poll(ctx context.Context, responseID string, maxOutputTokens int) (continuation.Response, error) {
	return p.responses.Poll(ctx, responseID, maxOutputTokens)
}

// Cancel implements continuation.Detacher.
func (p *OpenAI) Cancel(ctx context.Context, responseID string, maxOutputTokens int) (continuation.Response, error) {
	return p.responses.Cancel(ctx, responseID, maxOutputTokens)
}

func newClient(cfg Config) openai.Client {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return openai.NewClient(opts...)
}

// messages is the input as a list of turns (a prompt is one user turn).
func messages(in continuation.Input) []carryovertype.Message {
	if len(in.Messages) > 0 {
		return in.Messages
	}
	return []carryovertype.Message{{Role: "user", Content: in.Prompt}}
}

// markToolCalls marks each call whose arguments cannot be used; cutOff says
// the response was cut by the output-token limit, which cuts its last call.
func markToolCalls(calls []carryovertype.ToolCall, cutOff bool) {
	for i := range calls {
		c := &calls[i]
		if cutOff && i == len(calls)-1 {
			c.Truncated = true
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil {
			c.Invalid = "arguments are not a JSON object: " + err.Error()
		}
	}
}
