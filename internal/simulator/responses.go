package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const apiResponses = "responses"

var defaultTextConfig = json.RawMessage(`{"format":{"type":"text"}}`)

// handleResponses serves POST /v1/responses: a first request starts a
// conversation from its directive; previous_response_id continues the stored
// one from the offset it reached.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "",
			fmt.Sprintf("We could not parse the JSON body of your request: %v", err))
		return
	}
	maxTokens := defaultMaxTokens
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "max_output_tokens",
				fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *req.MaxOutputTokens))
			return
		}
		maxTokens = *req.MaxOutputTokens
	}
	instructions := ""
	if req.Instructions != nil {
		instructions = *req.Instructions
	}
	firstUser, inputChars, err := readInput(req.Input)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", "input",
			fmt.Sprintf("Invalid 'input': %v", err))
		return
	}
	inputChars += len(instructions)

	var (
		spec      Spec
		doc       string
		offset    int
		depth     int
		prevChars int
		prevID    *string
	)
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		prev, ok := s.lookup(*req.PreviousResponseID)
		if !ok {
			writeError(w, http.StatusNotFound, "invalid_request_error", "previous_response_not_found", "previous_response_id",
				fmt.Sprintf("Previous response with id '%s' not found.", *req.PreviousResponseID))
			return
		}
		spec, doc, offset, depth, prevChars = prev.spec, prev.doc, prev.end, prev.depth+1, prev.convChars
		prevID = req.PreviousResponseID
	} else {
		spec, err = specFrom(instructions, firstUser)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "input", err.Error())
			return
		}
		doc = s.docs.get(spec)
	}

	call := Call{Tag: spec.Tag, Depth: depth, API: apiResponses}
	fault, faulted, done := s.begin(w, r, &call, spec, depth)
	if done {
		return
	}

	t := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: maxTokens,
		model: req.Model, fault: contentFault(fault, faulted)})
	resp := s.buildResponse(&req, t, maxTokens, prevID, inputChars, prevChars)
	call.ResponseID, call.OutputTokens, call.Status = resp.ID, t.outputTokens, http.StatusOK
	call.Outcome = t.status
	if t.reason != "" {
		call.Outcome += ":" + t.reason
	}

	// A malformed reply never reached the client intact, so it is not stored:
	// the client cannot know its ID.
	malformed := faulted && fault.Kind == FaultMalformed
	if malformed {
		call.Outcome = FaultMalformed
	} else if resp.Store {
		s.store(resp.ID, &respState{resp: resp, spec: spec, doc: doc, end: t.end, depth: depth,
			convChars: prevChars + inputChars + len(t.text)})
	}
	if req.Stream {
		s.record(call)
		if err := writeStream(w, resp, malformed); err != nil {
			s.log.Debug("stream aborted", "response_id", resp.ID, "err", err)
		}
		return
	}
	body := resp.appendJSON(make([]byte, 0, 1024+2*len(t.text)))
	if body == nil {
		var err error
		if body, err = json.Marshal(resp); err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", "", "simulator: encoding response: "+err.Error())
			return
		}
	}
	if malformed {
		s.record(call)
		writeMalformed(w, body)
		return
	}
	s.record(call)
	writeBody(w, http.StatusOK, body)
}

// wait applies the configured latency and a slow fault, reporting false when
// the client went away first.
// begin takes the call's fault, if any: it sleeps out a slow one (false when
// the client gave up), answers an HTTP-level one, and records the call when
// it ends there. done means the handler has nothing more to write.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, call *Call, spec Spec, depth int) (f Fault, faulted, done bool) {
	f, faulted = s.takeFault(spec, depth)
	if !s.wait(r, f, faulted) {
		call.Status, call.Outcome = 499, "canceled"
		s.record(*call)
		return f, faulted, true
	}
	if faulted {
		if status, ok := writeHTTPFault(w, f); ok {
			call.Status, call.Outcome = status, outcomeOf(status)
			s.record(*call)
			return f, faulted, true
		}
	}
	return f, faulted, false
}

