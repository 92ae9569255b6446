package merge

import (
	"math"
	"strings"
)

// indentationStep: a partial line of indentation alone that the
// continuation starts with (formats with blankIndentRestart). The model
// restarts the line or goes on with its indentation: the other joins
// decide (a model that starts over restarts this one too), or else the
// indentation the line before calls for. Code gets this in restartStep, as
// the restart of its line.
func indentationStep(c *joinCtx) (overlap, bool) {
	if !c.tr.blankIndentRestart {
		return overlap{}, false
	}
	ls := strings.LastIndexByte(c.doc, '\n') + 1
	p := c.doc[ls:]
	if ls > 0 && p != "" && c.longest <= len(p) && strings.TrimLeft(p, " \t") == "" && strings.HasPrefix(c.next, p) &&
		(c.habit > 0 && !indentContinues(c.doc, ls, c.next) || c.habit == 0 && indentRestart(c.doc, ls, c.next)) {
		return overlap{cut: len(p), method: methodStructural, confidence: confStructure}, true
	}
	return overlap{}, false
}

// restartStep: the continuation starts an incomplete record over from its
// start (at one of c.restarts, outermost first).
func restartStep(c *joinCtx) (overlap, bool) {
	for _, r := range c.restarts {
		if r < 0 || r >= len(c.doc) || !restartsAt(c, r) || c.longest > len(c.doc)-r {
			continue
		}
		partial := c.doc[r:]
		// A re-wrapped repeat of more than the partial record starts with
		// it too; it must be long enough by itself to outweigh the restart.
		n, conf := c.buf.whitespaceOverlap(c.doc, c.next, 0, c.rewraps)
		if n > len(partial) {
			return overlap{cut: n, method: methodWhitespace, confidence: conf}, true
		}
		return overlap{cut: len(partial), method: methodStructural, confidence: confRestart}, true
	}
	return blankLineRestart(c)
}

// blankLineRestart: the continuation starts the cut line over from the
// blank line, or the run of blank lines, before it ("\n" + "When
// [filing an issue]" after "...\n\nWhen [fil"). Kept, the repeat would
// leave the cut line complete and followed by a line that starts with all
// of it; a blank line carries nothing to mistake, so the partial line
// decides, as a restart of it alone would, unless the document shows the
// kept reading as its own (see writesKeptReading). A partial line of
// punctuation alone tells too, but not after a preamble (restartsBare).
func blankLineRestart(c *joinCtx) (overlap, bool) {
	if !c.tr.lines || len(c.restarts) == 0 {
		return overlap{}, false
	}
	r := c.restarts[len(c.restarts)-1]
	if r < 2 || r >= len(c.doc) {
		return overlap{}, false
	}
	partial := c.doc[r:]
	s := len(c.doc) - c.longest // where the repeat starts
	if s < 1 || s >= r || c.doc[s-1] != '\n' || strings.Trim(c.doc[s:r], "\n") != "" || !restartsBare(c.doc[:r], partial, c.afterRemark) ||
		writesKeptReading(c.doc[:r], partial, r-s-1) {
		return overlap{}, false
	}
	return overlap{cut: c.longest, method: methodStructural, confidence: confRestart}, true
}

// restartsBare reports whether a partial line restarted from the blank
// line before it tells a restart: one with a letter or a digit; one of
// punctuation alone ("-", "[!") only where no preamble stood before the
// text, whose separator is a line break the text may open with too; one of
// indentation alone, there too, where the document (doc, before the cut
// line) writes no line of blanks, which the repeat, kept, would leave
// ("\t" + "\n\t\t// Tell the emitter" in gofmt'd code).
func restartsBare(doc, partial string, afterRemark bool) bool {
	if strings.TrimSpace(partial) == "" {
		return !afterRemark && !writesBlankLines(doc)
	}
	return alnumCount(partial) > 0 || !afterRemark
}

// writesBlankLines reports whether the document's recent lines hold a
// line of spaces or tabs alone, or are too few (eight with text) to tell.
func writesBlankLines(doc string) bool {
	text := 0
	for line := range strings.Lines(recentLines(doc, 4<<10)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line != "" && strings.TrimLeft(line, " \t") == "":
			return true
		case line != "":
			text++
		}
	}
	return text < 8
}

// writesKeptReading reports whether the document's recent lines (before
// the cut line) show the reading a restart of the cut line from the blank
// lines before it would leave, kept, as the document's own: the cut line
// written as a line of its own, or a line followed, after gap blank lines,
// by a line that starts with all of it ("[foo]" and "[foo]: /url", a
// reference and its definition).
func writesKeptReading(doc, partial string, gap int) bool {
	w := recentLines(doc, 4<<10)
	prev, blanks := "", 0
	for line := range strings.Lines(w) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			blanks++
			continue
		}
		if line == partial || prev != "" && blanks == gap && strings.HasPrefix(line, prev) {
			return true
		}
		prev, blanks = line, 0
	}
	return false
}

