package main

import (
	"math/rand/v2"
	"strings"
)

// A habit is one row of the fidelity table: a way a model writes its
// answer around the document. build writes the chunks of one cutting of
// the document (pos: the cut offsets in the document, first 0, last its
// length); false when the habit found nothing to do in this cutting, and
// the case is left out.
type habit struct {
	name    string
	formats string // space-separated formats it applies to; "" for all
	kind    string // required document kind, if any
	single  bool   // the answer is one chunk (FinishReason "stop")
	build   func(e *env, pos []int) ([]string, bool)
}

func (h habit) appliesTo(d doc) bool {
	return (h.formats == "" || strings.Contains(" "+h.formats+" ", " "+d.format+" ")) && (h.kind == "" || h.kind == d.kind)
}

// fenced are the typed formats a model wraps its answer in a fence for
// (Markdown only with a markdown or md tag; text never).
const fenced = "csv json jsonl markdown code diff"

// bare are the formats whose first line no prose sentence can be: a
// preamble may stand before them unfenced.
const bare = "csv json jsonl diff"

func habits() []habit {
	return []habit{
		// The habits of the table before issue 12, their wording now drawn
		// from the half's phrasings.
		{name: "clean", build: each(func(e *env, prev, cont string, last bool) (string, bool) { return cont, true })},
		{name: "repeat-chars", build: each(plain(repeatWords))},
		{name: "restart-record", build: each(plain(restartRecord))},
		{name: "repeat-lines", build: each(plain(repeatLines))},
		{name: "repeat-structure", formats: "csv json markdown diff", build: each(plain(repeatStructure))},
		{name: "repeat-whitespace", formats: "text markdown code", build: each(plain(repeatWhitespace))},
		{name: "preamble", build: each(preambleColon)},
		{name: "code-fences", formats: fenced, build: each(contFence)},
		{name: "overlap-markers", build: each(plain(markers))},
		{name: "trailing-remark", build: each(trailingRemark)},
		{name: "raw-in-string", formats: "json", kind: "diffs", build: each(plain(rawInString))},
		{name: "renumbered", formats: "json jsonl", kind: "numbered", build: each(plain(renumbered))},
		{name: "repeat-tail", build: each(plain(repeatTail))},
		// Issue 12's habits.
		{name: "whole-fence", formats: fenced, build: wholeFence},
		{name: "whole-fence-single", formats: fenced, single: true, build: wholeFence},
		{name: "fence-each", formats: fenced, build: fenceEach},
		{name: "preamble-period", build: each(preamblePeriod)},
		{name: "preamble-first", formats: fenced, build: preambleFirst},
		{name: "trailer", build: trailerHabit},
		{name: "restart-top", build: restartTop},
		{name: "restart-top-ws", build: restartTopWS},
		{name: "restart-earlier", build: restartEarlier},
		{name: "combined", build: combined},
	}
}

// habitGroups are the summary rows over several habits.
var habitGroups = []struct {
	name    string
	members []string
}{
	{"whole-answer fence", []string{"whole-fence", "whole-fence-single"}},
	{"preamble", []string{"preamble", "preamble-period", "preamble-first"}},
	{"restart", []string{"restart-top", "restart-top-ws", "restart-earlier", "restart-record"}},
	{"combined", []string{"combined"}},
}

// step rewrites one continuation: prev is the document up to the cut,
// cont the exact text that follows it up to the next cut, last whether
// this is the final chunk; false when it does not apply at this cut.
type step func(e *env, prev, cont string, last bool) (string, bool)

// each builds a case by rewriting every continuation with s; chunk 0 is
// the document up to the first cut.
func each(s step) func(*env, []int) ([]string, bool) {
	return func(e *env, pos []int) ([]string, bool) {
		t := e.d.text
		chunks := cleanChunks(t, pos)
		applied := false
		for i := 1; i < len(chunks); i++ {
			e.part = i + 1
			c, ok := s(e, t[:pos[i]], chunks[i], i == len(chunks)-1)
			applied = applied || ok
			chunks[i] = c
		}
		return chunks, applied
	}
}

// plain adapts a wordless rewrite of behave.go.
func plain(f func(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool)) step {
	return func(e *env, prev, cont string, last bool) (string, bool) { return f(e.r, e.d, prev, cont, last) }
}

// cleanChunks cuts the document at pos.
func cleanChunks(t string, pos []int) []string {
	out := make([]string, len(pos)-1)
	for i := range out {
		out[i] = t[pos[i]:pos[i+1]]
	}
	return out
}

// sep is what follows a preamble: usually a blank line, sometimes a bare
// line break (one in every n).
func (e *env) sep(n int) string {
	if e.r.IntN(n) == 0 {
		return "\n"
	}
	return "\n\n"
}

// preambleColon introduces the continuation with a sentence ending in ':'
// or '…', or a bracketed note.
func preambleColon(e *env, prev, cont string, last bool) (string, bool) {
	return e.preamble(prev, ":…", 5) + e.sep(2) + cont, true
}

// preamblePeriod introduces the continuation with a sentence ending in
// '.' or '!'.
func preamblePeriod(e *env, prev, cont string, last bool) (string, bool) {
	return e.preamble(prev, ".!", 0) + e.sep(3) + cont, true
}

// contFence wraps the continuation in a fence the document does not have;
// a chunk cut by the length limit never got to close it.
func contFence(e *env, prev, cont string, last bool) (string, bool) {
	f, ok := e.fence()
	if !ok {
		return cont, false
	}
	out := f.open + "\n" + cont
	if last {
		out = e.closeAnswer(out, f, false)
	}
	return out, true
}

