package merge

import (
	"strings"
	"unicode/utf8"
)

// whitespaceStep: a repeat equal to the document's end up to whitespace
// (re-wrapped or re-indented).
func whitespaceStep(c *joinCtx) (overlap, bool) {
	n, conf := c.buf.whitespaceOverlap(c.doc, c.next, c.habit, c.rewraps)
	if n > 0 {
		return overlap{cut: n, method: methodWhitespace, confidence: conf}, true
	}
	return overlap{}, false
}

// normalizeInto appends s to buf with every run of whitespace collapsed to
// one space.
func normalizeInto(buf []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if isSpace(c) {
			j := i + 1
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			buf = append(buf, ' ')
			i = j
			continue
		}
		buf = append(buf, c)
		i++
	}
	return buf
}

// normContains reports whether the normalized h contains pat (normalized
// text, whose bytes pat[so:so+sl] hold no space), without normalizing h:
// each raw occurrence of that run is checked outwards, a space of pat
// matching a whole run of whitespace in h.
func normContains(h string, pat []byte, so, sl int) bool {
	seg := bytesView(pat[so : so+sl])
	for from := 0; ; {
		q := strings.Index(h[from:], seg)
		if q < 0 {
			return false
		}
		q += from
		from = q + 1
		ok := true
		for i, j := so-1, q-1; i >= 0 && ok; i-- {
			switch {
			case j < 0:
				ok = false
			case pat[i] == ' ':
				if !isSpace(h[j]) {
					ok = false
				}
				for j >= 0 && isSpace(h[j]) {
					j--
				}
			case h[j] != pat[i]:
				ok = false
			default:
				j--
			}
		}
		for i, j := so+sl, q+sl; i < len(pat) && ok; i++ {
			switch {
			case j >= len(h):
				ok = false
			case pat[i] == ' ':
				if !isSpace(h[j]) {
					ok = false
				}
				for j < len(h) && isSpace(h[j]) {
					j++
				}
			case h[j] != pat[i]:
				ok = false
			default:
				j++
			}
		}
		if ok {
			return true
		}
	}
}

// normEnd returns the offset in s just past its first l normalized bytes
// (a whitespace run counts as one byte and is passed whole).
func normEnd(s string, l int) int {
	i := 0
	for n := 0; n < l && i < len(s); n++ {
		if isSpace(s[i]) {
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			continue
		}
		i++
	}
	return i
}

// normTailStart returns where in doc (at most window bytes back) to start
// normalizing so that the normalized tail holds at least need bytes.
func normTailStart(doc string, need, window int) int {
	lo := max(0, len(doc)-window)
	n := 0
	i := len(doc)
	for i > lo && n < need {
		if isSpace(doc[i-1]) {
			for i > lo && isSpace(doc[i-1]) {
				i--
			}
		} else {
			i--
		}
		n++
	}
	return i
}

// whitespaceOverlap finds a repeat that differs from the document only in
// whitespace (re-wrapped or re-indented) and returns how many bytes of next it
// spans. habit is how the model is taken to continue at the other joins (as
// joinCtx.habit; callers may weaken it): from one that starts over (habit >
// 0) a shorter repeat will do, and rewraps (the other joins re-wrap what
// they repeat) lets a less varied one do. Only as much of the document's tail is normalized
// as a repeat of next's head could span; the wider look back that rejects
// familiar phrases runs only for a candidate.
func (s *buffers) whitespaceOverlap(doc, next string, habit int, rewraps bool) (int, float64) {
	const window = 4 << 10
	// The shortest repeat taken: strongOverlap normalized bytes, or two
	// thirds of that from a model that re-emits what it wrote at the other
	// joins.
	minLen := strongOverlap
	if habit > 0 {
		minLen = strongOverlap * 2 / 3
	}
	// A border of minLen bytes or more ends with the document's last minLen
	// normalized bytes, so each run of non-space bytes in them occurs in
	// next's head as it is: look for the longest before normalizing
	// anything, then for all of them in the normalized head.
	var buf [strongOverlap]byte
	last := buf[:minLen]
	if !normalizedTail(doc, last) {
		return 0, 0
	}
	so, sl := longestWord(last)
	h := head(next, window)
	if sl == 0 || !normContains(h, last, so, sl) {
		return 0, 0
	}
	s.norm = normalizeInto(s.norm[:0], h)
	ns := s.norm
	if len(ns) < minLen {
		return 0, 0
	}
	// A border is at most len(ns) long; wordBoundary looks a rune further back.
	from := normTailStart(doc, len(ns)+utf8.UTFMax+1, window)
	s.dnorm = normalizeInto(s.dnorm[:0], doc[from:])
	ds := bytesView(s.dnorm)
	bs := s.borders(ds, bytesView(ns), window)
	if len(bs) == 0 {
		return 0, 0
	}
	l := bs[0]
	rep := ns[:l]
	if tooPlain(rep, minLen, habit, rewraps) || !wordBoundary(ds, len(ds)-l) {
		return 0, 0
	}
	if cut, ok := s.rewrapCut(doc, next, rep, ds, from, window); ok {
		return cut, confWhitespace
	}
	return 0, 0
}

