package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const apiChat = "chat"

// handleChat serves POST /v1/chat/completions. Chat is stateless: the
// conversation's progress is read back from the assistant messages the client
// sends (history strategy), and with continue_final_message the final
// assistant message is continued in place (vLLM-style prefill).
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "",
			fmt.Sprintf("We could not parse the JSON body of your request: %v", err))
		return
	}
	if req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "unsupported_value", "stream",
			"streaming not supported by simulator")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages",
			"Invalid 'messages': empty array. Expected an array with minimum length 1.")
		return
	}
	maxTokens := defaultMaxTokens
	for _, v := range []*int{req.MaxCompletionTokens, req.MaxTokens} {
		if v == nil {
			continue
		}
		if *v < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "max_tokens",
				fmt.Sprintf("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *v))
			return
		}
		maxTokens = *v
		break
	}

	texts := make([]string, len(req.Messages))
	var prompts []string
	chars, lastChars := 0, 0
	for i, m := range req.Messages {
		t, err := textOf(m.Content)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", fmt.Sprintf("messages[%d].content", i),
				fmt.Sprintf("Invalid 'messages[%d].content': %v", i, err))
			return
		}
		texts[i] = t
		chars += len(t)
		lastChars = len(t)
		switch m.Role {
		case "system", "developer", "user":
			prompts = append(prompts, t)
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
			n := commonPrefix(doc[offset:], texts[i])
			offset += n
			matching = n == len(texts[i])
		}
	}
	offset = runeStart(doc, offset)
	last := req.Messages[len(req.Messages)-1]
	prefill := req.ContinueFinalMessage && last.Role == "assistant"

	call := Call{Tag: spec.Tag, Depth: depth, API: apiChat}
	fault, faulted, done := s.begin(w, r, &call, spec, depth)
	if done {
		return
	}
	if faulted {
		if fault.Kind == FaultFailed {
			// Chat has no "failed" status: a failed generation is a 500.
			writeError(w, http.StatusInternalServerError, "server_error", "server_error", "",
				"The model failed to generate a response (simulated).")
			call.Status, call.Outcome = http.StatusInternalServerError, outcomeOf(http.StatusInternalServerError)
			s.record(call)
			return
		}
	}

	t := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: maxTokens,
		model: req.Model, fault: contentFault(fault, faulted), prefill: prefill})
	cc := chatCompletion{
		ID:                s.newID("chatcmpl-"),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             req.Model,
		ServiceTier:       "default",
		SystemFingerprint: "fp_simulator",
		Choices: []chatChoice{{
			Message:      chatReply{Role: "assistant", Content: t.text, Annotations: []struct{}{}},
			FinishReason: finishReason(t),
		}},
	}
	cc.Usage.PromptTokens = tokensOf(chars)
	cc.Usage.PromptTokensDetails.CachedTokens = tokensOf(chars - lastChars)
	cc.Usage.CompletionTokens = t.outputTokens
	cc.Usage.CompletionTokensDetails.ReasoningTokens = t.reasoning
	cc.Usage.TotalTokens = cc.Usage.PromptTokens + cc.Usage.CompletionTokens

	call.ResponseID, call.OutputTokens, call.Status = cc.ID, t.outputTokens, http.StatusOK
	call.Outcome = t.status
	if t.reason != "" {
		call.Outcome += ":" + t.reason
	}
	body, err := json.Marshal(cc)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", "simulator: encoding completion: "+err.Error())
		return
	}
	if faulted && fault.Kind == FaultMalformed {
		call.Outcome = FaultMalformed
		s.record(call)
		writeMalformed(w, body)
		return
	}
	s.record(call)
	writeBody(w, http.StatusOK, body)
}

// finishReason maps a turn to Chat Completions' finish_reason; a cutoff has
// none, as a generation interrupted in transit would.
func finishReason(t turn) *string {
	var r string
	switch {
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
