package simulator

import "strings"

// Responses API statuses and incomplete reasons the simulator produces.
const (
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"

	reasonMaxOutputTokens = "max_output_tokens"
	reasonContentFilter   = "content_filter"
	reasonInterrupted     = "interrupted"

	preambleText  = "Sure, here is the continuation:\n\n"
	overlapBegin  = "---BEGIN_OVERLAP---\n"
	overlapEnd    = "---END_OVERLAP---\n"
	repeatTailLen = 40
	overlapLines  = 3
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
	prefill   bool   // continuing the final assistant message in place: no behaviour extras
}

// turn is one model call's output.
type turn struct {
	start, end   int // the document range this call emitted
	text         string
	reasoning    int
	outputTokens int
	status       string
	reason       string // incomplete reason, "" unless status is incomplete
}

// produce simulates one generation: reasoning first, then document tokens up
// to the budget, wrapped in the behaviour's extras on continuations.
func produce(in turnInput) turn {
	t := turn{start: in.offset, end: in.offset}
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
	end, visible := advance(in.doc, in.offset, budget)
	t.end = end
	switch {
	case in.fault == FaultContentFilter:
		t.status, t.reason = statusIncomplete, reasonContentFilter
	case in.fault == FaultCutoff:
		t.status, t.reason = statusIncomplete, reasonInterrupted
	case end >= len(in.doc):
		t.status = statusCompleted
	default:
		t.status, t.reason = statusIncomplete, reasonMaxOutputTokens
	}
	chunk := in.doc[in.offset:end]
	var pre, post string
	if in.depth >= 1 && !in.prefill && in.offset > 0 {
		pre, post = extras(in.spec.Behavior, in.doc[:in.offset])
	}
	t.text = chunk
	if pre != "" || post != "" {
		t.text = pre + chunk + post
	}
	t.outputTokens = visible + tokensOf(len(pre)+len(post)) + t.reasoning
	return t
}

// extras returns the text a misbehaving model adds around a continuation,
// given what the conversation has emitted so far. None of it advances the
// document offset.
func extras(behavior, emitted string) (pre, post string) {
	switch behavior {
	case BehaviorRepeatTail:
		return emitted[runeStart(emitted, max(0, len(emitted)-repeatTailLen)):], ""
	case BehaviorRestartLine:
		return emitted[strings.LastIndexByte(emitted, '\n')+1:], ""
	case BehaviorPreamble:
		return preambleText, ""
	case BehaviorFence:
		return "```\n", "\n```"
	case BehaviorOverlap:
		return overlapBegin + lastLines(emitted, overlapLines) + overlapEnd, ""
	}
	return "", ""
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
