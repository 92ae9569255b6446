package merge

import (
	"strings"
	"unicode/utf8"
)

// The envelope step separates what the model said about the document from
// the document, chunk by chunk, before any join: a fence wrapped around the
// answer or a continuation, the overlap prompt's markers around an echo, a
// preamble, a trailer. Each removal is recorded (Result.Envelope), so every
// byte the merge drops that is not a verified repeat can be seen.

// envCtx is what the envelope step reads a chunk by: the document's end
// (site), the format's rules, and what the other chunks show.
type envCtx struct {
	site
	fences fenceRules
	blank  blankRules
	// wrapperOpen: an earlier continuation opened a wrapper fence that has
	// not been closed yet.
	wrapperOpen bool
	// wraps: every other continuation of the job opens with a fence line,
	// so one that opens this one is the model's wrapper too.
	wraps bool
	// habit is how the model continues at the job's other joins (see
	// habits): 1 it starts its cut line over.
	habit int
	// flipBlank takes the other reading of the line break after a
	// preamble, for a join the first reading does not verify.
	flipBlank bool
	// talks: most of the job's other continuations open with a remark.
	talks bool
	// alike: another continuation opens with the same remark-shaped line.
	alike bool
	// last: the chunk ends the answer, so its last paragraph may be a
	// trailer.
	last bool
	// endBlanks: the format's documents may end with blank lines of their
	// own (prose, Markdown), so those before a trailer are kept.
	endBlanks bool
	// whole: the answer's first chunk opened a fence around the whole
	// answer (removed), which the last chunk is to close; answerFence is
	// that fence, when known.
	whole       bool
	answerFence fenceOpen
	// keepAnswerFence: a fence opening the answer is a block of the
	// document's own, never a wrapper (the pipeline found it closed before
	// the document's end).
	keepAnswerFence bool
	// lookahead is the head of the chunk after the answer's first, which
	// the format reads the answer's first line against when the first
	// chunk holds no whole line of the document after it.
	lookahead string
	// preamble and trailer say how an uncertain remark is read: by its
	// evidence, or forced one way for the pipeline to verify the other.
	preamble, trailer reading
	// syntax reports whether a line has the format's own syntax (a
	// Markdown list item, a code statement): no remark has.
	syntax func(line string) bool
	// markup reports whether a line has the format's inline markup (a
	// Markdown link or code span); nil where the format has none.
	markup func(line string) bool
	// heading reports whether a line heads a section (see traits); nil
	// where the format has no headings.
	heading func(above, line string) int
	// proseAt reports whether the cut line opened a place where the format
	// writes prose (a code comment).
	proseAt func(partial string) bool
	// breaks reports whether a line appended where the document stands
	// would break the format, given what follows it; endBreaks whether a
	// line after the answer's last text (body) would (see format).
	breaks    func(line, after string) bool
	endBreaks func(body, line string) bool
	// lineBreak reads a preamble's line break by the format's structure
	// (see format).
	lineBreak func(t string) (keep, decided bool)
	// owesBlankLine reports whether the document, ended by the answer's
	// last text (body), is one line short that a blank line supplies (see
	// blankLineOwer); nil where the format never is.
	owesBlankLine func(body string) bool
}

// atProse reports whether the cut line opened a place where the format
// writes prose (a comment, a docstring), which a line of prose goes on.
func (c envCtx) atProse() bool {
	return c.proseAt != nil && !c.atLineStart && c.proseAt(c.partial)
}

// reading is how the envelope step reads an uncertain remark.
type reading int

const (
	// byEvidence: removed when its evidence is sure (remarkSure).
	byEvidence reading = iota
	// removeMaybe: removed when its evidence is at least remarkMaybe.
	removeMaybe
	// keepRemark: kept whatever its evidence.
	keepRemark
)

// envelope is a chunk read by the envelope step: the document's part of it
// and what was set aside.
type envelope struct {
	text     string   // what remains: the document's part
	notes    []string // short notes of what went, for Join.Stripped
	removals []Removal
	open     bool // a wrapper fence is left open for a later chunk to close
	// opened: the chunk opened a wrapper fence itself.
	opened bool
	// answerFence is the fence the answer's first chunk opened around the
	// whole answer (n 0: none).
	answerFence fenceOpen
	// echoed: the chunk opened with the overlap prompt's markers; echo is
	// the text between them, which the join verifies against the document.
	echoed bool
	echo   string
	// echoCut: the chunk ended before the end marker.
	echoCut bool
	// judged: a line break after a preamble was judged the separator's or
	// the text's (see blankLineIsNew); the other reading is the one
	// envCtx.flipBlank gives.
	judged bool
	// preamble and trailer are the evidence of the remarks the chunk
	// opens and ends with (score 0 when none had a remark's form), and
	// whether they were removed: the pipeline tries the other reading of
	// an uncertain one.
	preamble, trailer remarkSeen
}

