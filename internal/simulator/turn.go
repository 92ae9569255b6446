package simulator

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Responses API statuses and incomplete reasons the simulator produces.
const (
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"

	reasonMaxOutputTokens = "max_output_tokens"
	reasonContentFilter   = "content_filter"
	reasonInterrupted     = "interrupted"

	preambleText    = "Sure, here is the continuation:\n\n"
	overlapBegin    = "---BEGIN_OVERLAP---\n"
	overlapEnd      = "---END_OVERLAP---\n"
	repeatTailLen   = 40
	overlapLines    = 3
	maxOverlapLines = 1000 // "repeat the last N lines" beyond this is capped
	overlapPhrase   = "repeat the last "
	toolQueryBytes  = 110 // the query argument's length: arguments are ~40 tokens
)

// turnInput is everything one model call depends on, whichever API asked.
type turnInput struct {
	doc       string
	spec      Spec
	offset    int // document bytes already emitted by the conversation
	depth     int
	maxTokens int
	model     string
	fault     string // content-level fault kind (content_filter, cutoff, failed) or ""
	prefill   bool   // continuing the final assistant message in place: nothing written before the text
	overlap   int    // N of "repeat the last N lines" in the latest user turn; 0 when absent
	restart   bool   // the model starts the document over (strict schema on a continuation)
	strict    bool   // a strict json_schema constrains the output: the model writes JSON only
	tool      string // the function the model can call (the request's first function tool), "" for none
}

// turn is one model call's output.
type turn struct {
	start, end   int // the document range this call emitted
	text         string
	call         *toolCall // a function call after the text, if the model made one
	reasoning    int
	outputTokens int
	status       string
	reason       string // incomplete reason, "" unless status is incomplete
}

// outcome is Call.Outcome for the turn: its status, and after a colon its
// reason if it has one. The usual outcomes are constants, so that recording
// a call does not build them.
func (t turn) outcome() string {
	if t.reason == "" {
		return t.status
	}
	if t.status == statusIncomplete {
		switch t.reason {
		case reasonMaxOutputTokens:
			return statusIncomplete + ":" + reasonMaxOutputTokens
		case reasonContentFilter:
			return statusIncomplete + ":" + reasonContentFilter
		case reasonInterrupted:
			return statusIncomplete + ":" + reasonInterrupted
		}
	}
	return t.status + ":" + t.reason
}

// toolCall is a function call the model emitted. complete is false when the
// token budget ran out inside its arguments.
type toolCall struct {
	name, args string
	complete   bool
}

// produce simulates one generation: reasoning first, then what the
// behaviour writes before the document (a continuation's extras, a fence
// opening the answer: see envelope), then document tokens up to the
// budget, what it writes after a finished document, and a function call
// when the directive asks for one at this depth. Everything visible counts
// against the budget, extras included.
func produce(in turnInput) turn {
	offset := in.offset
	if in.restart {
		offset = 0
	}
	t := turn{start: offset, end: offset}
	t.reasoning = in.spec.reasoningFor(in.model)
	if in.fault == FaultFailed {
		t.status = statusFailed
		t.reasoning = 0
		return t
	}
	if t.reasoning >= in.maxTokens {
		t.reasoning = in.maxTokens
		t.outputTokens = t.reasoning
		t.status, t.reason = statusIncomplete, reasonMaxOutputTokens
		return t
	}
	budget := in.maxTokens - t.reasoning
	switch in.fault {
	case FaultContentFilter, FaultCutoff:
		budget = max(1, budget/2)
	}

	f := frameTurn(in, offset, budget)
	var end, visible, argTokens int
	if in.tool != "" && in.fault == "" && in.spec.Tool != nil && in.spec.Tool.Depth == in.depth && !f.preCut {
		end, visible, argTokens, t.call = textAndCall(in, offset, f.docBudget)
	} else {
		end, visible = advance(in.doc, offset, f.docBudget)
	}
	t.end = end
	t.status, t.reason = turnStatus(in, t.call, f.preCut, end)
	if t.status != statusCompleted || t.call != nil {
		f.post, f.postTokens = "", 0 // the turn did not finish the document
	}
	chunk := in.doc[offset:end]
	t.text = chunk
	if f.pre != "" || f.post != "" {
		t.text = f.pre + chunk + f.post
	}
	t.outputTokens = t.reasoning + f.used + visible + f.postTokens + argTokens
	return t
}

// turnFrame is what a behaviour writes around the document in one turn, as
// far as the budget lets it, and the budget left for the document.
type turnFrame struct {
	pre, post  string
	used       int  // tokens pre took
	postTokens int  // tokens post takes
	preCut     bool // the budget ran out inside pre
	docBudget  int
}

// frameTurn fits the behaviour's envelope (see envelope) into budget.
func frameTurn(in turnInput, offset, budget int) turnFrame {
	var f turnFrame
	pre, post := envelope(in, offset, budget)
	preEnd, used := advance(pre, 0, budget)
	f.preCut = preEnd < len(pre)
	f.pre, f.used = pre[:preEnd], used
	f.post = post
	_, f.postTokens = advance(post, 0, len(post))
	f.docBudget = budget - used
	if f.preCut {
		f.docBudget = 0
	}
	if f.post != "" {
		// What a behaviour writes after the document (a closing fence)
		// comes only at the end of a turn that finishes the document: a
		// turn cut by the limit never got to write it. A turn whose budget
		// would run out inside it is cut before the document's end instead.
		if e, n := advance(in.doc, offset, f.docBudget); e < len(in.doc) {
			f.post, f.postTokens = "", 0
		} else if n+f.postTokens > f.docBudget {
			f.docBudget -= f.postTokens
			f.post, f.postTokens = "", 0
		}
	}
	return f
}

