package simulator

import (
	"math/rand/v2"
	"strings"
)

// The habits below are the ones a merge was not tuned on: a fence around
// the whole answer (wrap, wrap_each), free-form remarks before a
// continuation and after the document (chatty), and a continuation that
// starts the document over (restart_top). They are here so that the merge
// meets them in tests as it meets them in production.

const (
	fenceOpen  = "```"
	fenceClose = "```\n"

	// Streams of the chatty draws, so the preamble and the trailer of one
	// depth are drawn independently of each other and of the tool arguments.
	preambleStream = 0xc4a7_0000
	trailerStream  = 0x7a11_0000
)

// chattyPreambles are the remarks a chatty model opens a continuation
// with. They vary in wording and in how they end (a colon, a full stop, an
// exclamation mark, a bracketed aside) so a merge cannot key on one
// phrase; none contains a newline.
var chattyPreambles = []string{
	"Sure! Here's the rest:",
	"Below is what was left.",
	"Carrying on from the last row.",
	"Continuing from where I left off:",
	"Here is the remainder of the document:",
	"Of course! Picking up right where the previous part ended.",
	"(continued)",
	"[Continuation of the previous response]",
	"Certainly, here's the continuation:",
	"No problem, resuming now!",
	"Apologies for the cut-off. The rest follows.",
	"Got it — continuing!",
	"Resuming output:",
	"(Picking up from the previous message.)",
}

// chattyTrailers are the closing remarks a chatty model ends its answer
// with.
var chattyTrailers = []string{
	"Let me know if you need anything else.",
	"I hope this helps!",
	"That's the complete document.",
	"Feel free to ask if you'd like any changes.",
	"This completes the output.",
	"Happy to adjust the format if needed!",
	"Let me know if you want more rows or a different layout.",
	"Hope that's what you were looking for!",
	"(End of document.)",
}

// fenceTags are the tags fenceTag gives, so that follow recognizes an
// opening fence of the simulator's own and nothing else.
var fenceTags = []string{"csv", "json", "jsonl", "go", "diff", "markdown", "md"}

// envelope returns what the model writes before and after this turn's
// document text: a misbehaving continuation's extras, and for the habits
// that concern the whole answer what the turn that starts the document
// (a fence's opening line) or finishes it (its closing line, a closing
// remark) adds. produce writes post only when the turn finishes the
// document. A model held to a strict schema writes JSON only, and one
// that starts over for it (restart) writes none of it either. A
// prefilled continuation goes on in place: it opens nothing, but the
// answer it finishes still ends as the model ends its answers.
func envelope(in turnInput, offset, budget int) (pre, post string) {
	if in.restart || in.strict {
		return "", ""
	}
	continuing := in.depth >= 1 && !in.prefill && offset > 0
	switch in.spec.Behavior {
	case BehaviorWrap, BehaviorWrapEach:
		tag := fenceTag(in.spec)
		if tag == "" {
			return "", "" // a text answer is never fenced
		}
		if offset == 0 && !in.prefill || continuing && in.spec.Behavior == BehaviorWrapEach {
			pre = fenceOpen + tag + "\n"
		}
		return pre, fenceClose
	case BehaviorChatty:
		if continuing {
			pre = chattyPreamble(in.spec.Seed, in.depth)
		}
		return pre, chattyTrailer(in.spec.Seed, in.depth)
	case BehaviorRestartTop:
		if continuing {
			pre = in.doc[restartTopStart(in.doc, offset, budget/2):offset]
		}
		return pre, ""
	}
	if continuing {
		return extras(in.spec.Behavior, in.doc[:offset], in.overlap)
	}
	return "", ""
}

// fenceTag is the info string a model puts on a fence around a document of
// the spec's format: the format's name, the language for code (the
// simulator's code is Go), and for JSON Lines and Markdown either of the
// two names models use, by the seed's parity, so both are met. Text gets
// none: it is never fenced.
func fenceTag(spec Spec) string {
	odd := spec.Seed&1 == 1
	switch spec.Format {
	case FormatCSV, FormatJSON, FormatDiff:
		return spec.Format
	case FormatJSONL:
		if odd {
			return "json"
		}
		return "jsonl"
	case FormatCode:
		return "go"
	case FormatMarkdown:
		if odd {
			return "md"
		}
		return "markdown"
	}
	return ""
}