// remarkSeen is what the envelope step saw of one remark.
type remarkSeen struct {
	score   int
	removed bool
}

// uncertain reports whether the other reading of the remark is worth a
// try: its evidence is between remarkMaybe and remarkSure.
func (r remarkSeen) uncertain() bool { return r.score >= remarkMaybe && r.score < remarkSure }

// remove records that removed, which the chunk held, was set aside.
func (e *envelope) remove(removed, why, note string, evidence ...string) {
	e.notes = append(e.notes, note)
	if removed != "" {
		e.removals = append(e.removals, Removal{Removed: removed, Why: why, Evidence: evidence})
	}
}

// readEnvelope removes what a model adds around a continuation that is not
// part of the document: a preamble line, the overlap markers (setting the
// echoed text aside for the join to check), a code fence wrapped around the
// chunk, and a closing remark.
func readEnvelope(t string, c envCtx) envelope {
	e := envelope{text: t}
	e.cutPreamble(c)
	e.cutMarkers()
	e.cutStrayEndMarker()
	opened := e.cutOpeningFence(c)
	e.opened = opened
	if !e.echoed {
		// The markers inside the wrapper fence.
		e.cutMarkers()
	}
	trailed := e.cutTrailer(c)
	e.open = opened || c.wrapperOpen
	if e.open || trailed && !c.docFenced {
		e.cutClosingFence(c, opened)
	}
	return e
}

// cutPreamble removes a remark of its own that opens the chunk, and at most
// one blank line after it.
func (e *envelope) cutPreamble(c envCtx) {
	t := e.text
	i := strings.IndexByte(t, '\n')
	if i <= 0 || i > remarkMax+2 {
		return
	}
	first := strings.TrimRight(t[:i], "\r")
	// A chunk that is nothing but such a line followed by whitespace (the
	// document's own line break or indentation, all the model had left)
	// loses the line too: it introduces nothing of the document. A line
	// that starts over the document's partial line ("Here is a sample of" +
	// "Here is a sample of ... blocks:") is the document's.
	t = t[i+1:]
	m, after := leadingBreaks(t)
	r, ok := judgePreamble(first, after, m > 0, c)
	if !ok {
		return
	}
	e.preamble.score = r.score
	if !c.preamble.removes(r.score) {
		return
	}
	e.preamble.removed = true
	e.judged = strings.HasPrefix(t, "\n") || strings.HasPrefix(t, "\r\n")
	// Before a fence line, a blank line is the remark's: a model introduces
	// its wrapper so ("Here's the rest:\n\n```csv"); not before the line
	// that closes the document's own block after a cut line of code
	// ("}" + "```"), which starts a line.
	next, _ := cutLineBreak(t)
	keep := blankLineIsNew(t, c) && !(fenceAfterBlank(t) && !closesBlock(next, c))
	if keep == c.flipBlank {
		if strings.HasPrefix(t, "\n") {
			t = t[1:]
		} else if strings.HasPrefix(t, "\r\n") {
			t = t[2:]
		}
	}
	e.removals = append(e.removals, Removal{Removed: e.text[:len(e.text)-len(t)], Why: WhyPreamble, Evidence: r.evidence})
	e.notes = append(e.notes, "preamble")
	e.text = t
}

// fenceAfterBlank reports whether t opens with one line break and then a
// fence line.
func fenceAfterBlank(t string) bool {
	m, r := leadingBreaks(t)
	fl, _, _ := strings.Cut(r, "\n")
	return m == 1 && isFenceLine(fl)
}

// removes reports whether a remark of the given score is removed under
// this reading.
func (rd reading) removes(score int) bool {
	switch rd {
	case byEvidence:
		return score >= remarkSure
	case removeMaybe:
		return score >= remarkMaybe
	}
	return false
}

// cutMarkers sets aside the overlap prompt's echoed block; the join checks
// it against the document's tail.
func (e *envelope) cutMarkers() {
	echo, rest, complete, ok := cutMarkers(e.text)
	if !ok {
		return
	}
	removed := strings.Replace(e.text[:len(e.text)-len(rest)], echo, "", 1)
	e.remove(removed, WhyOverlapMarkers, "overlap markers")
	e.text, e.echo, e.echoed, e.echoCut = rest, echo, true, !complete
}

