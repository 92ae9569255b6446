package merge

import (
	"strings"
	"unicode/utf8"
)

// exactStep: an exact repeat of the document's end that acceptExact finds
// significant. A short one may be the end of a re-wrapped repeat, which
// is taken instead when it is long enough by itself to outweigh it (unless
// the model re-wraps what it repeats at the other joins).
func exactStep(c *joinCtx) (overlap, bool) {
	b0 := c.longest
	if b0 <= 0 {
		return overlap{}, false
	}
	habit := c.habit
	if start := len(c.doc) - b0; habit > 0 && c.wholeLines && b0 < strongOverlap && !lineStartAt(c.doc, start) {
		// A model that starts over whole lines at the other joins tells
		// nothing of a short repeat from inside a line here.
		habit = 0
	}
	ok, conf := acceptExact(c.doc, b0, habit)
	if !ok && c.habit < 0 && gluedDoubling(c.doc, c.next, b0) {
		// The other joins go on, but this one repeats: left uncut, the
		// repeat would glue the document's cut token into one it never
		// writes ("quite rea" + "quite reasonably").
		return overlap{cut: b0, method: methodExact, confidence: confGlue}, true
	}
	if !ok && c.habit >= 0 && gluedCopy(c.doc, c.next, b0) {
		// Text the document wrote before, repeated where its next copy
		// would glue the cut token into one it never writes.
		return overlap{cut: b0, method: methodExact, confidence: confGlue}, true
	}
	if !ok {
		return overlap{}, false
	}
	if b0 < strongOverlap {
		habit := c.habit
		if !c.rewraps {
			habit = 0
		}
		n, wconf := c.buf.whitespaceOverlap(c.doc, c.next, habit, c.rewraps)
		if n > b0 && nonSpaceCount(c.next[:n]) > nonSpaceCount(c.next[:b0]) {
			return overlap{cut: n, method: methodWhitespace, confidence: wconf}, true
		}
	}
	return overlap{cut: b0, method: methodExact, confidence: conf}, true
}

// gluedDoubling reports whether a repeat of l bytes that a model going on
// at the job's other joins made is its repeat here all the same: it is
// significant by itself (acceptExact without the habit), and kept it would
// glue the document's last token to the repeat's first into a token the
// document does not write ("aliyu" + "github.com", "Outpu" + "n\":"). A
// document that goes on with a copy of its own end does not glue the two
// into a new word.
func gluedDoubling(doc, next string, l int) bool {
	if ok, _ := acceptExact(doc, l, 0); !ok || l >= len(next) {
		return false
	}
	w := tail(doc, leadWindow)
	return !gluePlausible(w, next) || splitWordRepeat(w, l)
}

// gluedCopy reports whether a long repeat of l bytes (strongOverlap at
// least, with content) that acceptExact turned down only because the document
// wrote its text before (repeatedNearby: the continuation may be the
// document's next copy) is the model's all the same: a next copy of the
// document's own would not glue the document's last token to its first
// into a token the document never writes ("size of the" + "e, that",
// "thee"), nor start inside a word and leave its tail standing as one
// ("return " + "turn false", see splitWordRepeat), while the text after
// the repeat joins as the document does.
func gluedCopy(doc, next string, l int) bool {
	if l < strongOverlap || l > len(doc) || l >= len(next) {
		return false
	}
	x := readExact(doc, l, 0)
	if !x.content || !repeatedNearby(doc, x.rep) {
		return false
	}
	w := tail(doc, leadWindow)
	return (!gluePlausible(w, next) || splitWordRepeat(w, l)) && gluePlausible(w, next[l:])
}

// splitWordRepeat reports whether a repeat of the document's last l bytes
// (which end with whitespace, where gluePlausible sees no glue) starts
// inside a word and, kept, would leave that word's tail standing as a word
// the document never writes ("expe|cted, err := ..." read again
// after a line break: a line that opens with "cted"). A document's own
// copy of its text starts where a word does.
func splitWordRepeat(w string, l int) bool {
	s := len(w) - l
	if s <= 0 || !isWordByte(w[s-1]) || !isWordByte(w[s]) || !isSpace(w[len(w)-1]) {
		return false
	}
	e := s
	for e < len(w) && isWordByte(w[e]) {
		e++
	}
	if e == len(w) {
		return false // the repeat is a word's tail alone
	}
	return !usesWhole(w[:s], w[s:e], true) && !usesWhole(w[e:], w[s:e], true)
}