// normalizedTail fills last with the document's last len(last) bytes as
// normalizeInto would write them, each run of whitespace one space. It
// reports false when the document is shorter than that.
func normalizedTail(doc string, last []byte) bool {
	k := len(last)
	for i := len(doc); i > 0 && k > 0; {
		if isSpace(doc[i-1]) {
			for i > 0 && isSpace(doc[i-1]) {
				i--
			}
			k--
			last[k] = ' '
			continue
		}
		i--
		k--
		last[k] = doc[i]
	}
	return k == 0
}

// longestWord returns the offset and length of the longest run of
// non-space bytes in normalized text (the first of equal ones), length 0
// when there is none.
func longestWord(norm []byte) (so, sl int) {
	for i := 0; i < len(norm); {
		j := i
		for j < len(norm) && norm[j] != ' ' {
			j++
		}
		if j-i > sl {
			so, sl = i, j-i
		}
		i = j + 1
	}
	return so, sl
}

// tooPlain reports whether a normalized repeat is too short or too plain
// to be taken: it needs minLen bytes and three separators, or one in a
// repeat twice as long (a path or a URL is one long word), and substance.
// From a model that re-wraps its repeats at the other joins (rewraps, with
// habit > 0), any repeat of two words or more and some variety will do.
func tooPlain(rep []byte, minLen, habit int, rewraps bool) bool {
	l := len(rep)
	if sp := countByte(rep, ' '); l < minLen || sp < 3 && (sp < 1 || l < 2*strongOverlap) || !substantive(bytesView(rep)) {
		if nonSpace, distinct := contentBytes(bytesView(rep)); !rewraps || habit <= 0 || l < minLen || sp < 1 || nonSpace < 6 || distinct < 2 || distinct < 3 && nonSpace < 10 {
			return true
		}
	}
	return false
}

// rewrapCut returns where in next a repeat of the document's end (rep, the
// normalized repeat; ds, the normalized document from offset from) ends,
// and false when the repeat reads as the document's own way of going on:
// a whole line repeated at a line boundary, the same lines only indented
// differently, or words the document has written before.
func (s *buffers) rewrapCut(doc, next string, rep []byte, ds string, from, window int) (int, bool) {
	l := len(rep)
	cut := normEnd(next, l)
	docStart := normTailStart(doc, l, window)
	docRep := doc[docStart:]
	if ownLine(doc, docStart, next[:cut]) {
		return 0, false
	}
	// The same text with the same line breaks, only indented or spaced
	// differently (or not differently at all, which the exact match judged
	// already), is how documents of examples and aligned columns go on, not
	// how a model re-wraps what it repeats. So is one with more or fewer
	// blank lines, when it is short (examples that vary only in those); a
	// long one is a model laying out again what it starts over.
	if layout, blanks := sameBreaks(docRep, next[:cut]); layout && (l < 2*strongOverlap || blanks) && !foreignIndent(recentLines(doc, window), next[:cut]) {
		return 0, false
	}
	if rep[l-1] == ' ' {
		cut = splitRun(doc, next, cut)
	}
	if from > max(0, len(doc)-window) {
		s.dnorm = normalizeInto(s.dnorm[:0], tail(doc, window))
		ds = bytesView(s.dnorm)
	}
	// A document that has written these words before is evidence only if it
	// wrote them the same way (the continuation may be its next copy) or
	// twice in a row (it goes on doubling them).
	if repeatedNearby(ds, bytesView(rep)) && (repeatedNearby(tail(doc, window), next[:cut]) || doubledNormalized(ds, bytesView(rep))) {
		return 0, false
	}
	return cut, true
}

