package merge

import "strings"

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
		(c.habit > 0 || c.habit == 0 && indentRestart(c.doc, ls, c.next)) {
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
// punctuation alone repeats too regularly to tell.
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
	if s < 1 || s >= r || c.doc[s-1] != '\n' || strings.Trim(c.doc[s:r], "\n") != "" || alnumCount(partial) == 0 ||
		writesKeptReading(c.doc[:r], partial, r-s-1) {
		return overlap{}, false
	}
	return overlap{cut: c.longest, method: methodStructural, confidence: confRestart}, true
}

// writesKeptReading reports whether the document's recent lines (before
// the cut line) show the reading a restart of the cut line from the blank
// lines before it would leave, kept, as the document's own: the cut line
// written as a line of its own, or a line followed, after gap blank lines,
// by a line that starts with all of it ("[foo]" and "[foo]: /url", a
// reference and its definition).
func writesKeptReading(doc, partial string, gap int) bool {
	w := tail(doc, 4<<10)
	if i := strings.IndexByte(w, '\n'); i >= 0 && len(w) < len(doc) {
		w = w[i+1:] // the first line may be cut
	}
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
	case has && restartable(partial, c.bias) && !(c.habit < 0 && !c.bias && (line && alnumCount(partial) == 0 || len(partial) < strongOverlap)):
		// (From a model that goes on at the other joins, a bare partial
		// line, or one too short to rule out coincidence, that the
		// continuation starts with is the document's doubling: "Ελλάδα "
		// + "Ελλάδα Zürich".)
		return true
	case c.tr.indentRestart && c.habit == 0 && indentRestart(doc, r, next):
		return true
	case line && c.habit > 0 && has && (r == 0 || doc[r-1] == '\n'):
		// A model that starts over at the other joins restarts this line
		// too, unless keeping it makes the header line the line before
		// calls for.
		return c.tr.keepsHeader == nil || !c.tr.keepsHeader(doc, r, next)
	case !line && c.habit > 0 && has && strings.TrimSpace(partial) != "":
		return true
	}
	return false
}

// restartable reports whether an incomplete record is distinctive enough that
// a continuation starting with it is taken to restart it: two bytes with some
// content (a record starts at a line or element boundary, so even a short
// repeat there is unlikely to be coincidence), or anything after repeated
// structure. Indentation alone is decided by indentRestart.
func restartable(partial string, bias bool) bool {
	if strings.TrimSpace(partial) == "" {
		return false
	}
	if bias {
		return true
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
	partial := doc[lineStart:]
	if partial == "" || !strings.HasPrefix(next, partial) || strings.TrimLeft(partial, " \t") != "" {
		return false
	}
	ind := len(next) - len(strings.TrimLeft(next, " \t"))
	if ind == len(next) {
		return false
	}
	// The line before, blank lines aside: a blank line calls for no
	// indentation of its own.
	prev, prevStart := lastTextLine(doc[:lineStart])
	target := len(prev) - len(strings.TrimLeft(prev, " \t"))
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
	if p := strings.TrimRight(prev, " \t\r"); p != "" && strings.ContainsRune("{([:", rune(p[len(p)-1])) {
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
	restart, cont := ind, len(partial)+ind
	return restart == target && cont != target
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
	w := doc[max(0, end-4<<10):end]
	if i := strings.IndexByte(w, '\n'); i >= 0 && len(w) < end {
		w = w[i+1:] // the first line may be cut
	}
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
