package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// Responses continues through the OpenAI Responses API with stored
// responses and previous_response_id: the server keeps the conversation, so a
// continuation sends only the short continuation prompt (and, after a broken
// stream, the text that arrived before it broke).
type Responses struct {
	client openai.Client
}

// NewResponses builds a Responses-only provider (New routes
// every strategy).
func NewResponses(cfg Config) *Responses {
	return &Responses{client: newClient(cfg)}
}

// Call implements Provider.
func (p *Responses) Call(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	body, err := json.Marshal(newWireRequest(req))
	if err != nil {
		return continuation.Response{}, &continuation.CallError{Type: carryovertype.ErrValidation, Err: fmt.Errorf("encode request: %w", err)}
	}
	return post(ctx, p.client, "responses", body, req.Stream, readResponsesStream, decodeResponses)
}

// decodeResponses reads a Responses API object.
func decodeResponses(raw []byte, latency time.Duration) (continuation.Response, error) {
	var resp wireResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return continuation.Response{Latency: latency}, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("response body is not a Responses API object: %w", err)}
	}
	return resp.normalize(latency)
}

// post sends a request body through openai-go — base URL, authentication,
// headers, error statuses as *openai.Error — and reads the reply: a stream
// with read, or the raw body with decode. Only the fields the worker uses
// are decoded, into small structs (wireResponse, chatWireCompletion);
// with a model's latency in the loop their cost does not show (make
// bench-pipeline with CARRYOVER_BENCH_LATENCY).
func post(ctx context.Context, c openai.Client, path string, body []byte, stream bool,
	read func(*http.Response, time.Time) (continuation.Response, error), decode func([]byte, time.Duration) (continuation.Response, error)) (continuation.Response, error) {
	start := time.Now()
	if stream {
		var hr *http.Response
		if err := c.Post(ctx, path, nil, &hr, option.WithRequestBody("application/json", body)); err != nil {
			return continuation.Response{Latency: time.Since(start)}, continuation.Classify(err)
		}
		return read(hr, start)
	}
	var raw []byte
	err := c.Post(ctx, path, nil, &raw, option.WithRequestBody("application/json", body))
	latency := time.Since(start)
	if err != nil {
		return continuation.Response{Latency: latency}, continuation.Classify(err)
	}
	return decode(raw, latency)
}

// normalize turns a decoded Responses object into a Response, and a failed
// or unreadable one into a CallError as well.
func (resp *wireResponse) normalize(latency time.Duration) (continuation.Response, error) {
	out := continuation.Response{
		ID:               resp.ID,
		RawStatus:        resp.Status,
		IncompleteReason: resp.IncompleteDetails.Reason,
		ErrorMessage:     resp.Error.Message,
		Latency:          latency,
		Usage: continuation.Usage{
			Input:     resp.Usage.InputTokens,
			Cached:    resp.Usage.InputTokensDetails.CachedTokens,
			Output:    resp.Usage.OutputTokens,
			Reasoning: resp.Usage.OutputTokensDetails.ReasoningTokens,
		},
	}
	out.Text, out.ToolCalls = resp.output()
	out.Finish = continuation.NormalizeResponses(out.RawStatus, out.IncompleteReason, len(out.ToolCalls) > 0)
	if len(out.ToolCalls) > 0 {
		markToolCalls(out.ToolCalls, out.Finish == continuation.FinishLength)
	}
	if out.Finish == continuation.FinishError {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Err: fmt.Errorf("response %s %s: %s", resp.ID, resp.Status, resp.Error.Message)}
	}
	if out.Finish == continuation.FinishMalformed {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true, Err: fmt.Errorf("response %q has unknown status %q", resp.ID, resp.Status)}
	}
	return out, nil
}

// wireResponse is the part of a Responses API object the worker reads.
type wireResponse struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	IncompleteDetails struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Output []wireItem `json:"output"`
	Usage  struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// wireItem is one output item: a message, or a function call.
type wireItem struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"` // custom tool calls
	Status    string `json:"status"`
}

// output concatenates the output_text parts of the message items, as
// openai-go's Response.OutputText does, and collects the tool calls.
func (r *wireResponse) output() (string, []carryovertype.ToolCall) {
	var text []byte
	var calls []carryovertype.ToolCall
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				if c.Type == "output_text" {
					text = append(text, c.Text...)
				}
			}
		case "function_call", "custom_tool_call":
			args := item.Arguments
			if item.Type == "custom_tool_call" {
				args = item.Input
			}
			// An item the server left incomplete was cut off.
			calls = append(calls, carryovertype.ToolCall{ID: item.ID, CallID: item.CallID, Name: item.Name, Arguments: args,
				Truncated: item.Status == "incomplete"})
		}
	}
	return string(text), calls
}

// wireRequest is a Responses API create request. Instructions and tools are
// not carried over by previous_response_id, so they are sent every time.
type wireRequest struct {
	Model              string          `json:"model"`
	Input              any             `json:"input"` // a string, or a list of messages
	Instructions       string          `json:"instructions,omitempty"`
	MaxOutputTokens    int             `json:"max_output_tokens,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Store              bool            `json:"store"`
	Tools              json.RawMessage `json:"tools,omitempty"`
	Text               *wireText       `json:"text,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
}

type wireText struct {
	Format wireFormat `json:"format"`
}

type wireFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

type wireMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

func newWireRequest(req continuation.CallRequest) wireRequest {
	w := wireRequest{Model: req.Model, Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Store: true,
		Tools: req.Tools, Stream: req.Stream}
	switch {
	case req.PreviousID != "" && req.Partial != "":
		// The previous response's text is on the server; what a broken
		// stream delivered after it is not, so it goes as an assistant turn.
		w.PreviousResponseID = req.PreviousID
		w.Input = []wireMessage{{Type: "message", Role: "assistant", Content: req.Partial},
			{Type: "message", Role: "user", Content: req.Prompt}}
	case req.PreviousID != "":
		w.PreviousResponseID, w.Input = req.PreviousID, req.Prompt
	case req.Partial != "":
		// A first response whose stream broke: nothing is stored on the
		// server, so the input goes again with the text received.
		msgs := toWire(messages(req.Input))
		w.Input = append(msgs, wireMessage{Type: "message", Role: "assistant", Content: req.Partial},
			wireMessage{Type: "message", Role: "user", Content: req.Prompt})
	case len(req.Input.Messages) > 0:
		w.Input = toWire(req.Input.Messages)
	default:
		w.Input = req.Input.Prompt
	}
	if req.JSONSchema != nil {
		w.Text = &wireText{Format: wireFormat{Type: "json_schema", Name: req.JSONSchema.Name,
			Schema: req.JSONSchema.Schema, Strict: req.JSONSchema.Strict}}
	}
	return w
}

func toWire(msgs []carryovertype.Message) []wireMessage {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		out[i] = wireMessage{Type: "message", Role: m.Role, Content: m.Content}
	}
	return out
}