// foreignIndent reports whether a repeat indents a line with a byte (a
// tab, a space) that the document's lines never start with: code indented
// with tabs repeated with spaces is the model's re-indentation, never the
// document's next copy of those lines.
func foreignIndent(doc, rep string) bool {
	var docUses, repUses [2]bool // tab, space
	lead := func(s string, uses *[2]bool) {
		for line := range strings.Lines(s) {
			switch {
			case strings.HasPrefix(line, "\t"):
				uses[0] = true
			case strings.HasPrefix(line, " "):
				uses[1] = true
			}
		}
	}
	lead(doc, &docUses)
	// The repeat's first line goes on with the cut one, whatever leads
	// it (the line break a preamble's separator left too).
	if _, more, ok := strings.Cut(strings.TrimLeft(rep, " \t\r\n"), "\n"); ok {
		lead(more, &repUses)
	}
	return repUses[0] && !docUses[0] || repUses[1] && !docUses[1]
}

// ownLine reports whether a repeat (next's head rep, of the document from
// docStart) is one whole line at a line boundary, which may be the
// document's own, as for exact repeats (one broken into several lines is a
// re-wrap).
func ownLine(doc string, docStart int, rep string) bool {
	return strings.HasSuffix(doc, "\n") && lineStartAt(doc, docStart) && strings.Count(doc[docStart:], "\n") < 2 && strings.Count(strings.TrimSpace(rep), "\n") == 0
}

// splitRun decides how much of the whitespace run that ends a repeat
// (next[:cut] ends with it) is the repeat's and how much the new text's,
// when the document ends with whitespace too. The document's newlines, as the
// repeat rewrites them, come first: newlines beyond their number are the new
// text's; and a run that starts with spaces before its newlines rewrote the
// document's line break as a space (a re-wrap), so its newlines are new.
func splitRun(doc, next string, cut int) int {
	d := len(doc)
	for d > 0 && isSpace(doc[d-1]) {
		d--
	}
	wd := doc[d:]
	r := cut
	for r > 0 && isSpace(next[r-1]) {
		r--
	}
	run := next[r:cut]
	if len(run) > len(wd) && strings.HasPrefix(run, wd) {
		// The repeat ends with the document's whitespace as it stands:
		// the rest of the run is the new text's.
		return r + len(wd)
	}
	nd, nr := strings.Count(wd, "\n"), strings.Count(run, "\n")
	if nr == 0 && strings.ContainsAny(wd, "\n\t") {
		// Spaces then tabs: the repeat wrote the document's line break or
		// indentation as spaces, the tabs indent the new text.
		if k := strings.TrimRight(run, "\t"); k != run && k != "" && strings.Trim(k, " ") == "" {
			return r + len(k)
		}
	}
	if nd == 0 || nr == 0 {
		return cut
	}
	if nr > nd {
		// Keep the last nr-nd newlines (and what follows them).
		k := len(run)
		for n := 0; n < nr-nd; n++ {
			k = strings.LastIndexByte(run[:k], '\n')
		}
		return r + k
	}
	if run[0] != '\n' && strings.Trim(wd, "\n") == "" {
		return r + strings.IndexByte(run, '\n')
	}
	return cut
}

// doubledNormalized reports whether the normalized text ds holds rep twice
// in a row before its end (a space between the copies allowed).
func doubledNormalized(ds, rep string) bool {
	r := strings.TrimSpace(rep)
	if r == "" {
		return false
	}
	return strings.Contains(ds[:len(ds)-1], r+" "+r) || strings.Contains(ds[:len(ds)-1], r+r)
}

// sameBreaks reports whether a and b, equal but for whitespace, lay out
// their lines alike (or are equal): between their first and last non-space
// bytes, every run of whitespace in one holds a newline exactly when the
// matching run in the other does, and runs within a line are equal or both
// padding (two bytes or more). They then differ only in indentation, blank
// lines or column alignment, as examples and tables of a document do; a
// model re-wrapping or re-spacing a repeat changes breaks or single spaces.
// blanks reports whether each pair of runs also holds as many newlines (the
// same blank lines).
func sameBreaks(a, b string) (layout, blanks bool) {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true, true
	}
	breaks, blanks := false, true
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if !isSpace(a[i]) || !isSpace(b[j]) {
			if a[i] != b[j] {
				return false, false
			}
			i++
			j++
			continue
		}
		na, nb := 0, 0
		i0, j0 := i, j
		for ; i < len(a) && isSpace(a[i]); i++ {
			if a[i] == '\n' {
				na++
			}
		}
		for ; j < len(b) && isSpace(b[j]); j++ {
			if b[j] == '\n' {
				nb++
			}
		}
		if (na > 0) != (nb > 0) {
			return false, false
		}
		if na == 0 && a[i0:i] != b[j0:j] && (i-i0 < 2 || j-j0 < 2) {
			return false, false
		}
		breaks = breaks || na > 0
		blanks = blanks && na == nb
	}
	return breaks && i == len(a) && j == len(b), blanks
}
