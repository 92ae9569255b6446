package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

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
	resp, err := post(ctx, p.client, "responses", body, req.Stream, req.MaxOutputTokens, readResponsesStream, decodeResponses)
	if err == nil && resp.Pending() {
		// Only a background request may be answered before it is done.
		return resp, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("response %s is %s, though it was not asked for in the background", resp.ID, resp.RawStatus)}
	}
	return resp, err
}

// Start implements continuation.Detacher: it creates the response in
// background mode (stored, as background mode requires, and never streamed:
// the waiting is done by Poll) and returns it as the provider first answers,
// normally queued.
func (p *Responses) Start(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	w := newWireRequest(req)
	w.Stream, w.Background = false, true
	body, err := json.Marshal(w)
	if err != nil {
		return continuation.Response{}, &continuation.CallError{Type: carryovertype.ErrValidation, Err: fmt.Errorf("encode request: %w", err)}
	}
	resp, err := post(ctx, p.client, "responses", body, false, req.MaxOutputTokens, nil, decodeResponses)
	if err == nil && resp.ID == "" {
		return resp, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("the background response came back without an id")}
	}
	return resp, err
}

// Poll implements continuation.Detacher: GET /responses/{id}.
func (p *Responses) Poll(ctx context.Context, responseID string, maxOutputTokens int) (continuation.Response, error) {
	return p.fetch(ctx, http.MethodGet, responseID, "", maxOutputTokens)
}

// Cancel implements continuation.Detacher: POST /responses/{id}/cancel. The
// response it returns carries the usage billed up to the cancel.
func (p *Responses) Cancel(ctx context.Context, responseID string, maxOutputTokens int) (continuation.Response, error) {
	return p.fetch(ctx, http.MethodPost, responseID, "/cancel", maxOutputTokens)
}

// fetch reads a stored response by id (suffix "" reads it, "/cancel"
// cancels it) through openai-go, and normalizes it; the body is capped for
// the call's budget, as post's is.
func (p *Responses) fetch(ctx context.Context, method, responseID, suffix string, maxOutputTokens int) (continuation.Response, error) {
	start := time.Now()
	var raw []byte
	path := "responses/" + url.PathEscape(responseID) + suffix
	var err error
	limit := limitReply(bodyLimit(maxOutputTokens, echoedRequest, false))
	if method == http.MethodGet {
		err = p.client.Get(ctx, path, nil, &raw, limit)
	} else {
		err = p.client.Post(ctx, path, nil, &raw, limit)
	}
	latency := time.Since(start)
	if err != nil {
		return continuation.Response{ID: responseID, Latency: latency}, classify(err)
	}
	return decodeResponses(raw, latency)
}

// decodeResponses reads a Responses API object: its common shape (see
// decodeLean) directly, anything else into openai-go's type.
func decodeResponses(raw []byte, latency time.Duration) (continuation.Response, error) {
	if r, ok := decodeLean(raw); ok {
		return r.normalize(latency)
	}
	return decodeFull(raw, latency)
}

// decodeFull reads a Responses API object into openai-go's type.
func decodeFull(raw []byte, latency time.Duration) (continuation.Response, error) {
	var resp responses.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return continuation.Response{Latency: latency}, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("response body is not a Responses API object: %w", err)}
	}
	return normalizeResponse(&resp, latency)
}

// post sends a request body through openai-go — base URL, authentication,
// headers, error statuses as *openai.Error — and reads the reply: a stream
// with read, or the raw body with decode, into openai-go's own types. The
// reply's body is capped for the call's output budget (bodyLimit), and a
// stream's text as well (continuation.MaxReplyText): a reply past either is
// a malformed model error, never a chunk.
func post(ctx context.Context, c openai.Client, path string, body []byte, stream bool, maxOutputTokens int,
	read func(*http.Response, time.Time, int64) (continuation.Response, error), decode func([]byte, time.Duration) (continuation.Response, error)) (continuation.Response, error) {
	start := time.Now()
	opts := []option.RequestOption{option.WithRequestBody("application/json", body),
		limitReply(bodyLimit(maxOutputTokens, len(body), stream))}
	if stream {
		var hr *http.Response
		if err := c.Post(ctx, path, nil, &hr, opts...); err != nil {
			return continuation.Response{Latency: time.Since(start)}, classify(err)
		}
		return read(hr, start, continuation.MaxReplyText(maxOutputTokens))
	}
	var raw []byte
	err := c.Post(ctx, path, nil, &raw, opts...)
	latency := time.Since(start)
	if err != nil {
		return continuation.Response{Latency: latency}, classify(err)
	}
	return decode(raw, latency)
}

// normalizeResponse turns a decoded Responses object into a Response, and a
// failed or unreadable one into a CallError as well.
func normalizeResponse(resp *responses.Response, latency time.Duration) (continuation.Response, error) {
	u := resp.Usage
	return finishResponse(continuation.Response{
		ID:               resp.ID,
		Model:            string(resp.Model),
		RawStatus:        string(resp.Status),
		IncompleteReason: resp.IncompleteDetails.Reason,
		ErrorMessage:     resp.Error.Message,
		Latency:          latency,
		Text:             resp.OutputText(),
		ServerLatency:    serverLatency(resp.CreatedAt, resp.CompletedAt),
		ToolCalls:        toolCalls(resp.Output),
		Usage: continuation.Usage{Input: u.InputTokens, Cached: u.InputTokensDetails.CachedTokens,
			Output: u.OutputTokens, Reasoning: u.OutputTokensDetails.ReasoningTokens},
	})
}

// finishResponse judges a decoded response: its finish, and the CallError
// of a failed or unreadable one.
func finishResponse(out continuation.Response) (continuation.Response, error) {
	out.Finish = continuation.NormalizeResponses(out.RawStatus, out.IncompleteReason, len(out.ToolCalls) > 0)
	if len(out.ToolCalls) > 0 {
		markToolCalls(out.ToolCalls, out.Finish == continuation.FinishLength)
	}
	if out.Finish == continuation.FinishError {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Err: fmt.Errorf("response %s %s: %s", out.ID, out.RawStatus, out.ErrorMessage)}
	}
	if out.Finish == continuation.FinishMalformed {
		return out, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true, Err: fmt.Errorf("response %q has unknown status %q", out.ID, out.RawStatus)}
	}
	return out, nil
}

// serverLatency is the time from created_at to completed_at (Unix seconds,
// fractional), or 0 when either is missing.
func serverLatency(created, completed float64) time.Duration {
	if created <= 0 || completed < created {
		return 0
	}
	return time.Duration((completed - created) * float64(time.Second))
}

// toolCalls collects the function and custom tool calls of a response's
// output; an item the server left incomplete was cut off.
func toolCalls(items []responses.ResponseOutputItemUnion) []carryovertype.ToolCall {
	var calls []carryovertype.ToolCall
	for _, item := range items {
		switch item.Type {
		case "function_call":
			c := item.AsFunctionCall()
			calls = append(calls, carryovertype.ToolCall{ID: c.ID, CallID: c.CallID, Name: c.Name, Arguments: c.Arguments,
				Truncated: c.Status == responses.ResponseFunctionToolCallStatusIncomplete})
		case "custom_tool_call":
			c := item.AsCustomToolCall()
			calls = append(calls, carryovertype.ToolCall{ID: c.ID, CallID: c.CallID, Name: c.Name, Arguments: c.Input,
				Truncated: item.Status == "incomplete"})
		}
	}
	return calls
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
	Background         bool            `json:"background,omitempty"`
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
