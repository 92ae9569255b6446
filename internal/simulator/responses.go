package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const apiResponses = "responses"

var (
	defaultTextConfig = json.RawMessage(`{"format":{"type":"text"}}`)
	emptyList         = json.RawMessage(`[]`)
)

// handleResponses serves POST /v1/responses: a first request starts a
// conversation from its directive; previous_response_id continues the stored
// one from the offset it reached. Assistant message items in the input (the
// text a broken stream delivered, or an answer to continue) carry the
// document further, as assistant turns do in chat. A background request is
// answered at once and runs on the clock (see createBackground).
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		invalidJSON(err).write(w)
		return
	}
	opts, in, rerr := readResponsesRequest(&req)
	if rerr != nil {
		rerr.write(w)
		return
	}
	conv, rerr := s.startOrResume(&req, opts.instructions, in)
	if rerr != nil {
		rerr.write(w)
		return
	}
	overlap := 0
	if conv.depth >= 1 {
		overlap = overlapRequested(in.lastUser)
	}

	call := Call{Tag: conv.spec.Tag, Depth: conv.depth, API: apiResponses, Background: req.Background, Stream: req.Stream,
		Format: opts.format, Structured: opts.strict, Prompt: promptForLog(in.lastUser)}
	if req.MaxOutputTokens != nil {
		call.MaxTokens = *req.MaxOutputTokens
	}
	fault, faulted, done := s.begin(w, r, &call, conv.spec, conv.depth, req.Background)
	if done {
		return
	}
	rp := reply{streamed: req.Stream, malformed: faulted && fault.Kind == FaultMalformed, broken: faulted && fault.Kind == FaultBreak}
	if rp.broken && !req.Stream && !req.Background {
		s.dropConnection(call)
	}

	t := produce(turnInput{doc: conv.doc, spec: conv.spec, offset: conv.offset, depth: conv.depth, maxTokens: opts.maxTokens,
		model: req.Model, fault: contentFault(fault, faulted), overlap: overlap, restart: conv.depth >= 1 && opts.strict,
		strict: opts.strict, tool: opts.tool})
	var cached int
	if conv.prevID != nil {
		cached = cachedTokens(tokensOf(opts.resent + conv.prevChars))
	}
	parts := s.buildResponse(&req, t, opts.maxTokens, conv.prevID, tokensOf(opts.resent+conv.prevChars+in.chars), cached, start)
	chars := conv.prevChars + in.chars + len(t.text)
	if t.call != nil {
		chars += len(t.call.args)
	}
	parts.state = respState{resp: &parts.resp, spec: conv.spec, doc: conv.doc, end: t.end, depth: conv.depth, convChars: chars}
	call.ResponseID = parts.resp.ID
	if req.Background {
		s.createBackground(r.Context(), w, call, t, parts, rp, &bgState{created: start, queued: min(s.cfg.Latency/10, maxQueued),
			run: s.delay(fault, faulted), streamed: req.Stream, start: t.start, from: conv.offset, inChars: conv.prevChars + in.chars})
		return
	}
	s.answerResponse(w, call, t, parts, rp)
}

// answerResponse stores a synchronous response and sends it. A malformed
// or broken reply never reached the client intact, so it is not stored: the
// client cannot continue from it (it continues from the previous response,
// sending back what text it received, if any).
func (s *Server) answerResponse(w http.ResponseWriter, call Call, t turn, parts *responseParts, rp reply) {
	resp := &parts.resp
	s.creating.RLock()
	defer s.creating.RUnlock()
	if !rp.malformed && !rp.broken && resp.Store {
		s.store(resp.ID, &parts.state)
	}
	rp.stream = func(cut bool) error { return writeStream(w, resp, cut) }
	rp.encode = func(b []byte) ([]byte, error) {
		body, err := json.Marshal(resp)
		if err != nil {
			return nil, fmt.Errorf("encoding response: %w", err)
		}
		return append(b, body...), nil
	}
	s.answer(w, call, t, rp)
}

// responsesOptions are what a Responses request asks of the turn besides
// its input.
type responsesOptions struct {
	maxTokens    int
	instructions string
	tool         string
	format       string
	strict       bool
	// resent is what every request sends again, instructions and tools,
	// which are not part of the stored conversation a continuation re-reads.
	resent int
}