// cutStrayEndMarker removes an end marker with no beginning (the model
// echoed only part).
func (e *envelope) cutStrayEndMarker() {
	s := strings.TrimLeft(e.text, " \t")
	if !strings.HasPrefix(s, endOverlap) {
		return
	}
	t := strings.TrimPrefix(strings.TrimPrefix(s[len(endOverlap):], "\r"), "\n")
	e.remove(e.text[:len(e.text)-len(t)], WhyOverlapMarkers, "overlap marker")
	e.text = t
}

// cutOpeningFence removes a fence line opening the chunk that the model
// wrapped around it, reporting whether it did.
func (e *envelope) cutOpeningFence(c envCtx) bool {
	t := e.text
	i := strings.IndexByte(t, '\n')
	if i < 0 {
		return false
	}
	// Glued to a cut line, a wrapper starts the chunk's first byte; an
	// indented fence there goes on with the line, and so does a run of
	// tildes that goes on with the cut line's ("#~" + "~~~~0") unless it
	// names the document's format ("~~" + "~~~md"). (Not backticks: models
	// open their wrapper right after a cut line's backtick.)
	info, ok := fenceLine(t[:i])
	glued := !c.atLineStart && t != "" && (t[0] == ' ' || t[0] == '\t' ||
		t[0] == '~' && strings.HasSuffix(c.partial, "~") && !c.fences.named(info))
	if !ok || !languageInfo(info) || glued || restartsCutLine(t[:i], c) || underlines(t[:i], c) {
		return false
	}
	// A fence right after a remark the envelope removed is the model's:
	// models introduce their wrapper so ("Here's the rest:\n```csv").
	// (Not where the cut line is itself the start of a fence line it
	// goes on with: "~" + "~~~~~~".)
	// Markdown, whose own fences are everywhere, keeps its rule.
	afterRemark := e.preamble.removed && c.fences.lineStart == wrapUnlessFenced &&
		(c.atLineStart || strings.Trim(c.partial, "`~ \t") != "")
	// After a remark, a fence inside a quoted value may be the value's
	// own (see fenceOfValue).
	own := c.noFence && e.preamble.removed && fenceOfValue(t, c)
	wrapper := !own && (afterRemark || wrapperFence(info, c) || !c.fences.inValues && !c.inFence && wrappedWhole(t, info, c))
	if !c.fences.inValues {
		// Either reading sets the fences of the rest of the chunk: the one
		// that leaves fewer fence lines with an info string inside an open
		// fence (where they are text, not the openers they look like) wins.
		keep := fenceAnomalies(c.partial+t, c.inFence)
		cut := fenceAnomalies(c.partial+t[i+1:], c.inFence)
		if keep != cut {
			wrapper = cut < keep
		}
	}
	if !wrapper || closedAtCutIndent(t, c) {
		return false
	}
	e.remove(t[:i+1], WhyWrapperFence, "code fence")
	e.text = t[i+1:]
	return true
}

// closedAtCutIndent reports whether a fence line opening a chunk (t) after
// a cut line of indentation alone is the document's own, as its close
// shows: the first line of t that can close it stands at the cut line's
// indentation, as a list item's code fence closes ("- a\n  " + "```\n
// c\n  ```\n- d"), and the document goes on after it. A wrapper closes at
// the chunk's end, where the model puts it, not at the document's
// indentation.
func closedAtCutIndent(t string, c envCtx) bool {
	fl, rest, _ := strings.Cut(t, "\n")
	if c.atLineStart || c.inFence || c.partial == "" || strings.Trim(c.partial, " ") != "" {
		return false
	}
	if info, _ := fenceLine(fl); c.fences.named(info) {
		// A fence that names the document's format is the model's.
		return false
	}
	var f fenceOpen
	if !f.step(c.partial + fl) {
		return false
	}
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimRight(line, "\r")
		if !f.step(line) {
			continue
		}
		if f.open() || !strings.HasPrefix(line, c.partial) || isSpace(line[len(c.partial)]) {
			return false
		}
		after, _, _ := strings.Cut(strings.TrimLeft(rest, "\r\n"), "\n")
		return strings.TrimSpace(after) != "" && !looksLikeRemark(strings.TrimRight(after, "\r"), false)
	}
	return false
}

