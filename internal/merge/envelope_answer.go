package merge

import "strings"

// readAnswerStart reads the envelope of an answer's first chunk: a
// preamble before the document ("Here is the CSV you asked for:"), a fence
// around the whole answer, and, when the chunk is also the last, the
// fence's close and a trailer. A whole-answer fence is removed where the
// format says its document cannot open with one (CSV, JSON, JSON Lines,
// code, diffs; Markdown only when the fence names Markdown; never prose).
func readAnswerStart(t string, c envCtx) envelope {
	e := envelope{text: t}
	e.cutAnswerPreamble(c)
	if e.cutWholeFence(c) {
		c.whole, c.wrapperOpen, c.answerFence = true, true, e.answerFence
	}
	if c.last {
		e.cutTrailer(c)
		if c.whole {
			e.cutClosingFence(c, false)
		}
	}
	return e
}

// cutWholeFence removes a fence line that opens the answer (after blank
// lines), reporting whether it did.
func (e *envelope) cutWholeFence(c envCtx) bool {
	t := e.text
	s := strings.TrimLeft(t, "\r\n")
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return false
	}
	info, ok := fenceLine(strings.TrimRight(s[:i], "\r"))
	if !ok || c.keepAnswerFence || !languageInfo(info) || strings.HasPrefix(s, " ") || !c.fences.answer.wraps(info, c.fences) {
		return false
	}
	rest := s[i+1:]
	e.answerFence.step(strings.TrimRight(s[:i], "\r"))
	e.removals = append(e.removals, Removal{Removed: t[:len(t)-len(rest)], Why: WhyUnwrappedFence, Evidence: []string{"a fence opens the answer"}})
	e.notes = append(e.notes, "code fence")
	e.text, e.open = rest, true
	return true
}

// cutAnswerPreamble removes a remark that opens the answer: a line of its
// own, before a fence around the answer or before a document that the
// format says cannot open with it, and the blank lines after it.
func (e *envelope) cutAnswerPreamble(c envCtx) {
	t := e.text
	i := strings.IndexByte(t, '\n')
	if i <= 0 || i > remarkMax+2 {
		return
	}
	first := strings.TrimRight(t[:i], "\r")
	m, after := leadingBreaks(t[i+1:])
	r, ok := judgeAnswerPreamble(first, after, m > 0, c)
	if !ok || !c.preamble.removes(r.score) {
		e.preamble.score = r.score
		return
	}
	e.preamble = remarkSeen{score: r.score, removed: true}
	e.removals = append(e.removals, Removal{Removed: t[:len(t)-len(after)], Why: WhyPreamble, Evidence: r.evidence})
	e.notes = append(e.notes, "preamble")
	e.text = after
}

// judgeAnswerPreamble weighs the answer's first line as a preamble: a
// remark before a fence that wraps the answer, or one the format says its
// document cannot open with.
func judgeAnswerPreamble(line, after string, blank bool, c envCtx) (remark, bool) {
	var r remark
	end, ok := remarkForm(line)
	if !ok || c.hasSyntax(line) {
		return r, false
	}
	r.evidence = append(r.evidence, "first line of the answer")
	formEvidence(end, &r)
	talk(line, false, &r)
	if blank {
		r.add(1, "blank line after it")
	}
	if bare(line, end, r) {
		return r, false
	}
	fl, body, _ := strings.Cut(after, "\n")
	info, fenced := fenceLine(strings.TrimRight(fl, "\r"))
	fenced = fenced && !c.keepAnswerFence && c.fences.answer.wraps(info, c.fences)
	if fenced {
		r.add(3, "before the fence around the answer")
		if c.fences.named(info) {
			// The model labels what follows as the format it was asked
			// for: it presents the answer.
			r.add(1, "the fence names the format")
		}
		after = body
	}
	// Two kinds of evidence that add up: a fence around the answer after
	// the line, and a document (inside that fence) that the format says
	// cannot open with it.
	if !strings.Contains(after, "\n") {
		// The chunk ends inside the document's first line ("exa"): the
		// next chunk goes on with it ("mple,section,markdown,html").
		after += c.lookahead
	}
	breaks := c.breaks != nil && c.breaks(line, after)
	if breaks {
		r.add(3, "the document cannot open with it")
	}
	if !fenced && !breaks {
		// Prose may open with any sentence: only a fence or the format
		// tells a preamble from the document's first line.
		return r, false
	}
	return r, true
}

// closedMidway reports whether a document merged after an answer's
// opening fence was removed closes that fence with a bare fence line and
// then goes on with more than a closing remark: read pairwise, the
// document's own fence lines leave a bare one unpaired with text after
// it. inValues: fences inside quoted values (CSV) are the values' own, so
// only fence lines outside quotes count. typed: the format's documents
// hold no prose (a fence around any answer is the model's), so a few
// lines in a remark's form after the close are a closing remark whatever
// their words ("**Done.**").
func closedMidway(doc string, inValues, typed bool) bool {
	var block fenceOpen
	bareAt, quotes := -1, 0
	for at := 0; at < len(doc); {
		line, _, _ := strings.Cut(doc[at:], "\n")
		next := at + len(line) + 1
		if was := block.open(); (!inValues || quotes%2 == 0) && block.step(line) && !was {
			bareAt = -1
			rest, _, _ := container(strings.TrimRight(line, "\r"))
			if info, _ := fenceLine(rest); info == "" {
				bareAt = min(next, len(doc))
			}
		}
		quotes += strings.Count(line, `"`) // the quotes before the next line
		at = next
	}
	if !block.open() || bareAt < 0 {
		return false
	}
	after := strings.TrimSpace(doc[bareAt:])
	first, _, _ := strings.Cut(after, "\n")
	return after != "" && !looksLikeRemark(first, true) && !(typed && remarksOnly(after))
}

// remarksOnly reports whether t is one to three lines (blank lines apart),
// each in a remark's form.
func remarksOnly(t string) bool {
	n := 0
	for _, l := range strings.Split(t, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, ok := remarkForm(l); !ok {
			return false
		}
		n++
	}
	return n >= 1 && n <= 3
}