// textAndCall writes document text and then the function call the
// directive asks for at this depth, within docBudget: the text takes part
// of the budget; a complete call needs the rest, a truncated one runs out
// halfway through its arguments.
func textAndCall(in turnInput, offset, docBudget int) (end, visible, argTokens int, call *toolCall) {
	mode := in.spec.Tool.Mode
	args := toolArguments(in.spec, in.depth, mode)
	_, full := advance(args, 0, len(args))
	textBudget := min(docBudget/2, docBudget-full)
	if mode == ToolTruncated {
		textBudget = docBudget - full/2
	}
	end, visible = advance(in.doc, offset, max(0, textBudget))
	argBudget := docBudget - visible
	if mode == ToolTruncated {
		argBudget = min(argBudget, full-1)
	}
	argEnd, argTokens := advance(args, 0, max(0, argBudget))
	return end, visible, argTokens, &toolCall{name: in.tool, args: args[:argEnd], complete: argEnd == len(args)}
}

// turnStatus is how a turn that wrote the document up to end finished.
func turnStatus(in turnInput, call *toolCall, preCut bool, end int) (status, reason string) {
	switch {
	case in.fault == FaultContentFilter:
		return statusIncomplete, reasonContentFilter
	case in.fault == FaultCutoff:
		return statusIncomplete, reasonInterrupted
	case call != nil && call.complete:
		return statusCompleted, ""
	case call == nil && !preCut && end >= len(in.doc):
		return statusCompleted, ""
	}
	return statusIncomplete, reasonMaxOutputTokens
}

// extras returns the text a misbehaving model adds around a continuation,
// given what the conversation has emitted so far and the N of an overlap
// instruction in the latest user turn (0 when there is none). None of it
// advances the document offset.
func extras(behavior, emitted string, overlap int) (pre, post string) {
	switch behavior {
	case BehaviorExact:
		if overlap > 0 {
			return overlapBlock(emitted, overlap), ""
		}
	case BehaviorOverlap:
		if overlap <= 0 {
			overlap = overlapLines
		}
		return overlapBlock(emitted, overlap), ""
	case BehaviorRepeatTail:
		return emitted[runeStart(emitted, max(0, len(emitted)-repeatTailLen)):], ""
	case BehaviorRestartLine, BehaviorIgnoreOverlap:
		return emitted[strings.LastIndexByte(emitted, '\n')+1:], ""
	case BehaviorPreamble:
		return preambleText, ""
	case BehaviorFence:
		// The closing fence goes on a line of its own after the document
		// (which ends with a newline); produce writes it only at the end of
		// a turn that finishes the document.
		return "```\n", "```\n"
	}
	return "", ""
}

// overlapBlock is an obeyed overlap instruction: the last n lines between
// the markers.
func overlapBlock(emitted string, n int) string {
	return overlapBegin + lastLines(emitted, min(n, maxOverlapLines)) + overlapEnd
}

// lastLines returns the last n lines of s (the last one possibly partial),
// always ending with a newline so the end marker sits on its own line.
func lastLines(s string, n int) string {
	i := len(s)
	if strings.HasSuffix(s, "\n") {
		i--
	}
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(s[:i], '\n')
		if i < 0 {
			i = 0
			break
		}
	}
	if i > 0 {
		i++ // start after the newline
	}
	out := s[i:]
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// overlapRequested returns N when prompt asks to "repeat the last N lines"
// (any case; "line" singular too), else 0. It allocates nothing: it runs on
// every continuation.
func overlapRequested(prompt string) int {
	for i := 0; i+len(overlapPhrase) <= len(prompt); i++ {
		if c := prompt[i]; c != 'r' && c != 'R' || !strings.EqualFold(prompt[i:i+len(overlapPhrase)], overlapPhrase) {
			continue
		}
		rest := prompt[i+len(overlapPhrase):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		const line = " line"
		if n, err := strconv.Atoi(rest[:j]); err == nil && n > 0 && len(rest) >= j+len(line) && strings.EqualFold(rest[j:j+len(line)], line) {
			return n
		}
	}
	return 0
}

// toolArguments returns the deterministic arguments of the call at depth:
// {"query":"<words>","page":<depth+1>}, about 40 tokens. The invalid mode
// ends with a trailing comma, which no JSON parser accepts.
func toolArguments(spec Spec, depth int, mode string) string {
	r := rand.New(rand.NewPCG(uint64(spec.Seed), 0x7001_0000+uint64(depth)))
	var q strings.Builder
	for q.Len() < toolQueryBytes {
		if q.Len() > 0 {
			q.WriteByte(' ')
		}
		q.WriteString(pick(r, words))
	}
	tail := "}"
	if mode == ToolInvalid {
		tail = ",}"
	}
	return `{"query":` + jsonString(q.String()) + `,"page":` + strconv.Itoa(depth+1) + tail
}