// underlines reports whether a bare fence line opening a chunk underlines
// the document's last line, as reStructuredText does: after a line break
// and at most the cut line's indentation, a run of tildes exactly as long as
// that line's text ("oauthlib.oauth2.rfc6749\n" + 23 tildes). A wrapper's
// length has nothing to do with the line above it.
func underlines(fl string, c envCtx) bool {
	if strings.TrimSpace(c.partial) != "" || c.doc == "" {
		return false
	}
	// (Tildes, five at least: reStructuredText underlines with them, and a
	// wrapper of backticks, or of three tildes, matches a short line above
	// by chance: "\"na" and "```".)
	run := strings.TrimSpace(fl)
	if len(run) < 5 || strings.Count(run, "~") != len(run) {
		return false
	}
	above, _ := lastTextLine(strings.TrimSuffix(c.doc, c.partial))
	return utf8.RuneCountInString(strings.TrimSpace(above)) == len(run)
}

// cutTrailer removes closing remarks from the answer's last chunk: its last
// paragraphs (up to three), each after a blank line or a closing fence, of
// one to three lines that read as remarks. It reports whether it did.
func (e *envelope) cutTrailer(c envCtx) bool {
	if !c.last {
		return false
	}
	cut := false
	for k := 0; k < 3 && e.cutTrailerParagraph(c, k == 0); k++ {
		cut = true
	}
	return cut
}

// cutTrailerParagraph removes the last paragraph when it reads as a
// closing remark; first: it is the answer's last (whose evidence the
// pipeline may weigh again).
func (e *envelope) cutTrailerParagraph(c envCtx, first bool) bool {
	t, lines, blank, afterFence, ok := lastParagraph(e.text)
	if !ok {
		// Right after the document's last line, only where the format
		// says the line cannot be the document's.
		if t, lines, ok = lastLine(e.text); !ok || c.endBreaks == nil || !c.endBreaks(t, lines[0]) {
			return false
		}
	}
	if blank && !c.endBlanks {
		// The format's documents do not end with blank lines of their own
		// (code, diffs, records): every blank line before the remark is
		// the model's.
		body := strings.TrimRight(t, "\r\n")
		t = body + t[len(body):len(body)+lineBreakLen(t)]
	}
	if blank && strings.HasSuffix(t, "\n") && strings.HasPrefix(e.text[len(t):], "\n") && c.owesBlankLine != nil && c.owesBlankLine(t) {
		// The blank line before the remark is the document's last line
		// (a diff's empty context line): the remark follows it directly.
		t += "\n"
	}
	// A fence before the paragraph closes the wrapper only where one is
	// open; else it closes a block of the document's.
	wrapped := c.whole || c.wrapperOpen || e.opened
	afterFence = afterFence && wrapped
	// Across a blank line, only where the format's documents hold no
	// prose (Markdown's own block may close before its last paragraph),
	// or where the fence closes the answer's own wrapper as CommonMark
	// reads it (a Markdown answer in "~~~markdown": its blocks are fenced
	// otherwise) and the paragraph reads as a remark by itself.
	acrossBlank := func(before string) bool {
		return c.fences.wrapsAnyAnswer() || closesAnswerFence(before, c.answerFence)
	}
	if blank && !c.fences.wrapsAnyAnswer() && !(closesAnswerFence(t, c.answerFence) && allRemarks(lines)) {
		afterFence = false
	}
	if !afterFence && blank && wrapped {
		// A remark of the model's may stand between the fence and this
		// paragraph: "```" + "I stopped at the end of the article." +
		// "It should now parse without errors."
		afterFence = remarkAfterFence(t, acrossBlank)
	}
	r, ok := judgeTrailer(lines, t, afterFence, blank, c)
	if !ok {
		return false
	}
	if first {
		e.trailer.score = r.score
	}
	if !c.trailer.removes(r.score) {
		return false
	}
	e.trailer.removed = true
	e.removals = append(e.removals, Removal{Removed: e.text[len(t):], Why: WhyTrailer, Evidence: r.evidence})
	e.notes = append(e.notes, "closing remark")
	e.text = t
	return true
}

// remarkAfterFence reports whether t (the text before an answer's last
// paragraph) ends with a fence line and then one paragraph that reads as
// a remark by itself (looksLikeRemark), right after the fence or, where
// acrossBlank says so of the text before it, after a blank line.
func remarkAfterFence(t string, acrossBlank func(before string) bool) bool {
	before, lines, blank, fenced, ok := lastParagraph(t)
	if !ok || !fenced || blank && !acrossBlank(before) {
		return false
	}
	return allRemarks(lines)
}