// exactConfidence is an exact repeat's confidence: it grows with its
// length up to two strongOverlap.
func exactConfidence(l int) float64 {
	return 0.7 + 0.3*float64(min(l, 2*strongOverlap))/(2*strongOverlap)
}

// acceptExact decides whether a repeat of length l (next[:l] == doc's last l
// bytes) is significant enough to cut without the format's help.
//
// The evidence is the doubling the repeat would leave: without the cut the
// document would read X X, with X the repeat. A model that re-emits its last
// tokens starts at a token boundary (after whitespace, or at a line start)
// and repeats at least a word and a separator, so X must start there, carry
// content and span a separator; and X X must be new to the document (a
// document that already doubles X, like "ha ha ha" or a row written twice,
// repeats legitimately). At a line boundary only two or more whole lines
// count: identical adjacent lines (log records, CSV rows, a closing brace
// after another) are common and must both survive, unless the job's model
// re-emits what it wrote at the joins that show it (habit > 0): then a whole
// line of content, or a line and the partial one after it, is its repeat too.
//
// A repeat of strongOverlap bytes or more of content is cut wherever it
// starts, mid-word too: a tokenizer's token may start inside a word
// ("q|ueue café ledger ...", a hex string, a URL). Not from a model that
// goes on at the other joins: there a long repeat that starts mid-word is
// the document's own (records that share a long prefix:
// "...\"Output\":\"BenchmarkInde" + "xAnyASCII...").
func acceptExact(doc string, l, habit int) (bool, float64) {
	if l < minOverlap || l > len(doc) {
		return false, 0
	}
	rep := doc[len(doc)-l:]
	if habit < 0 && (l < 2*strongOverlap && !restartsLines(doc, rep) || repeatedNearby(doc, rep)) {
		// A model that goes on where the joins show it: a repeat shorter
		// than a line or two, or one of text the document repeats itself,
		// is the document's (examples that vary a line, records that share
		// their start).
		return false, 0
	}
	x := readExact(doc, l, habit)
	conf := exactConfidence(l)
	if habit > 0 && (x.atSpace || wordBoundary(doc, x.start)) && x.nonSpace >= 2 {
		// The model re-emits what it wrote at every other join: a repeat
		// that starts where a token does is its repeat here too, however
		// bare or familiar.
		return true, conf
	}
	var ok bool
	if strings.HasSuffix(doc, "\n") {
		ok = x.afterWholeLine()
	} else {
		ok = x.afterPartialLine()
	}
	if !ok || doubledBefore(doc, rep) || completesRepeatedLine(doc, rep) {
		return false, 0
	}
	return true, conf
}

// restartsLines reports whether a repeat rep of the document's end starts
// over whole lines: from a line start, over a line break, up to a cut line
// whose words, left uncut, would be glued to a copy of the first line
// (gluesWords: "### mksysnum\n\nMksysnum is " + "### mksysnum\n\nMksysnum
// is a Go program" reads "Mksysnum is ### mksysnum"). A model that goes on
// elsewhere may still start over here, as the line it glues says.
func restartsLines(doc, rep string) bool {
	start := len(doc) - len(rep)
	if !strings.Contains(rep, "\n") || !lineStartAt(doc, start) {
		return false
	}
	return gluesWords(rep) && alnumCount(rep[strings.LastIndexByte(rep, '\n')+1:]) >= 4
}

// exactRepeat is what acceptExact weighs of a candidate repeat rep, the
// document's last l bytes, which starts at start.
type exactRepeat struct {
	doc, rep, body     string
	l, habit, start    int
	nonSpace, distinct int
	atSpace, lineStart bool
	inner, content     bool
}

// readExact measures the repeat of the document's last l bytes.
func readExact(doc string, l, habit int) exactRepeat {
	x := exactRepeat{doc: doc, rep: doc[len(doc)-l:], l: l, habit: habit, start: len(doc) - l}
	x.atSpace = x.start == 0 || isSpace(doc[x.start-1])
	x.lineStart = lineStartAt(doc, x.start)
	x.nonSpace, x.distinct = contentBytes(x.rep)
	x.body = strings.TrimRight(x.rep, " \t\r\n")
	x.inner = strings.ContainsAny(x.body, " \t\r\n") // a separator inside the repeat
	x.content = substantive(x.rep) || strings.Contains(x.body, "\n") && x.nonSpace >= 3 && x.distinct >= 2
	return x
}

