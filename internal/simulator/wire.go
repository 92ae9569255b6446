package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// This file holds the JSON shapes of the OpenAI wire formats the simulator
// speaks. Field names and nullability follow what openai-go parses; keep them
// in step with responses/response.go and chatcompletion.go.

// apiError is the body of every non-2xx reply: {"error": {...}}.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: typ, Param: strPtr(param), Code: strPtr(code)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "simulator: encoding reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, status, body)
}

// writeBody writes a JSON reply in one write, its length declared. The two
// header values share one allocation (Header.Set makes one for each).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	v := []string{"application/json", strconv.Itoa(len(body))}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = v[:1:1], v[1:]
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Responses API request. Input stays raw: it is a string or a list of items.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	Background         bool            `json:"background"`
	Text               json.RawMessage `json:"text"`
	Temperature        *float64        `json:"temperature"`
	Tools              json.RawMessage `json:"tools"`
}

// inputItem is one element of a list-form input: an (easy) input message,
// or a function call / function call output item of a tool round trip.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// response is a Responses API object. Its times are Unix seconds to the
// millisecond (the API's type is a number, openai-go's float64), so a client
// can time a call from created_at to completed_at (see endSeconds).
// completed_at is set once the response has ended (completed, incomplete or
// failed), and null while it runs and when it was cancelled.
type response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          float64            `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	CompletedAt        *float64           `json:"completed_at"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Metadata           struct{}           `json:"metadata"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          reasoningConfig    `json:"reasoning"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type reasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type reasoningItem struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Summary []struct{} `json:"summary"`
}

type messageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

// functionCallItem is a Responses output item of type function_call.
type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

type outputText struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// Chat Completions request. continue_final_message and
// add_generation_prompt are vLLM's extensions for prefill.
type chatRequest struct {
	Model                string          `json:"model"`
	Messages             []chatMessage   `json:"messages"`
	MaxTokens            *int            `json:"max_tokens"`
	MaxCompletionTokens  *int            `json:"max_completion_tokens"`
	Stream               bool            `json:"stream"`
	StreamOptions        *streamOptions  `json:"stream_options"`
	Tools                json.RawMessage `json:"tools"`
	ResponseFormat       json.RawMessage `json:"response_format"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []chatToolCall  `json:"tool_calls"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Usage             chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      chatReply `json:"message"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

// chatReply is a completion's message. Content is null when the model only
// called tools.
type chatReply struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []struct{}     `json:"annotations"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatChunk is one chat.completion.chunk of a streamed completion. Usage is
// absent unless stream_options.include_usage asked for it; then it is null
// on every chunk but the last, which has no choices.
type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             any               `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatDelta struct {
	Role      string              `json:"role,omitempty"`
	Content   *string             `json:"content,omitempty"`
	Refusal   *string             `json:"refusal,omitempty"`
	ToolCalls []chatToolCallDelta `json:"tool_calls,omitempty"`
}

type chatToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function chatFunctionDelta `json:"function"`
}

type chatFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toolDef is one entry of a request's tools: Responses puts the function's
// name at the top level, Chat Completions under "function".
type toolDef struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

// firstFunction returns the name of the first function tool in a request's
// tools, "" when it offers none.
func firstFunction(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var tools []toolDef
	if err := json.Unmarshal(raw, &tools); err != nil {
		return "", err
	}
	for i, t := range tools {
		if t.Type != "function" {
			continue
		}
		name := t.Name
		if t.Function != nil && name == "" {
			name = t.Function.Name
		}
		if name == "" {
			return "", fmt.Errorf("tools[%d]: a function tool needs a name", i)
		}
		return name, nil
	}
	return "", nil
}

// outputFormat is a requested output format: Responses text.format or Chat
// response_format, with the schema's wrapper flattened.
type outputFormat struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Strict     *bool  `json:"strict"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
	Schema json.RawMessage `json:"schema"`
}

// badParam is a request error naming the parameter at fault; its message is
// the one OpenAI would send.
// requestError is a refused request, written as the API's error object.
type requestError struct {
	status                int
	typ, code, param, msg string
}

func (e *requestError) write(w http.ResponseWriter) {
	writeError(w, e.status, e.typ, e.code, e.param, e.msg)
}

// invalid is a 400 invalid_request_error naming param.
func invalid(code, param, msg string) *requestError {
	return &requestError{status: http.StatusBadRequest, typ: "invalid_request_error", code: code, param: param, msg: msg}
}

// invalidJSON is the refusal of a body that is not JSON.
func invalidJSON(err error) *requestError {
	return invalid("invalid_json", "", fmt.Sprintf("We could not parse the JSON body of your request: %v", err))
}

type badParam struct{ param, msg string }

func (e *badParam) Error() string { return e.msg }

// parseFormat reads a format object (Chat's response_format, or the format
// inside Responses' text) and reports its type and whether it is a strict
// JSON schema. param names the field in error messages.
func parseFormat(raw json.RawMessage, param string) (typ string, strict bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var f outputFormat
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", false, &badParam{param, fmt.Sprintf("Invalid '%s': %v", param, err)}
	}
	switch f.Type {
	case "text", "json_object":
		return f.Type, false, nil
	case "json_schema":
		name, schema, s := f.Name, f.Schema, f.Strict
		if f.JSONSchema != nil {
			name, schema, s = f.JSONSchema.Name, f.JSONSchema.Schema, f.JSONSchema.Strict
			param += ".json_schema"
		}
		if name == "" {
			return "", false, &badParam{param + ".name", fmt.Sprintf("Missing required parameter: '%s.name'.", param)}
		}
		if len(schema) == 0 || schema[0] != '{' {
			return "", false, &badParam{param + ".schema", fmt.Sprintf("Invalid '%s.schema': expected an object.", param)}
		}
		return f.Type, s != nil && *s, nil
	case "":
		return "", false, &badParam{param + ".type", fmt.Sprintf("Missing required parameter: '%s.type'.", param)}
	default:
		return "", false, &badParam{param + ".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", f.Type)}
	}
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// textOf flattens a message content that is either a string or a list of
// parts ({type: input_text|output_text|text, text}).
func textOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		return unquote(raw)
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	if len(parts) == 1 {
		return parts[0].Text, nil
	}
	var n int
	for _, p := range parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p.Text...)
	}
	return string(b), nil
}

// unquote decodes a JSON string token. One without escapes that is valid
// UTF-8, as nearly every string a client sends is, is copied as it is;
// encoding/json decodes the others (and replaces invalid UTF-8).
func unquote(tok []byte) (string, error) {
	if n := len(tok); n >= 2 && tok[0] == '"' && tok[n-1] == '"' && plain(tok[1:n-1]) {
		return string(tok[1 : n-1]), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return s, nil
}

// plain reports whether s is the body of a JSON string as it is: valid
// UTF-8 with no quote, backslash or control character.
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}