// readResponsesRequest reads and checks the output budget, the input, the
// tools and the text format, refusing what the API refuses.
func readResponsesRequest(req *responsesRequest) (responsesOptions, inputSummary, *requestError) {
	o := responsesOptions{maxTokens: defaultMaxTokens}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			return o, inputSummary{}, invalid("invalid_value", "max_output_tokens",
				fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *req.MaxOutputTokens))
		}
		o.maxTokens = *req.MaxOutputTokens
	}
	if req.Instructions != nil {
		o.instructions = *req.Instructions
	}
	in, err := readInput(req.Input)
	if err != nil {
		return o, in, invalid("invalid_type", "input", fmt.Sprintf("Invalid 'input': %v", err))
	}
	if o.tool, err = firstFunction(req.Tools); err != nil {
		return o, in, invalid("invalid_value", "tools", fmt.Sprintf("Invalid 'tools': %v", err))
	}
	if o.format, o.strict, err = responsesFormat(req.Text); err != nil {
		var bp *badParam
		errors.As(err, &bp)
		return o, in, invalid("invalid_value", bp.param, bp.msg)
	}
	if req.Background && req.Store != nil && !*req.Store {
		return o, in, invalid("invalid_value", "background",
			"Background mode requires the response to be stored: set 'store' to true (or leave it unset) to use 'background'.")
	}
	o.resent = len(o.instructions)
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		o.resent += len(req.Tools)
	}
	return o, in, nil
}

// responsesConversation is where a Responses turn stands in its document.
type responsesConversation struct {
	spec      Spec
	doc       string
	offset    int // how far the conversation has followed doc
	depth     int // how many assistant turns came before this one
	prevChars int // the stored conversation's size
	prevID    *string
}

// startOrResume finds the turn's conversation: the stored one that
// previous_response_id names, or a new one from the directive. Assistant
// items in the input carry it further.
func (s *Server) startOrResume(req *responsesRequest, instructions string, in inputSummary) (responsesConversation, *requestError) {
	var c responsesConversation
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		prev, rerr := s.previous(*req.PreviousResponseID)
		if rerr != nil {
			return c, rerr
		}
		c = responsesConversation{spec: prev.spec, doc: prev.doc, offset: prev.end, depth: prev.depth + 1,
			prevChars: prev.convChars, prevID: req.PreviousResponseID}
	} else {
		spec, err := specFrom(instructions, in.firstUser)
		if err != nil {
			return c, invalid("invalid_value", "input", err.Error())
		}
		c.spec, c.doc = spec, s.docs.get(spec)
	}
	matching := true
	for _, a := range in.assistant {
		c.depth++
		if matching {
			c.offset, matching = follow(c.doc, c.offset, a, c.spec.Behavior)
		}
	}
	c.offset = runeStart(c.doc, c.offset)
	return c, nil
}

// reply is how a handler's turn goes back to the client. Nothing in it
// outlives answer (the id goes in the Call), so its functions stay on the
// handler's stack rather than being allocated.
type reply struct {
	streamed          bool // the request asked for a stream
	malformed, broken bool // a fault spoils the reply
	// stream writes the reply as events, cut short (no terminal event) when
	// cut is true.
	stream func(cut bool) error
	// encode appends the reply's JSON body to b.
	encode func(b []byte) ([]byte, error)
}

// answer records the call, whose ResponseID the handler set, with the
// turn's outcome, or the fault's that spoils it, and sends the reply. A
// stream is cut short when the reply is malformed or broken, and a broken
// one then closes the connection without ending the body (a broken
// non-streaming call never gets here: it dropped the connection before the
// turn). A body goes out whole, or only its first half when malformed. A
// body that cannot be encoded is a 500 and the call is not recorded.
func (s *Server) answer(w http.ResponseWriter, call Call, t turn, rp reply) {
	call.OutputTokens, call.Status = t.outputTokens, http.StatusOK
	call.ToolCall = toolCallState(t)
	switch {
	case rp.malformed:
		call.Outcome = FaultMalformed
	case rp.broken:
		call.Outcome = FaultBreak
	default:
		call.Outcome = t.outcome()
	}
	if rp.streamed {
		s.record(call)
		if err := rp.stream(rp.malformed || rp.broken); err != nil {
			s.log.Debug("stream aborted", "response_id", call.ResponseID, "err", err)
		}
		if rp.broken {
			panic(http.ErrAbortHandler) // close the connection without ending the body
		}
		return
	}
	buf := s.buffer()
	defer s.release(buf)
	body, err := rp.encode(*buf)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", "simulator: "+err.Error())
		return
	}
	*buf = body
	s.record(call)
	if rp.malformed {
		writeMalformed(w, body)
		return
	}
	writeBody(w, http.StatusOK, body)
}