// allRemarks reports whether every line reads as a closing remark by
// itself (looksLikeRemark).
func allRemarks(lines []string) bool {
	for _, l := range lines {
		if !looksLikeRemark(l, true) {
			return false
		}
	}
	return true
}

// closesAnswerFence reports whether the last line with text of t is a
// fence line that closes the answer's wrapper f (open), as CommonMark
// reads fences.
func closesAnswerFence(t string, f fenceOpen) bool {
	if !f.open() {
		return false
	}
	body := strings.TrimRight(t, " \t\r\n")
	line := body[strings.LastIndexByte(body, '\n')+1:]
	return f.step(line) && !f.open()
}

// lastParagraph splits the last paragraph of one to three lines off t. It
// returns what stays (the document's own line ends, and any blank lines it
// ends with, stay; the line break that separates the paragraph goes with
// it), the paragraph's lines, and whether a blank line or a fence line
// stands before it.
func lastParagraph(t string) (stay string, lines []string, blank, afterFence, ok bool) {
	s := strings.TrimRight(t, " \t\r\n")
	end := len(s)
	for k := 0; k < 3; k++ {
		i := strings.LastIndexByte(s[:end], '\n')
		if i < 0 {
			return t, nil, false, false, false
		}
		lines = append([]string{strings.TrimRight(s[i+1:end], "\r")}, lines...)
		before := s[:i]
		if stay, blank, afterFence, ok = paragraphStart(before); ok {
			return stay, lines, blank, afterFence, true
		}
		end = i
	}
	return t, nil, false, false, false
}

// lastLine splits the last line off t, keeping the line break before it.
func lastLine(t string) (stay string, lines []string, ok bool) {
	s := strings.TrimRight(t, " \t\r\n")
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return t, nil, false
	}
	return s[:i+1], []string{strings.TrimRight(s[i+1:], "\r")}, true
}

// paragraphStart reports whether a paragraph may start after before: a
// blank line or a fence line ends it. It returns what stays of t.
func paragraphStart(before string) (stay string, blank, afterFence, ok bool) {
	switch {
	case strings.HasSuffix(before, "\n"):
		// Blank line before the remark: the line break that made it goes
		// with the remark. A fence line before the blank line still
		// closes what came before the remark.
		b := strings.TrimRight(before, "\r\n")
		_, fenced := fenceLine(b[strings.LastIndexByte(b, '\n')+1:])
		return before, true, fenced, true
	case strings.HasSuffix(before, "\r\n\r"):
		return before[:len(before)-1], true, false, true
	case strings.HasSuffix(before, "\r"):
		return strings.TrimRight(before, "\r\n") + "\n", true, false, true
	}
	line := before[strings.LastIndexByte(before, '\n')+1:]
	if _, ok := fenceLine(line); ok {
		return before + "\n", false, true, true
	}
	return "", false, false, false
}

// cutClosingFence removes the wrapper's closing fence from the answer's
// last chunk, unless it closes a fence of the document's own.
func (e *envelope) cutClosingFence(c envCtx, opened bool) {
	u, ok := stripClosingFence(e.text)
	if !ok || !c.last || closesOwn(u, c) {
		// (A chunk the length limit cut never got to close its wrapper:
		// a fence line it ends with is the document's.)
		return
	}
	if !e.opened && c.answerFence.open() && !closesAnswerFence(e.text, c.answerFence) {
		// A fence line that cannot close the answer's wrapper (tildes
		// after backticks, a shorter run) is the document's own.
		return
	}
	note := "code fence"
	if opened {
		note = ""
	}
	why := WhyWrapperFence
	if c.whole {
		why = WhyUnwrappedFence
	}
	e.removeNote(e.text[len(u):], why, note)
	e.text = u
	e.open = false
}

// removeNote is remove with the note left out when it is "" (the opening
// fence's note already stands for the pair).
func (e *envelope) removeNote(removed, why, note string) {
	if note != "" {
		e.notes = append(e.notes, note)
	}
	if removed != "" {
		e.removals = append(e.removals, Removal{Removed: removed, Why: why})
	}
}

// lineBreakLen is the length of the line break t ends with after its last
// non-blank line: 2 for CRLF, 1 for LF, 0 for none.
func lineBreakLen(t string) int {
	body := strings.TrimRight(t, "\r\n")
	switch r := t[len(body):]; {
	case strings.HasPrefix(r, "\r\n"):
		return 2
	case strings.HasPrefix(r, "\n"):
		return 1
	}
	return 0
}