// long reports whether a repeat is long enough to count wherever it
// starts: strongOverlap bytes of content, at a word boundary unless the
// model's habit says it repeats, and not text the document repeats itself
// unless the habit says so.
func (x exactRepeat) long() bool {
	return x.l >= strongOverlap && (x.habit >= 0 || wordBoundary(x.doc, x.start)) && x.content &&
		(x.habit > 0 || !repeatedNearby(x.doc, x.rep))
}

// afterWholeLine judges a repeat of a document that ends with a line break.
func (x exactRepeat) afterWholeLine() bool {
	lines := strings.Count(x.rep, "\n")
	switch {
	case x.lineStart && lines >= 2 && x.nonSpace >= 3 && x.distinct >= 2:
	case x.lineStart && x.habit > 0 && lines == 1 && substantive(x.rep):
	case !x.lineStart && x.atSpace && x.inner && x.content:
	case !x.lineStart && x.long():
	default:
		return false
	}
	return true
}

// afterPartialLine judges a repeat of a document cut inside a line.
func (x exactRepeat) afterPartialLine() bool {
	switch {
	case x.lineStart && x.habit <= 0 && strings.Count(x.rep, "\n") == 1 && (x.l < strongOverlap || repeatedNearby(x.doc, x.rep)) && !gluesWords(x.rep):
		// One short or familiar line plus the partial one: structured
		// documents repeat a line and the next line's opening
		// ("## foo\n#", "{\"Action\":") all the time.
		return false
	case x.atSpace && (x.inner || utf8.RuneCountInString(x.body) >= 12) && x.content:
		// One word alone counts from twelve letters (a path, a long
		// identifier): a shorter one doubled ("Ελλάδα Ελλάδα") may be
		// the document's.
	case x.l >= 6 && cjkBoundary(x.doc, x.start) && x.content:
	case x.long():
	default:
		return false
	}
	return true
}

// gluesWords reports whether a repeat of whole lines and the partial line
// after them (first + "\n" + … + partial), left uncut, would glue the
// partial line's words to a copy of the repeat's first line that does not
// start with them ("diff --" + "+blah", "l" + "literal 0"): a line no
// document writes. A partial line of markers ("#" + "## foo" is "### foo")
// or the opening of the same record again stays ambiguous.
func gluesWords(rep string) bool {
	first, _, _ := strings.Cut(rep, "\n")
	partial := rep[strings.LastIndexByte(rep, '\n')+1:]
	if strings.HasPrefix(first, partial) || strings.TrimSpace(first) == "" {
		return false
	}
	for j := 0; j < len(partial); j++ {
		if isWordByte(partial[j]) {
			return true
		}
	}
	return false
}

// cjkBoundary reports whether offset i of s falls between two runes one of
// which is written without spaces between words (a token boundary there).
func cjkBoundary(s string, i int) bool {
	if i <= 0 || i >= len(s) || !utf8.RuneStart(s[i]) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i:])
	return isCJK(before) || isCJK(after)
}

// completesRepeatedLine reports whether, left uncut, the repeat's first line
// would complete the document's partial line into a copy of the line before
// it: a document writing the same record twice, cut inside the second copy.
func completesRepeatedLine(doc, rep string) bool {
	i := strings.IndexByte(rep, '\n')
	e := strings.LastIndexByte(doc, '\n')
	if i < 0 || e < 0 || e == len(doc)-1 {
		return false
	}
	b := strings.LastIndexByte(doc[:e], '\n') + 1
	return doc[e+1:]+rep[:i] == doc[b:e]
}

// doubledBefore reports whether the document's recent tail already holds rep
// twice in a row.
func doubledBefore(doc, rep string) bool {
	// Nearby is what counts, and it keeps the look back in proportion to
	// the repeat rather than the document.
	w := tail(doc, min(overlapWindow, 4<<10+32*len(rep)))
	if len(w) < 2*len(rep) {
		return false
	}
	for i := 0; ; {
		j := strings.Index(w[i:], rep)
		if j < 0 {
			return false
		}
		i += j
		if strings.HasPrefix(w[i+len(rep):], rep) {
			return true
		}
		i++
	}
}

// repeatedNearby reports whether rep, which ends doc, also occurs earlier in
// the document's recent tail.
func repeatedNearby(doc, rep string) bool {
	w := tail(doc, 4<<10)
	return strings.Contains(w[:len(w)-1], rep)
}
