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
		invalidJSON(err).write(w)
		return
	}
	if len(req.Messages) == 0 {
		invalid("invalid_value", "messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.").write(w)
		return
	}
	opts, rerr := readChatOptions(&req)
	if rerr != nil {
		rerr.write(w)
		return
	}
	conv, rerr := readChatMessages(&req)
	if rerr != nil {
		rerr.write(w)
		return
	}
	spec, err := specFrom(conv.prompts...)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages", err.Error())
		return
	}
	doc := s.docs.get(spec)
	depth, offset := conv.position(doc, spec.Behavior, req.Messages)
	prefill := req.ContinueFinalMessage && conv.lastAssistant == len(req.Messages)-1
	overlap := 0
	if depth >= 1 && !prefill {
		overlap = overlapRequested(conv.lastUser)
	}

	call := Call{Tag: spec.Tag, Depth: depth, API: apiChat, Stream: req.Stream, MaxTokens: opts.requested, Format: opts.format,
		Structured: opts.strict, Prompt: promptForLog(conv.lastUser)}
	fault, faulted, done := s.begin(w, r, &call, spec, depth, false)
	if done || (faulted && s.chatFault(w, call, fault, req.Stream)) {
		return
	}

	t := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: opts.maxTokens,
		model: req.Model, fault: contentFault(fault, faulted), prefill: prefill, overlap: overlap,
		restart: depth >= 1 && opts.strict, strict: opts.strict, tool: opts.tool})
	cc := s.chatCompletion(req.Model, &t, &conv)
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

// chatOptions are what a chat request asks of the turn besides its messages.
type chatOptions struct {
	maxTokens int // the budget the turn has
	requested int // the budget the request named (0: none)
	tool      string
	format    string
	strict    bool
}

// readChatOptions reads and checks the output budget, the tools, the
// response format and the prefill fields, refusing what the API refuses.
func readChatOptions(req *chatRequest) (chatOptions, *requestError) {
	o := chatOptions{maxTokens: defaultMaxTokens}
	for _, v := range []*int{req.MaxCompletionTokens, req.MaxTokens} {
		if v == nil {
			continue
		}
		if *v < 1 {
			return o, invalid("invalid_value", "max_tokens",
				fmt.Sprintf("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *v))
		}
		o.maxTokens, o.requested = *v, *v
		break
	}
	var err error
	if o.tool, err = firstFunction(req.Tools); err != nil {
		return o, invalid("invalid_value", "tools", fmt.Sprintf("Invalid 'tools': %v", err))
	}
	if o.format, o.strict, err = parseFormat(req.ResponseFormat, "response_format"); err != nil {
		var bp *badParam
		errors.As(err, &bp)
		return o, invalid("invalid_value", bp.param, bp.msg)
	}
	if req.ContinueFinalMessage && req.AddGenerationPrompt != nil && *req.AddGenerationPrompt {
		// vLLM's refusal: its default add_generation_prompt is true, but the
		// simulator only refuses the explicit contradiction.
		return o, &requestError{status: http.StatusBadRequest, typ: "BadRequestError", param: "continue_final_message",
			msg: "Cannot set both `continue_final_message` and `add_generation_prompt` to True."}
	}
	return o, nil
}

// chatConversation is what a chat request's messages say.
type chatConversation struct {
	texts    []string // each message's text
	prompts  []string // the system, developer and user texts, for the directive
	lastUser string
	// chars is the prompt's size, tools included; prefixChars its size up
	// to the last assistant message (what the previous request sent).
	chars, prefixChars int
	lastAssistant      int // index of the last assistant message, -1 for none
}

// readChatMessages reads every message's text and measures the prompt.
func readChatMessages(req *chatRequest) (chatConversation, *requestError) {
	c := chatConversation{texts: make([]string, len(req.Messages)), lastAssistant: -1}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.chars = len(req.Tools) // tool definitions are part of the prompt, ahead of the messages
	}
	for i, m := range req.Messages {
		t, err := textOf(m.Content)
		if err != nil {
			return c, &requestError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_type",
				param: fmt.Sprintf("messages[%d].content", i), msg: fmt.Sprintf("Invalid 'messages[%d].content': %v", i, err)}
		}
		c.texts[i] = t
		switch m.Role {
		case "system", "developer", "user":
			c.prompts = append(c.prompts, t)
			if m.Role == "user" {
				c.lastUser = t
			}
		case "assistant":
			c.lastAssistant, c.prefixChars = i, c.chars
		}
		c.chars += len(t)
		for _, tc := range m.ToolCalls {
			c.chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	return c, nil
}

// position is how far the assistant messages, read in order, follow the
// document (offset), and how many assistant turns there were (depth).
func (c *chatConversation) position(doc string, behavior string, msgs []chatMessage) (depth, offset int) {
	matching := true
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		depth++
		if matching {
			offset, matching = follow(doc, offset, c.texts[i], behavior)
		}
	}
	return depth, runeStart(doc, offset)
}

// chatFault answers the faults that replace a chat turn and reports whether
// it did. Chat has no "failed" status: a failed generation is a 500. A
// break without streaming drops the connection.
func (s *Server) chatFault(w http.ResponseWriter, call Call, fault Fault, stream bool) (answered bool) {
	switch fault.Kind {
	case FaultFailed:
		writeError(w, http.StatusInternalServerError, "server_error", "server_error", "",
			"The model failed to generate a response (simulated).")
		call.Status, call.Outcome = http.StatusInternalServerError, outcomeOf(http.StatusInternalServerError)
		s.record(call)
		return true
	case FaultBreak:
		if !stream {
			s.dropConnection(call)
		}
	}
	return false
}

// chatCompletion is the completion object for a turn, with its usage.
func (s *Server) chatCompletion(model string, t *turn, conv *chatConversation) chatCompletion {
	cc := chatCompletion{
		ID:                s.newID("chatcmpl-"),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             model,
		ServiceTier:       "default",
		SystemFingerprint: "fp_simulator",
		Choices: []chatChoice{{
			Message:      chatReply{Role: "assistant", Content: &t.text, Annotations: []struct{}{}},
			FinishReason: finishReason(*t),
		}},
	}
	if t.call != nil {
		if t.text == "" {
			cc.Choices[0].Message.Content = nil
		}
		cc.Choices[0].Message.ToolCalls = []chatToolCall{{ID: s.newID("call_"), Type: "function",
			Function: chatFunction{Name: t.call.name, Arguments: t.call.args}}}
	}
	cc.Usage.PromptTokens = tokensOf(conv.chars)
	if conv.lastAssistant >= 0 {
		// The previous request's prompt ended before the latest assistant turn.
		cc.Usage.PromptTokensDetails.CachedTokens = cachedTokens(tokensOf(conv.prefixChars))
	}
	cc.Usage.CompletionTokens = t.outputTokens
	cc.Usage.CompletionTokensDetails.ReasoningTokens = t.reasoning
	cc.Usage.TotalTokens = cc.Usage.PromptTokens + cc.Usage.CompletionTokens
	return cc
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