// dropConnection records a break fault on a non-streaming request and drops
// the connection before any reply: the client sees the connection closed
// (an EOF), as when a proxy or the network cuts it.
func (s *Server) dropConnection(call Call) {
	call.Status, call.Outcome = 0, FaultBreak
	s.record(call)
	panic(http.ErrAbortHandler)
}

// responsesFormat reads the format of a Responses request's text config.
func responsesFormat(raw json.RawMessage) (typ string, strict bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var text struct {
		Format json.RawMessage `json:"format"`
	}
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", false, &badParam{"text", fmt.Sprintf("Invalid 'text': %v", err)}
	}
	return parseFormat(text.Format, "text.format")
}

// begin takes the call's fault, if any: it sleeps out the latency and a
// slow fault (false when the client gave up), answers an HTTP-level one, and
// records the call when it ends there. done means the handler has nothing
// more to write. A detached (background) call does not wait: the time is
// its run's.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, call *Call, spec Spec, depth int, detached bool) (f Fault, faulted, done bool) {
	f, faulted = s.takeFault(spec, depth)
	if !detached && !sleep(r.Context(), s.delay(f, faulted)) {
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

// delay is how long a model reply takes: the configured latency, and a
// slow fault's delay.
func (s *Server) delay(f Fault, faulted bool) time.Duration {
	d := s.cfg.Latency
	if faulted && f.Kind == FaultSlow {
		extra, _ := parseSeconds(f.Arg) // validated by parseFault
		d += extra
	}
	return d
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

// inputSummary is what the simulator reads of a Responses input.
type inputSummary struct {
	firstUser string   // the first user message: where a directive is looked for
	lastUser  string   // the latest user turn: the prompt a continuation strategy sent
	assistant []string // assistant message texts, in order
	chars     int      // characters of every input text
}

// readInput summarizes a Responses input: a string or a list of items.
func readInput(raw json.RawMessage) (in inputSummary, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	if raw[0] == '"' {
		if in.firstUser, err = unquote(raw); err != nil {
			return in, err
		}
		in.lastUser, in.chars = in.firstUser, len(in.firstUser)
		return in, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return in, fmt.Errorf("want a string or a list of input items: %w", err)
	}
	found := false
	for i, it := range items {
		text, err := textOf(it.Content)
		if err != nil {
			return in, fmt.Errorf("item %d content: %w", i, err)
		}
		in.chars += len(text) + len(it.Arguments)
		if len(it.Output) > 0 {
			out, err := textOf(it.Output)
			if err != nil {
				return in, fmt.Errorf("item %d output: %w", i, err)
			}
			in.chars += len(out)
		}
		if it.Type != "" && it.Type != "message" {
			continue
		}
		switch it.Role {
		case "user":
			if !found {
				in.firstUser, found = text, true
			}
			in.lastUser = text
		case "assistant":
			in.assistant = append(in.assistant, text)
		}
	}
	return in, nil
}

// responseParts is a response with what its pointer fields point to, the
// backing of its output and of its message's content, and the state kept
// when it is stored: they live as long as one another, and allocating them
// together takes one allocation per call instead of up to seven.
type responseParts struct {
	resp        response
	state       respState
	maxTokens   int
	completedAt float64
	incomplete  incompleteDetails
	usage       responseUsage
	output      [2]any
	content     [1]outputText
}

// buildResponse renders a turn as a Responses API object, created when the
// request came and completed now; the handler fills in the state if it
// stores it.
func (s *Server) buildResponse(req *responsesRequest, t turn, maxTokens int,
	prevID *string, inputTokens, cached int, created time.Time) *responseParts {
	p := &responseParts{maxTokens: maxTokens, completedAt: endSeconds(s.now())}
	resp := &p.resp
	*resp = response{
		ID:                 s.newID("resp_"),
		Object:             "response",
		CreatedAt:          unixSeconds(created),
		CompletedAt:        &p.completedAt,
		Status:             t.status,
		Instructions:       req.Instructions,
		MaxOutputTokens:    &p.maxTokens,
		Model:              req.Model,
		Output:             p.output[:0],
		ParallelToolCalls:  true,
		PreviousResponseID: prevID,
		ServiceTier:        "default",
		Store:              req.Store == nil || *req.Store,
		Temperature:        1,
		Text:               defaultTextConfig,
		ToolChoice:         "auto",
		Tools:              emptyList,
		TopP:               1,
		Truncation:         "disabled",
	}
	if req.Temperature != nil {
		resp.Temperature = *req.Temperature
	}
	if len(req.Text) > 0 && string(req.Text) != "null" {
		resp.Text = req.Text
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		resp.Tools = req.Tools
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
		p.incomplete.Reason = t.reason
		resp.IncompleteDetails = &p.incomplete
	}
	if t.text != "" {
		itemStatus := statusCompleted
		if t.status != statusCompleted && t.call == nil {
			itemStatus = statusIncomplete // the budget ran out in the text
		}
		p.content[0] = outputText{Type: "output_text", Text: t.text, Annotations: []struct{}{}}
		resp.Output = append(resp.Output, messageItem{Type: "message", ID: s.newID("msg_"), Status: itemStatus, Role: "assistant",
			Content: p.content[:]})
	}
	if t.call != nil {
		itemStatus := statusCompleted
		if !t.call.complete {
			itemStatus = statusIncomplete
		}
		resp.Output = append(resp.Output, functionCallItem{Type: "function_call", ID: s.newID("fc_"), CallID: s.newID("call_"),
			Name: t.call.name, Arguments: t.call.args, Status: itemStatus})
	}
	u := &p.usage
	u.InputTokens, u.OutputTokens = inputTokens, t.outputTokens
	u.InputTokensDetails.CachedTokens = cached
	u.OutputTokensDetails.ReasoningTokens = t.reasoning
	u.TotalTokens = u.InputTokens + u.OutputTokens
	resp.Usage = u
	return p
}

// unixSeconds is t as the API writes times: Unix seconds, here to the
// millisecond, rounded down.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// endSeconds is an end time as the API writes it: the millisecond after t.
// With created_at rounded down, completed_at minus created_at, as a client
// computes it in float64 (whose error at today's Unix times is about 0.2µs),
// is never less than the time the response took.
func endSeconds(t time.Time) float64 { return float64(t.UnixMilli()+1) / 1000 }

// handleGetResponse serves GET /v1/responses/{id} from the stored state: a
// background response as it stands now, at once (a poll), or streamed with
// ?stream=true (see streamBackground). A response that is not a background
// one comes after the configured latency, as it always has, and cannot be
// streamed.
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request, id string) {
	q, rerr := readGetParams(r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	now := s.now()
	st, c, ok := s.find(id, now)
	if !ok || strings.Contains(id, "/") {
		notFound(w, id)
		return
	}
	switch {
	case q.stream && (st.bg == nil || !st.bg.streamed):
		invalid("invalid_value", "stream", fmt.Sprintf("Response '%s' cannot be streamed: only a background response "+
			"created with 'stream' true can be streamed again.", id)).write(w)
	case st.bg == nil:
		if sleep(r.Context(), s.cfg.Latency) {
			writeJSON(w, http.StatusOK, st.resp)
		}
	case q.stream:
		s.bg.resumes.Add(1)
		if err := s.streamBackground(r.Context(), w, st, q.after, false, func() {}); err != nil {
			s.log.Debug("stream aborted", "response_id", id, "err", err)
		}
	default:
		s.bg.polls.Add(1)
		writeJSON(w, http.StatusOK, st.view(now, c))
	}
}

// notFound is the API's answer for an id it does not know (or no longer
// keeps).
func notFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("No response found with id '%s'.", id))
}
