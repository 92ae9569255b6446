package continuation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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

// CallRequest is one model call for one chunk.
type CallRequest struct {
	Model           string
	Instructions    string
	Input           Input  // the job's input; sent on the first call only
	PreviousID      string // the response to continue; "" for the first call
	Prompt          string // the continuation prompt (continuations only)
	MaxOutputTokens int
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
	Text             string
	RawStatus        string
	IncompleteReason string
	Finish           FinishReason
	ErrorMessage     string // for status failed
	Usage            Usage
	Latency          time.Duration
}

// Provider makes one model call. A response that arrived — even incomplete or
// failed — is returned with a nil error; an error means nothing usable came
// back and is a *CallError.
type Provider interface {
	Call(ctx context.Context, req CallRequest) (Response, error)
}

// ProviderConfig configures the OpenAI-compatible provider.
type ProviderConfig struct {
	BaseURL    string // "" for OpenAI itself
	APIKey     string
	HTTPClient *http.Client
}

// ResponsesProvider continues through the OpenAI Responses API with stored
// responses and previous_response_id: the server keeps the conversation, so a
// continuation sends only the short continuation prompt.
type ResponsesProvider struct {
	client openai.Client
}

// NewResponsesProvider builds a provider on openai-go. openai-go's own retries
// are off: the queue owns retries, so every attempt is recorded and a 429's
// Retry-After is honored without holding a worker slot.
func NewResponsesProvider(cfg ProviderConfig) *ResponsesProvider {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &ResponsesProvider{client: openai.NewClient(opts...)}
}

// Call implements Provider.
func (p *ResponsesProvider) Call(ctx context.Context, req CallRequest) (Response, error) {
	body, err := json.Marshal(newWireRequest(req))
	if err != nil {
		return Response{}, &CallError{Type: ErrValidation, Err: fmt.Errorf("encode request: %w", err)}
	}
	// openai-go sends the request — base URL, authentication, headers,
	// error statuses as *openai.Error — with a body encoded here and the
	// reply handed back raw; only the fields used here are decoded (see
	// decodeResponse). Its reflective encoding and decoding of the full
	// Responses types cost more CPU than the rest of a chunk's handling
	// together.
	var raw []byte
	start := time.Now()
	err = p.client.Post(ctx, "responses", nil, &raw, option.WithRequestBody("application/json", body))
	latency := time.Since(start)
	if err != nil {
		return Response{Latency: latency}, Classify(err)
	}
	var resp wireResponse
	if err := decodeResponse(raw, &resp); err != nil {
		return Response{Latency: latency}, &CallError{Type: ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("response body is not a Responses API object: %w", err)}
	}
	out := Response{
		ID:               resp.ID,
		RawStatus:        resp.Status,
		IncompleteReason: resp.IncompleteDetails.Reason,
		ErrorMessage:     resp.Error.Message,
		Latency:          latency,
		Usage: Usage{
			Input:     resp.Usage.InputTokens,
			Cached:    resp.Usage.InputTokensDetails.CachedTokens,
			Output:    resp.Usage.OutputTokens,
			Reasoning: resp.Usage.OutputTokensDetails.ReasoningTokens,
		},
	}
	text, hasTools := resp.outputText()
	out.Text = text
	out.Finish = NormalizeResponses(out.RawStatus, out.IncompleteReason, hasTools)
	if out.Finish == FinishError {
		return out, &CallError{Type: ErrModel, HTTPStatus: http.StatusOK, Err: fmt.Errorf("response %s %s: %s", resp.ID, resp.Status, resp.Error.Message)}
	}
	if out.Finish == FinishMalformed {
		return out, &CallError{Type: ErrModel, HTTPStatus: http.StatusOK, Malformed: true, Err: fmt.Errorf("response %q has unknown status %q", resp.ID, resp.Status)}
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
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
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

// outputText concatenates the output_text parts of the message items, as
// openai-go's Response.OutputText does, and reports tool calls.
func (r *wireResponse) outputText() (string, bool) {
	var text []byte
	tools := false
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				if c.Type == "output_text" {
					text = append(text, c.Text...)
				}
			}
		case "function_call", "custom_tool_call":
			tools = true
		}
	}
	return string(text), tools
}

// wireRequest is a Responses API create request. Instructions are not
// carried over by previous_response_id, so they are sent every time.
type wireRequest struct {
	Model              string `json:"model"`
	Input              any    `json:"input"` // a string, or a list of messages
	Instructions       string `json:"instructions,omitempty"`
	MaxOutputTokens    int    `json:"max_output_tokens,omitempty"`
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	Store              bool   `json:"store"`
}

type wireMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

func newWireRequest(req CallRequest) wireRequest {
	w := wireRequest{Model: req.Model, Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Store: true}
	switch {
	case req.PreviousID != "":
		w.PreviousResponseID, w.Input = req.PreviousID, req.Prompt
	case len(req.Input.Messages) > 0:
		msgs := make([]wireMessage, len(req.Input.Messages))
		for i, m := range req.Input.Messages {
			msgs[i] = wireMessage{Type: "message", Role: m.Role, Content: m.Content}
		}
		w.Input = msgs
	default:
		w.Input = req.Input.Prompt
	}
	return w
}
