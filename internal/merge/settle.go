package merge

import "strings"

// settle picks the cut the format verifies: the cascade's answer first, then
// no cut, then every shorter exact repeat and every restart (of the format's
// restarts in doc). When none verifies, the chunk (less its envelope) is
// kept whole, so no text is ever lost.
func settle(c *joinCtx, f format, ov overlap, last bool) (string, string, int, bool) {
	doc, t := c.doc, c.next
	try := func(cut int) (string, string, bool) {
		rest, note := f.adjust(doc, t[cut:], last)
		if cut > 0 && strings.Contains(note, noteRowSeparated) {
			// A repeat's cut lies inside a line the model wrote: the
			// bytes on both sides are one run of its text. A row break
			// put there splits that line between two fields, a boundary
			// that only the cut placed (any delimiter would do), so it
			// verifies nothing about the cut. (A JSON value that closes
			// before the next opens shows its boundary by itself.)
			return rest, note, false
		}
		return rest, note, f.verify(doc, rest, last)
	}
	if rest, note, ok := try(ov.cut); ok {
		if strings.Contains(note, noteRawEscaped) {
			// Raw text in a string is a repair: a long exact repeat of the
			// document's end that joins without it is the simpler reading.
			if bs := c.buf.borders(doc, t, overlapWindow); len(bs) > 0 && bs[0] >= strongOverlap && bs[0] != ov.cut {
				if r, n, ok := try(bs[0]); ok && !strings.Contains(n, noteRawEscaped) {
					return r, n, bs[0], true
				}
			}
		}
		return rest, note, ov.cut, true
	}
	if ov.cut != 0 {
		if rest, note, ok := try(0); ok {
			return rest, note, 0, true
		}
	}
	cands := c.buf.borders(doc, t, overlapWindow)
	for _, r := range c.restarts {
		if p := doc[r:]; r < len(doc) && strings.HasPrefix(t, p) {
			cands = append(cands, len(p))
		}
	}
	for _, l := range cands {
		if l == ov.cut {
			continue
		}
		// A cut no step chose is evidence only if the text joins as it is:
		// with a repair of its own (a row separated), a one-byte border
		// such as a CSV delimiter would pass for a repeat.
		if rest, note, ok := try(l); ok && note == "" {
			return rest, note, l, true
		}
	}
	return t, "", 0, false
}

// keptRepeat returns the length of a repeat that the text appended at a
// join starts with and that the join kept: an exact copy of the document's
// last strongOverlap bytes or more, of content spanning a separator. Unless
// the job's other joins show a model that goes on (habit < 0) or the
// document shows it writes the text twice (it did before, or the repeat
// makes its last line a copy of the line before: a record written twice),
// such a join cannot be verified either way, and the merge reports it. 0
// when there is none.
func keptRepeat(c *joinCtx, rest string) int {
	if c.habit < 0 {
		return 0
	}
	doc := c.doc
	bs := c.buf.borders(doc, rest, overlapWindow)
	if len(bs) == 0 || bs[0] < strongOverlap {
		return 0
	}
	l := bs[0]
	rep := doc[len(doc)-l:]
	if !substantive(rep) || !strings.ContainsAny(strings.TrimSpace(rep), " \t\n") || doubledBefore(doc, rep) || completesRepeatedLine(doc, rep) {
		return 0
	}
	return l
}