// restartsAt reports whether the continuation restarts the record that
// begins at r.
func restartsAt(c *joinCtx, r int) bool {
	doc, next := c.doc, c.next
	partial := doc[r:]
	// HasPrefix first: it fails at once when the partial record (which may
	// be most of the document for an outer container) is longer.
	has := strings.HasPrefix(next, partial)
	line := c.tr.lines
	switch {
	case has && restartable(partial, c.bias) && !(c.habit < 0 && !c.bias && (line && alnumCount(partial) == 0 || len(partial) < strongOverlap && words(partial) < 3)):
		// (From a model that goes on at the other joins, a bare partial
		// line, or one too short to rule out coincidence, that the
		// continuation starts with is the document's doubling: "Ελλάδα "
		// + "Ελλάδα Zürich". Not three words or more, a phrase no document
		// writes twice in a row: "reflect one sort of " + "reflect one
		// sort of them".)
		return true
	case c.tr.indentRestart && c.habit == 0 && indentRestart(doc, r, next):
		return true
	case line && c.habit > 0 && has && lineStartAt(doc, r):
		// A model that starts over at the other joins restarts this line
		// too, unless keeping it makes the header line, or the
		// indentation, the line before calls for.
		return (c.tr.keepsHeader == nil || !c.tr.keepsHeader(doc, r, next)) && !indentGoesOn(c, r)
	case !line && c.habit > 0 && has && strings.TrimSpace(partial) != "":
		return true
	}
	return false
}

// indentGoesOn reports whether the indentation the line before calls for
// says the partial line of indentation at r goes on (indentContinues): in
// code, and elsewhere only right after a line with text, since outside
// code a blank line starts a block of its own indentation (Markdown's
// examples, a list after a paragraph).
func indentGoesOn(c *joinCtx, r int) bool {
	afterBlank := strings.HasSuffix(strings.TrimRight(c.doc[:r], " \t\r"), "\n\n")
	return (c.tr.indentRestart || !afterBlank) && indentContinues(c.doc, r, c.next)
}

// restartable reports whether an incomplete record is distinctive enough that
// a continuation starting with it is taken to restart it: two bytes with some
// content (a record starts at a line or element boundary, so even a short
// repeat there is unlikely to be coincidence), or anything after repeated
// structure, indentation alone too. Elsewhere indentation alone is
// decided by indentRestart.
func restartable(partial string, bias bool) bool {
	if bias {
		// Restated structure is followed by the record in progress
		// started over, its indentation too (a diff's context line " "
		// + " }" after the file and hunk headers).
		return partial != ""
	}
	if strings.TrimSpace(partial) == "" {
		return false
	}
	// Punctuation alone ("|---", "{\"") repeats too regularly to be evidence.
	if len(partial) < 2 {
		return false
	}
	for i := 0; i < len(partial); i++ {
		if isWordByte(partial[i]) {
			return true
		}
	}
	return false
}

// indentRestart decides a continuation that starts with the indentation the
// document's last line was cut in: restarting the line gives the line
// next's indentation, continuing it gives partial plus next's. The line is
// restarted only where that gives exactly the indentation the previous line
// calls for and going on does not: its own, one level more when it opens a
// block, one level less when the line closes one (a level is the
// document's own indentation step). The line before is the last one with
// text.
func indentRestart(doc string, lineStart int, next string) bool {
	restart, cont := indentFits(doc, lineStart, next)
	return restart && !cont
}

// indentContinues reports whether going on with a partial line of
// indentation gives exactly the indentation the previous line calls for
// and restarting it does not: evidence against a restart that outweighs a
// model's habit of starting over ("\t" + "\t\t\th := f()" after a line
// that opens a block at three tabs).
func indentContinues(doc string, lineStart int, next string) bool {
	restart, cont := indentFits(doc, lineStart, next)
	return cont && !restart
}

// indentFits reports, for a continuation that starts with the indentation
// the document's last line was cut in, whether restarting the line and
// whether going on with it give the indentation the previous line calls
// for (see indentRestart).
func indentFits(doc string, lineStart int, next string) (restart, cont bool) {
	partial := doc[lineStart:]
	if partial == "" || !strings.HasPrefix(next, partial) || strings.TrimLeft(partial, " \t") != "" {
		return false, false
	}
	ind := len(next) - len(strings.TrimLeft(next, " \t"))
	if ind == len(next) {
		return false, false
	}
	// The line before, blank lines aside: a blank line calls for no
	// indentation of its own.
	prev, prevStart := lastTextLine(doc[:lineStart])
	target := len(prev) - len(strings.TrimLeft(prev, " \t"))
	learned, exact := learnedIndent(doc[:prevStart], prev, next[ind:])
	if exact {
		// The document's own lines say how it indents such a line after
		// such a line (Go's "case" at its "switch").
		return ind == target+learned, len(partial)+ind == target+learned
	}
	step := 0
	level := func() int {
		if step == 0 {
			step = indentStep(doc, prevStart)
			if step == 0 && (strings.HasPrefix(prev, "\t") || prev == "") {
				step = 1
			} else if step == 0 {
				step = 4
			}
		}
		return step
	}
	if learned != noIndent {
		// How the document goes on after lines like prev.
		target += learned
	} else if p := strings.TrimRight(prev, " \t\r"); p != "" && strings.ContainsRune("{([:", rune(p[len(p)-1])) {
		// The previous line opens a block: the next is indented one level more.
		target += level()
	} else if col, ok := openBracket(prev); ok {
		// The previous line leaves a bracket open after some of its
		// contents: the next lines up with them ("def f(self, a," +
		// "\n      b):").
		target = col + 1
	}
	if strings.IndexByte("}])", next[ind]) >= 0 {
		// The line closes a block: one level less.
		target -= level()
	}
	// Only an indentation the line before calls for exactly tells: the
	// lines of a docstring's or a comment's prose hang wherever their
	// writer aligned them ("        :param flags: …,\n" + 5 spaces + 7
	// spaces "all other flags are ignored."), and going on, the clean
	// reading, keeps every byte.
	return ind == target, len(partial)+ind == target
}

