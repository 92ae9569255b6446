package merge

import "strings"

// minReproduction is the least content (bytes that are not whitespace) a
// reproduction must hold to be taken without the exact steps' tests: text
// this long that equals the document's end, from one of its line starts,
// is no coincidence.
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
	bs := c.buf.borders(bytesView(nd), bytesView(nt), len(nt))
	for _, l := range bs {
		if l < minReproduction {
			break
		}
		start := from + int(dpos[len(nd)-l])
		if start > 0 && doc[start-1] != '\n' {
			continue // not from a line start
		}
		cut := contentEnd(next, l)
		return overlap{cut: trailingRun(doc, next, cut), method: methodWhitespace, confidence: confReproduction}, true
	}
	return overlap{}, false
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
