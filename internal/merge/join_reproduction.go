package merge

import "strings"

// minReproduction is the least content (bytes that are not whitespace) a
// reproduction must hold to be taken without the exact steps' tests: text
// this long that equals the document's end, from one of its line starts,
// is no coincidence. From the document's very start, over more than one
// line, strongOverlap bytes will do.
const minReproduction = 64

// reproductionStep: the continuation starts the document over, from its
// first line or from any later line start, and reproduces it up to the
// cut with whitespace changed (re-indented, re-spaced, re-wrapped, blank
// lines added or dropped), then goes on. Whatever its length: the content
// of the continuation's head, whitespace removed, is matched against the
// content of the document's end, so the cost follows the chunk.
func reproductionStep(c *joinCtx) (overlap, bool) {
	doc, next := c.doc, c.next
	nt := c.buf.content(next, len(next))
	// A border is at most as long as the continuation's content.
	from := contentStart(doc, len(nt))
	nd, dpos := c.buf.docContent(doc[from:])
	found := 0
	for _, l := range c.buf.borders(bytesView(nd), bytesView(nt), len(nt)) {
		if l < strongOverlap {
			break
		}
		start := from + int(dpos[len(nd)-l])
		if ls := strings.LastIndexByte(doc[:start], '\n') + 1; strings.TrimLeft(doc[ls:start], " \t") != "" {
			continue // not from a line's first content
		}
		if found > 0 {
			// A shorter match from another line start too: the
			// document's content repeats itself (examples at other
			// indentations), and the continuation may be its next copy.
			return overlap{}, false
		}
		if l < minReproduction && (start > 0 || !strings.Contains(doc, "\n")) {
			// Shorter, only a restart from the document's very start,
			// over more than its first line.
			continue
		}
		found = l
	}
	if found == 0 || contentBefore(doc, nd[len(nd)-min(found, minReproduction):]) {
		// (The document wrote its last lines' content before, whitespace
		// aside: a match up to whitespace may be the document's next copy.)
		return overlap{}, false
	}
	cut := contentEnd(next, found)
	return overlap{cut: trailingRun(doc, next, cut), method: methodReproduction, confidence: confReproduction}, true
}

// restatedWhole is the reproduction step run before any repeated
// structure is taken away: a continuation that starts the document over
// from a line start, with whitespace changed, also restates the structure
// it started from (the JSON document's opening containers, the CSV header),
// which is then part of the reproduction rather than structure to remove
// (and the element that structure seems to open is no restart). It takes
// only what the exact steps cannot: a reproduction longer than the longest
// exact repeat.
func restatedWhole(c *joinCtx) (overlap, bool) {
	if c.doc == "" || c.next == "" {
		return overlap{}, false
	}
	ov, ok := reproductionStep(c)
	if !ok || ov.cut <= c.buf.longestBorder(c.doc, c.next) {
		return overlap{}, false
	}
	return ov, true
}

// longestBorder is the length of the longest exact repeat of doc's end
// that next starts with, 0 when none.
func (s *buffers) longestBorder(doc, next string) int {
	if bs := s.borders(doc, next, len(next)); len(bs) > 0 {
		return bs[0]
	}
	return 0
}

// content appends to the buffer the bytes of s that are not whitespace, up
// to max of them, and returns them.
func (s *buffers) content(t string, max int) []byte {
	out := s.norm[:0]
	for i := 0; i < len(t) && len(out) < max; i++ {
		if !isSpace(t[i]) {
			out = append(out, t[i])
		}
	}
	s.norm = out
	return out
}

// docContent returns the bytes of s that are not whitespace and, for each,
// its offset in s.
func (s *buffers) docContent(t string) ([]byte, []int32) {
	out, pos := s.dnorm[:0], s.pos[:0]
	for i := 0; i < len(t); i++ {
		if !isSpace(t[i]) {
			out = append(out, t[i])
			pos = append(pos, int32(i))
		}
	}
	s.dnorm, s.pos = out, pos
	return out, pos
}

// contentStart returns where in doc its last n bytes of content begin (0
// when it holds fewer).
func contentStart(doc string, n int) int {
	i := len(doc)
	for i > 0 && n > 0 {
		i--
		if !isSpace(doc[i]) {
			n--
		}
	}
	return i
}

// contentEnd returns the offset in t just past its first n bytes of
// content.
func contentEnd(t string, n int) int {
	i := 0
	for ; i < len(t) && n > 0; i++ {
		if !isSpace(t[i]) {
			n--
		}
	}
	return i
}

// trailingRun decides how much of the whitespace after a reproduction that
// ends at cut is the reproduction's: as much as the document ends with,
// when it ends with whitespace (splitRun reads the run), none otherwise.
func trailingRun(doc, next string, cut int) int {
	end := cut
	for end < len(next) && isSpace(next[end]) {
		end++
	}
	if end == cut || strings.TrimRight(doc, " \t\r\n") == doc {
		return cut
	}
	return splitRun(doc, next, end)
}

// contentBefore reports whether the content rep (whitespace removed), which
// ends the document, also stands in it earlier with other whitespace (an
// example repeated at another indentation), ending before its last byte of
// content (within overlapWindow bytes). A copy the document wrote with the
// same whitespace is no such doubt: records that share their content.
func contentBefore(doc string, rep []byte) bool {
	e := len(strings.TrimRight(doc, " \t\r\n"))
	if e == 0 {
		return false
	}
	lo := max(0, e-overlapWindow-2*len(rep))
	var b []byte
	var pos []int
	for i := lo; i < e; i++ {
		if !isSpace(doc[i]) {
			b, pos = append(b, doc[i]), append(pos, i)
		}
	}
	if len(b) < len(rep) {
		return false
	}
	last := doc[pos[len(b)-len(rep)]:e]
	for k := 0; k+len(rep) < len(b); {
		j := strings.Index(bytesView(b[k:len(b)-1]), bytesView(rep))
		if j < 0 {
			return false
		}
		k += j
		if doc[pos[k]:pos[k+len(rep)-1]+1] != last {
			return true
		}
		k++
	}
	return false
}