// noIndent is learnedIndent's answer when the document's lines show no
// one change.
const noIndent = math.MinInt

// learnedIndent returns the change of indentation the document's recent
// lines (before) show between a line like prev (its first token and last
// byte) and the next line with text, when they agree on one. Over the
// lines like prev followed by a line that starts with text's first token,
// the change is exact: the line's own convention (Go's "case" at its
// "switch"). Else, over those followed by a line that does not close a
// block, it is how the document goes on after such a line (a comment
// after "switch {" at the switch's level too); a line that closes a block
// is then one level less.
func learnedIndent(before, prev, text string) (d int, exact bool) {
	w := recentLines(before, 16<<10)
	pk, nk := indentKey(prev), firstToken(text)
	if pk == "" || nk == "" {
		return noIndent, false
	}
	var both, like []int // the changes seen
	last, lastInd := "", -1
	for line := range strings.Lines(w) {
		t := strings.TrimLeft(line, " \t")
		if strings.TrimSpace(t) == "" {
			continue
		}
		ind := len(line) - len(t)
		if lastInd >= 0 && last == pk {
			if firstToken(t) == nk {
				both = append(both, ind-lastInd)
			}
			if strings.IndexByte("}])", t[0]) < 0 {
				like = append(like, ind-lastInd)
			}
		}
		last, lastInd = indentKey(line), ind
	}
	switch {
	case len(both) > 0 && allEqual(both):
		return both[0], true
	case len(like) > 0 && allEqual(like):
		return like[0], false
	}
	return noIndent, false
}

// indentKey is what learnedIndent compares lines by: the first token and
// the last byte of the line's text.
func indentKey(line string) string {
	t := strings.TrimSpace(line)
	if t == "" {
		return ""
	}
	return firstToken(t) + " " + t[len(t)-1:]
}

// firstToken is the text's first word, or its first run of punctuation.
func firstToken(t string) string {
	i := 0
	word := i < len(t) && isWordByte(t[i])
	for i < len(t) && !isSpace(t[i]) && isWordByte(t[i]) == word {
		i++
	}
	return t[:i]
}

// allEqual reports whether every one of ds is the same.
func allEqual(ds []int) bool {
	for _, d := range ds {
		if d != ds[0] {
			return false
		}
	}
	return true
}

// openBracket returns the offset of the last bracket that line leaves open
// (outside its quoted strings): where a statement that goes on over the
// next lines aligns them.
func openBracket(line string) (int, bool) {
	var open []int
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			open = append(open, i)
		case (c == ')' || c == ']' || c == '}') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	if len(open) == 0 || quote != 0 {
		return 0, false
	}
	return open[len(open)-1], true
}

// maxIndentStep is the widest indentation step a document is read to use.
const maxIndentStep = 16

// indentStep is the document's indentation step before offset end: the
// most frequent change of indentation between two lines in a row (blank
// lines aside) among its last lines, the smaller on a tie, 0 when they
// show none. (The smallest change would be a stray one: a line aligned
// one space past another.)
func indentStep(doc string, end int) int {
	w := recentLines(doc[:end], 4<<10)
	// Counts of each change, up to the widest a step is (wider ones are
	// alignment, never a step).
	var counts [maxIndentStep + 1]int
	prev := -1
	for w != "" {
		line := w
		if i := strings.IndexByte(w, '\n'); i >= 0 {
			line, w = w[:i], w[i+1:]
		} else {
			w = ""
		}
		t := strings.TrimLeft(line, " \t")
		if strings.TrimSpace(t) == "" {
			continue
		}
		ind := len(line) - len(t)
		if d := abs(ind - prev); prev >= 0 && d > 0 && d <= maxIndentStep {
			counts[d]++
		}
		prev = ind
	}
	step := 0
	for d, n := range counts {
		if n > counts[step] {
			// (Ascending: a tie keeps the smaller.)
			step = d
		}
	}
	return step
}