// trailingRemark adds a one-sentence closing remark after a blank line.
func trailingRemark(e *env, prev, cont string, last bool) (string, bool) {
	if !last {
		return cont, false
	}
	if !strings.HasSuffix(cont, "\n") {
		cont += "\n"
	}
	return cont + "\n" + e.compose(e.ph.trailers, ".!?", prev+cont, 0, false) + "\n", true
}

// addTrailer ends text with a closing remark on a line of its own, after
// a blank line or, where a prose line cannot pass for the document's
// (after a fence, or a data format's last record), sometimes directly.
func (e *env) addTrailer(text string, afterFence bool) string {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	sep := "\n"
	if (afterFence || strings.Contains(" "+bare+" ", " "+e.d.format+" ")) && e.r.IntN(4) == 0 {
		sep = ""
	}
	text += sep + e.trailer(e.d.text)
	if e.r.IntN(3) > 0 {
		text += "\n"
	}
	return text
}

// trailerHabit: clean continuations, a closing remark after the last.
func trailerHabit(e *env, pos []int) ([]string, bool) {
	chunks := cleanChunks(e.d.text, pos)
	chunks[len(chunks)-1] = e.addTrailer(chunks[len(chunks)-1], false)
	return chunks, true
}

// openAnswer is what comes before the document in chunk 0 of a fenced
// answer: the fence line, and with pre a first preamble before it.
func (e *env) openAnswer(f fence, pre bool) string {
	s := f.open + "\n"
	if pre {
		s = e.firstPreamble() + e.sep(4) + s
	}
	return s
}

// closeAnswer ends the last chunk of a fenced answer: the closing fence on
// a line of its own, with or without a final line break, or a trailer.
func (e *env) closeAnswer(text string, f fence, trail bool) string {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += f.close
	if trail {
		return e.addTrailer(text, true)
	}
	if e.r.IntN(2) == 0 {
		text += "\n"
	}
	return text
}

// wholeFence wraps the whole answer in a fence (chunk 0 opens it, the last
// chunk closes it; one chunk for whole-fence-single), sometimes with a
// preamble before it and a trailer after it.
func wholeFence(e *env, pos []int) ([]string, bool) {
	f, ok := e.fence()
	if !ok {
		return nil, false
	}
	chunks := cleanChunks(e.d.text, pos)
	last := len(chunks) - 1
	chunks[0] = e.openAnswer(f, e.r.IntN(4) == 0) + chunks[0]
	chunks[last] = e.closeAnswer(chunks[last], f, e.r.IntN(4) == 0)
	return chunks, true
}

// fenceEach: chunk 0 opens a fence, every continuation reopens one (the
// same style, now and then another) that the length limit cuts before its
// close, and the last chunk closes it.
func fenceEach(e *env, pos []int) ([]string, bool) {
	f, ok := e.fence()
	if !ok {
		return nil, false
	}
	chunks := cleanChunks(e.d.text, pos)
	last := len(chunks) - 1
	chunks[0] = f.open + "\n" + chunks[0]
	for i := 1; i <= last; i++ {
		g := f
		if e.r.IntN(4) == 0 {
			g, _ = e.fence()
		}
		chunks[i] = g.open + "\n" + chunks[i]
	}
	chunks[last] = e.closeAnswer(chunks[last], f, false)
	return chunks, true
}

// preambleFirst introduces the whole answer in chunk 0: before a fence
// around it, or, for formats whose first line no sentence can be, before
// the bare document.
func preambleFirst(e *env, pos []int) ([]string, bool) {
	chunks := cleanChunks(e.d.text, pos)
	f, ok := e.fence()
	if !ok || strings.Contains(" "+bare+" ", " "+e.d.format+" ") && e.r.IntN(2) == 0 {
		chunks[0] = e.firstPreamble() + e.sep(4) + chunks[0]
		return chunks, true
	}
	last := len(chunks) - 1
	chunks[0] = e.openAnswer(f, true) + chunks[0]
	chunks[last] = e.closeAnswer(chunks[last], f, false)
	return chunks, true
}

// restarts has every continuation, or a random subset of at least one,
// reproduce text before the cut (rep's reproduction of prev) and go on
// from the cut. It reports whether rep changed anything at least once.
func restarts(e *env, pos []int, rep func(prev string) (string, bool)) ([]string, bool) {
	t := e.d.text
	chunks := cleanChunks(t, pos)
	n := len(chunks) - 1
	all := e.r.IntN(2) == 0
	must := 1 + e.r.IntN(n)
	applied := false
	for i := 1; i <= n; i++ {
		if !all && i != must && e.r.IntN(2) == 0 {
			continue
		}
		s, ok := rep(t[:pos[i]])
		chunks[i] = s + chunks[i]
		applied = applied || ok
	}
	return chunks, applied
}

// restartTop: the continuation reproduces the document from its very
// start up to the cut, exactly, then goes on.
func restartTop(e *env, pos []int) ([]string, bool) {
	return restarts(e, pos, func(prev string) (string, bool) { return prev, prev != "" })
}

// restartTopWS: the same with whitespace differences of a few kinds
// chosen for the case.
func restartTopWS(e *env, pos []int) ([]string, bool) {
	kinds := e.wsKinds()
	return restarts(e, pos, func(prev string) (string, bool) {
		s := wsVary(e, prev, kinds)
		return s, s != prev
	})
}

// restartEarlier: the continuation reproduces the document from the start
// of a line anywhere before the cut.
func restartEarlier(e *env, pos []int) ([]string, bool) {
	return restarts(e, pos, func(prev string) (string, bool) {
		i := e.earlierLine(prev)
		return prev[i:], i < len(prev)
	})
}