func (s *Server) wait(r *http.Request, f Fault, faulted bool) bool {
	d := s.cfg.Latency
	if faulted && f.Kind == FaultSlow {
		extra, _ := parseSeconds(f.Arg) // validated by parseFault
		d += extra
	}
	return sleep(r.Context(), d)
}

// contentFault returns the fault kind produce must simulate, if any.
func contentFault(f Fault, faulted bool) string {
	if !faulted {
		return ""
	}
	switch f.Kind {
	case FaultContentFilter, FaultCutoff, FaultFailed:
		return f.Kind
	}
	return ""
}

// specFrom finds the directive in the instructions or the first user input.
func specFrom(texts ...string) (Spec, error) {
	for _, t := range texts {
		spec, found, err := parseSpec(t)
		if err != nil {
			return spec, err
		}
		if found {
			return spec, nil
		}
	}
	return DefaultSpec(), nil
}

// readInput returns the first user message's text and the total characters of
// all input text.
func readInput(raw json.RawMessage) (firstUser string, chars int, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &firstUser); err != nil {
			return "", 0, err
		}
		return firstUser, len(firstUser), nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", 0, fmt.Errorf("want a string or a list of input items: %w", err)
	}
	found := false
	for i, it := range items {
		text, err := textOf(it.Content)
		if err != nil {
			return "", 0, fmt.Errorf("item %d content: %w", i, err)
		}
		chars += len(text)
		if !found && it.Role == "user" {
			firstUser, found = text, true
		}
	}
	return firstUser, chars, nil
}

// buildResponse renders a turn as a Responses API object.
func (s *Server) buildResponse(req *responsesRequest, t turn, maxTokens int,
	prevID *string, inputChars, prevChars int) *response {
	resp := &response{
		ID:                 s.newID("resp_"),
		Object:             "response",
		CreatedAt:          time.Now().Unix(),
		Status:             t.status,
		Instructions:       req.Instructions,
		MaxOutputTokens:    &maxTokens,
		Model:              req.Model,
		Output:             make([]any, 0, 2),
		ParallelToolCalls:  true,
		PreviousResponseID: prevID,
		ServiceTier:        "default",
		Store:              req.Store == nil || *req.Store,
		Temperature:        1,
		Text:               defaultTextConfig,
		ToolChoice:         "auto",
		Tools:              []struct{}{},
		TopP:               1,
		Truncation:         "disabled",
	}
	if req.Temperature != nil {
		resp.Temperature = *req.Temperature
	}
	if len(req.Text) > 0 && string(req.Text) != "null" {
		resp.Text = req.Text
	}
	if t.reasoning > 0 {
		effort := "medium"
		resp.Reasoning.Effort = &effort
		resp.Output = append(resp.Output, reasoningItem{Type: "reasoning", ID: s.newID("rs_"), Summary: []struct{}{}})
	}
	switch t.status {
	case statusFailed:
		resp.Error = &responseError{Code: "server_error", Message: "The model failed to generate a response (simulated)."}
	case statusIncomplete:
		resp.IncompleteDetails = &incompleteDetails{Reason: t.reason}
	}
	if t.text != "" {
		itemStatus := statusCompleted
		if t.status != statusCompleted {
			itemStatus = statusIncomplete
		}
		resp.Output = append(resp.Output, messageItem{Type: "message", ID: s.newID("msg_"), Status: itemStatus, Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: t.text, Annotations: []struct{}{}}}})
	}
	u := &responseUsage{InputTokens: tokensOf(prevChars + inputChars), OutputTokens: t.outputTokens}
	u.InputTokensDetails.CachedTokens = tokensOf(prevChars)
	u.OutputTokensDetails.ReasoningTokens = t.reasoning
	u.TotalTokens = u.InputTokens + u.OutputTokens
	resp.Usage = u
	return resp
}

// handleGetResponse serves GET /v1/responses/{id} from the stored state.
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request, id string) {
	if !sleep(r.Context(), s.cfg.Latency) {
		return
	}
	st, ok := s.lookup(id)
	if !ok || strings.Contains(id, "/") {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "",
			fmt.Sprintf("No response found with id '%s'.", id))
		return
	}
	writeJSON(w, http.StatusOK, st.resp)
}
