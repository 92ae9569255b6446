package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// Chat continues over Chat Completions, which keeps no state: every
// call sends the conversation, with the answer so far as an assistant
// message (history and overlap add a continuation prompt after it; prefill
// asks the server to continue that message in place).
type Chat struct {
	client openai.Client
	// prefill is the JSON object of the fields a prefill call adds, less its
	// opening brace, to be spliced in after the body's last member (nil for
	// none); prefillErr says why the fields could not be encoded.
	prefill    []byte
	prefillErr error
}

// newChat builds a Chat whose prefill calls add fields to
// the request body. The fields are encoded once, here; if they cannot be,
// every prefill call fails with the reason (the other calls do not need them).
func newChat(c openai.Client, fields map[string]any) *Chat {
	p := &Chat{client: c}
	if len(fields) > 0 {
		b, err := json.Marshal(fields)
		if err != nil {
			p.prefillErr = fmt.Errorf("prefill fields: %w", err)
		} else {
			p.prefill = b[1:]
		}
	}
	return p
}

// Call implements Provider.
func (p *Chat) Call(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	body, err := p.encode(req)
	if err != nil {
		return continuation.Response{}, &continuation.CallError{Type: carryovertype.ErrValidation, Err: fmt.Errorf("encode request: %w", err)}
	}
	return post(ctx, p.client, "chat/completions", body, req.Stream, req.MaxOutputTokens, readChatStream, decodeChat)
}

// decodeChat reads a chat completion into openai-go's type.
func decodeChat(raw []byte, latency time.Duration) (continuation.Response, error) {
	var cc openai.ChatCompletion
	if err := json.Unmarshal(raw, &cc); err != nil || len(cc.Choices) == 0 {
		if err == nil {
			err = fmt.Errorf("no choices")
		}
		return continuation.Response{Latency: latency}, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("response body is not a chat completion: %w", err)}
	}
	ch := cc.Choices[0]
	calls := make([]carryovertype.ToolCall, 0, len(ch.Message.ToolCalls))
	for _, tc := range ch.Message.ToolCalls {
		calls = append(calls, carryovertype.ToolCall{ID: tc.ID, CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	c := chatReply{id: cc.ID, model: cc.Model, text: ch.Message.Content, calls: calls, usage: cc.Usage,
		finish: ch.FinishReason, finished: ch.JSON.FinishReason.Valid()}
	return c.normalize(latency)
}

// chatReply is a completion as decoded or as gathered from a stream's
// chunks; finished says a finish_reason arrived.
type chatReply struct {
	id       string
	model    string
	text     string
	calls    []carryovertype.ToolCall
	usage    openai.CompletionUsage
	finish   string
	finished bool
}

// normalize builds the Response of a completed (or streamed) completion.
func (c *chatReply) normalize(latency time.Duration) (continuation.Response, error) {
	u := c.usage
	out := continuation.Response{ID: c.id, Model: c.model, Text: c.text, Latency: latency, Usage: continuation.Usage{
		Input: u.PromptTokens, Cached: u.PromptTokensDetails.CachedTokens,
		Output: u.CompletionTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens,
	}}
	if !c.finished {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("completion %q has no finish_reason", c.id)}
	}
	out.RawStatus = c.finish
	out.Finish = continuation.NormalizeChat(c.finish)
	if len(c.calls) > 0 {
		out.ToolCalls = c.calls
		markToolCalls(out.ToolCalls, out.Finish == continuation.FinishLength)
	}
	if out.Finish == continuation.FinishMalformed {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("completion %q has unknown finish_reason %q", c.id, c.finish)}
	}
	return out, nil
}

type chatWireRequest struct {
	Model               string                  `json:"model"`
	Messages            []carryovertype.Message `json:"messages"`
	MaxCompletionTokens int                     `json:"max_completion_tokens,omitempty"`
	Tools               []chatWireTool          `json:"tools,omitempty"`
	ResponseFormat      *chatResponseFormat     `json:"response_format,omitempty"`
	Stream              bool                    `json:"stream,omitempty"`
	StreamOptions       *chatStreamOptions      `json:"stream_options,omitempty"`
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatWireTool struct {
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"`
}

type chatResponseFormat struct {
	Type       string                    `json:"type"`
	JSONSchema *carryovertype.JSONSchema `json:"json_schema,omitempty"`
}

// encode builds the request body for the strategy.
func (p *Chat) encode(req continuation.CallRequest) ([]byte, error) {
	w := chatWireRequest{Model: req.Model, MaxCompletionTokens: req.MaxOutputTokens, Stream: req.Stream}
	if req.Stream {
		w.StreamOptions = &chatStreamOptions{IncludeUsage: true}
	}
	if req.Instructions != "" {
		w.Messages = append(w.Messages, carryovertype.Message{Role: "system", Content: req.Instructions})
	}
	w.Messages = append(w.Messages, messages(req.Input)...)
	prefill := false
	if req.Partial != "" {
		w.Messages = append(w.Messages, carryovertype.Message{Role: "assistant", Content: req.Partial})
		if req.Strategy == carryovertype.StrategyPrefill {
			prefill = true
		} else {
			w.Messages = append(w.Messages, carryovertype.Message{Role: "user", Content: req.Prompt})
		}
	}
	tools, err := chatTools(req.Tools)
	if err != nil {
		return nil, err
	}
	w.Tools = tools
	if req.JSONSchema != nil {
		w.ResponseFormat = &chatResponseFormat{Type: "json_schema", JSONSchema: req.JSONSchema}
	}
	body, err := json.Marshal(w)
	if err != nil || !prefill {
		return body, err
	}
	if p.prefillErr != nil {
		return nil, p.prefillErr
	}
	if len(p.prefill) == 0 {
		return body, nil
	}
	// Splice the deployment's prefill fields into the object.
	out := make([]byte, 0, len(body)+len(p.prefill))
	out = append(out, body[:len(body)-1]...)
	out = append(out, ',')
	out = append(out, p.prefill...)
	return out, nil
}

// chatTools converts Responses-shaped function tools to Chat's shape.
func chatTools(raw json.RawMessage) ([]chatWireTool, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	out := make([]chatWireTool, 0, len(tools))
	for _, t := range tools {
		fn := map[string]json.RawMessage{}
		for k, v := range t {
			if k != "type" {
				fn[k] = v
			}
		}
		b, err := json.Marshal(fn)
		if err != nil {
			return nil, err
		}
		out = append(out, chatWireTool{Type: "function", Function: b})
	}
	return out, nil
}
