package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

const apiChat = "chat"

// handleChat serves POST /v1/chat/completions. Chat is stateless: the
// conversation's progress is read back from the assistant messages the client
// sends (history strategy), and with vLLM's continue_final_message (and
// add_generation_prompt false) the final assistant message is continued in
// place (prefill). Other servers' prefill spellings are not recognized: a
// final assistant message without continue_final_message is a finished turn,
// and the model answers it with a new message. With stream true the reply is
// a stream of chat.completion.chunk events.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "",
			fmt.Sprintf("We could not parse the JSON body of your request: %v", err))
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages",
			"Invalid 'messages': empty array. Expected an array with minimum length 1.")
		return
	}
	maxTokens, requested := defaultMaxTokens, 0
	for _, v := range []*int{req.MaxCompletionTokens, req.MaxTokens} {
		if v == nil {
			continue
		}
		if *v < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "max_tokens",
				fmt.Sprintf("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *v))
			return
		}
		maxTokens, requested = *v, *v
		break
	}
	tool, err := firstFunction(req.Tools)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "tools",
			fmt.Sprintf("Invalid 'tools': %v", err))
		return
	}
	format, strict, err := parseFormat(req.ResponseFormat, "response_format")
	if err != nil {
		var bp *badParam
		errors.As(err, &bp)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", bp.param, bp.msg)
		return
	}
	if req.ContinueFinalMessage && req.AddGenerationPrompt != nil && *req.AddGenerationPrompt {
		// vLLM's refusal: its default add_generation_prompt is true, but the
		// simulator only refuses the explicit contradiction.
		writeError(w, http.StatusBadRequest, "BadRequestError", "", "continue_final_message",
			"Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
		return
	}

	texts := make([]string, len(req.Messages))
	var prompts []string
	lastUser := ""
	chars, prefixChars, lastAssistant := 0, 0, -1
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		chars = len(req.Tools) // tool definitions are part of the prompt, ahead of the messages
	}
	for i, m := range req.Messages {
		t, err := textOf(m.Content)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", fmt.Sprintf("messages[%d].content", i),
				fmt.Sprintf("Invalid 'messages[%d].content': %v", i, err))
			return
		}
		texts[i] = t
		switch m.Role {
		case "system", "developer", "user":
			prompts = append(prompts, t)
			if m.Role == "user" {
				lastUser = t
			}
		case "assistant":
			lastAssistant, prefixChars = i, chars
		}
		chars += len(t)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	spec, err := specFrom(prompts...)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages", err.Error())
		return
	}
	doc := s.docs.get(spec)

	// The offset is how far the assistant messages, read in order, follow the
	// document; depth is how many assistant turns there were.
	depth, offset := 0, 0
	matching := true
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		depth++
		if matching {
			offset, matching = follow(doc, offset, texts[i], spec.Behavior)
		}
	}
	offset = runeStart(doc, offset)
	prefill := req.ContinueFinalMessage && lastAssistant == len(req.Messages)-1
	overlap := 0
	if depth >= 1 && !prefill {
		overlap = overlapRequested(lastUser)
	}

	call := Call{Tag: spec.Tag, Depth: depth, API: apiChat, Stream: req.Stream, MaxTokens: requested, Format: format,
		Structured: strict, Prompt: promptForLog(lastUser)}
	fault, faulted, done := s.begin(w, r, &call, spec, depth)
	if done {
		return
	}
	if faulted {
		switch fault.Kind {
		case FaultFailed:
			// Chat has no "failed" status: a failed generation is a 500.
			writeError(w, http.StatusInternalServerError, "server_error", "server_error", "",
				"The model failed to generate a response (simulated).")
			call.Status, call.Outcome = http.StatusInternalServerError, outcomeOf(http.StatusInternalServerError)
			s.record(call)
			return
		case FaultBreak:
			if !req.Stream {
				s.dropConnection(call)
			}
		}
	}

	t := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: maxTokens,
		model: req.Model, fault: contentFault(fault, faulted), prefill: prefill, overlap: overlap,
		restart: depth >= 1 && strict, strict: strict, tool: tool})
	cc := chatCompletion{
		ID:                s.newID("chatcmpl-"),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             req.Model,
		ServiceTier:       "default",
		SystemFingerprint: "fp_simulator",
		Choices: []chatChoice{{
			Message:      chatReply{Role: "assistant", Content: &t.text, Annotations: []struct{}{}},
			FinishReason: finishReason(t),
		}},
	}
	if t.call != nil {
		if t.text == "" {
			cc.Choices[0].Message.Content = nil
		}
		cc.Choices[0].Message.ToolCalls = []chatToolCall{{ID: s.newID("call_"), Type: "function",
			Function: chatFunction{Name: t.call.name, Arguments: t.call.args}}}
	}
	cc.Usage.PromptTokens = tokensOf(chars)
	if lastAssistant >= 0 {
		// The previous request's prompt ended before the latest assistant turn.
		cc.Usage.PromptTokensDetails.CachedTokens = cachedTokens(tokensOf(prefixChars))
	}
	cc.Usage.CompletionTokens = t.outputTokens
	cc.Usage.CompletionTokensDetails.ReasoningTokens = t.reasoning
	cc.Usage.TotalTokens = cc.Usage.PromptTokens + cc.Usage.CompletionTokens

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	call.ResponseID = cc.ID
	s.answer(w, call, t, reply{streamed: req.Stream,
		malformed: faulted && fault.Kind == FaultMalformed, broken: faulted && fault.Kind == FaultBreak,
		stream: func(cut bool) error { return writeChatStream(w, &cc, includeUsage, cut) },
		encode: func(b []byte) ([]byte, error) {
			body, err := json.Marshal(cc)
			if err != nil {
				return nil, fmt.Errorf("encoding completion: %w", err)
			}
			return append(b, body...), nil
		}})
}

// finishReason maps a turn to Chat Completions' finish_reason; a cutoff has
// none, as a generation interrupted in transit would.
func finishReason(t turn) *string {
	var r string
	switch {
	case t.status == statusCompleted && t.call != nil:
		r = "tool_calls"
	case t.status == statusCompleted:
		r = "stop"
	case t.reason == reasonMaxOutputTokens:
		r = "length"
	case t.reason == reasonContentFilter:
		r = "content_filter"
	default:
		return nil
	}
	return &r
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