// chattyPreamble is the remark a chatty continuation at depth opens with,
// followed by a blank line or by a line break alone: a pure function of
// seed and depth, so a conversation replays the same.
func chattyPreamble(seed int64, depth int) string {
	r := rand.New(rand.NewPCG(uint64(seed), preambleStream+uint64(depth)))
	p := pick(r, chattyPreambles)
	if r.IntN(2) == 0 {
		return p + "\n\n"
	}
	return p + "\n"
}

// chattyTrailer is the remark a chatty answer finished at depth ends with,
// after one blank line, as a chat model writes it: "last line\n\nremark"
// (the document already ends with its line break). A second blank line
// could not be told from a blank line the document ends with.
func chattyTrailer(seed int64, depth int) string {
	r := rand.New(rand.NewPCG(uint64(seed), trailerStream+uint64(depth)))
	return "\n" + pick(r, chattyTrailers) + "\n"
}

// restartTopStart is where a restart_top continuation at offset starts
// reproducing the document: its start when all of doc[:offset] fits in
// limit tokens, else the start of the earliest line from which the
// reproduction still fits, so that at least half the turn's budget is left
// for new text and the conversation always progresses. When not even the
// line cut off fits, it is offset: nothing is reproduced.
func restartTopStart(doc string, offset, limit int) int {
	emitted := doc[:offset]
	start := offset
	for s := strings.LastIndexByte(emitted, '\n') + 1; ; s = strings.LastIndexByte(emitted[:s-1], '\n') + 1 {
		if end, _ := advance(emitted, s, limit); end < offset {
			return start
		}
		start = s
		if s == 0 {
			return 0
		}
	}
}

// cutTaggedFence removes an opening fence line with one of the simulator's
// tags from the start of text.
func cutTaggedFence(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, fenceOpen)
	if !ok {
		return text, false
	}
	line, after, ok := strings.Cut(rest, "\n")
	if !ok {
		return text, false
	}
	for _, tag := range fenceTags {
		if line == tag {
			return after, true
		}
	}
	return text, false
}

// habitBodies returns the readings of an assistant turn without the
// envelope the habits put around it: a tagged opening fence, a chatty
// preamble (either separator), and for each of those and the turn itself,
// a closing fence or a chatty trailer at the end. follow tries each. It
// runs on every assistant turn that is not a clean continuation, so it
// allocates nothing but the list.
func habitBodies(text string) []string {
	heads := []string{text}
	if rest, ok := cutTaggedFence(text); ok {
		heads = append(heads, rest)
	}
	for _, p := range chattyPreambles {
		rest, ok := strings.CutPrefix(text, p)
		if !ok {
			continue
		}
		if r, ok := strings.CutPrefix(rest, "\n"); ok {
			heads = append(heads, r)
			if r, ok := strings.CutPrefix(r, "\n"); ok {
				heads = append(heads, r)
			}
		}
	}
	bodies := append([]string(nil), heads[1:]...)
	for _, h := range heads {
		if b, ok := strings.CutSuffix(h, fenceClose); ok {
			bodies = append(bodies, b)
		}
		bodies = cutTrailers(h, bodies)
	}
	return bodies
}

// cutTrailers appends to bodies h without a chatty trailer at its end,
// read as following one blank line and as following two: the second
// reading takes one more line break, which may be the document's own.
func cutTrailers(h string, bodies []string) []string {
	body, ok := strings.CutSuffix(h, "\n")
	if !ok {
		return bodies
	}
	for _, t := range chattyTrailers {
		b, ok := strings.CutSuffix(body, t)
		if !ok {
			continue
		}
		if b, ok := strings.CutSuffix(b, "\n"); ok {
			bodies = append(bodies, b)
			if b, ok := strings.CutSuffix(b, "\n"); ok {
				bodies = append(bodies, b)
			}
		}
	}
	return bodies
}

// restartedFrom follows a restart_top turn: text reproduces the document
// from the start of a line before offset's and goes on. It returns how far
// text carries the document, and whether it stays in it to its end.
func restartedFrom(doc string, offset int, text string) (end int, matched bool) {
	end = offset
	for s := strings.LastIndexByte(doc[:offset], '\n') + 1; s > 0; {
		s = strings.LastIndexByte(doc[:s-1], '\n') + 1
		n := commonPrefix(doc[s:], text)
		if s+n < offset {
			continue
		}
		if n == len(text) {
			return s + n, true
		}
		end = max(end, s+n)
	}
	return end, false
}
