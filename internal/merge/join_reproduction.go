package merge

import "strings"

// minReproduction is the least content (bytes that are not whitespace) a
// reproduction must hold to be taken without the exact steps' tests: text
// this long that equals the document's end, from one of its line starts,
// is no coincidence. From the document's very start (a restart from the
// top, of a document of one line too), strongOverlap bytes will do.
const minReproduction = 64

// reproductionStep: the continuation starts the document over, from its
// first line or from any later line start, and reproduces it up to the
// cut with whitespace changed (re-indented, re-spaced, re-wrapped, blank
// lines added or dropped), then goes on. Whatever its length: the content
// of the continuation's head, whitespace removed, is matched against the
// content of the document's end, so the cost follows the chunk.
func reproductionStep(c *joinCtx) (overlap, bool) {
	if c.repro.done && c.repro.next == c.next {
		// Read already for this text, before its structure was looked at.
		return c.repro.ov, c.repro.ok
	}
	ov, ok := reproduction(c)
	c.repro = reproRead{done: true, next: c.next, ov: ov, ok: ok}
	return ov, ok
}

// reproRead is the reproduction step's answer for one continuation text.
type reproRead struct {
	done bool
	next string
	ov   overlap
	ok   bool
}

// reproduction is reproductionStep's reading.
func reproduction(c *joinCtx) (overlap, bool) {
	doc, next := c.doc, c.next
	if end, ok := shortRestart(doc, next); ok {
		return overlap{cut: trailingRun(doc, next, end), method: methodReproduction, confidence: confReproduction}, true
	}
	bs, ok := contentBorders(doc, next)
	if !ok {
		bs = c.buf.slowContentBorders(doc, next)
	}
	found, end, start := 0, 0, 0
	whole, read := false, false // wholeRestart of the match found, once read
	isWhole := func() bool {
		if !read {
			whole, read = wholeRestart(doc, start, found), true
		}
		return whole
	}
	for _, cb := range bs {
		if ls := strings.LastIndexByte(doc[:cb.start], '\n') + 1; strings.TrimLeft(doc[ls:cb.start], " \t") != "" {
			continue // not from a line's first content
		}
		if found > 0 {
			if isWhole() {
				// (The longest is the whole document: a next copy
				// would be a copy of all of it.)
				break
			}
			// A shorter match from another line start too: the
			// document's content repeats itself (examples at other
			// indentations), and the continuation may be its next copy.
			return overlap{}, false
		}
		if cb.n < minReproduction && cb.start > firstContentOffset(doc) {
			// Shorter, only a restart from the document's very start
			// (its first content: "\tfoo" starts at "foo").
			continue
		}
		found, end, start = cb.n, cb.end, cb.start
	}
	if found == 0 || contentBefore(doc, lastContent(doc, min(found, minReproduction))) && !isWhole() {
		// (The document wrote its last lines' content before, whitespace
		// aside: a match up to whitespace may be the document's next copy,
		// unless the match is the whole document from its first byte.)
		return overlap{}, false
	}
	return overlap{cut: trailingRun(doc, next, end), method: methodReproduction, confidence: confReproduction}, true
}

// firstContentOffset is the offset of the document's first content: the
// whitespace before it is no content for a reproduction to match.
func firstContentOffset(doc string) int {
	return len(doc) - len(strings.TrimLeft(doc, " \t\r\n"))
}

// minShortRestart is the least content a restart of a short document
// must reproduce.
const minShortRestart = 12

// shortRestart reads a continuation that starts over a document too short
// for contentBorders (under strongOverlap bytes of content, over two lines
// or more): it opens with all of the document's content, whitespace aside,
// from its first byte. It returns where that reproduction ends in next. A
// document whose content is a block written over whole (period p, "foo"
// "foo") may be going on with its next copy, and is left to the other
// steps.
func shortRestart(doc, next string) (int, bool) {
	// (Reading at most strongOverlap bytes of content: a merge calls this
	// at every join of a document of any length.)
	content := firstContent(doc, strongOverlap)
	n := len(content)
	if n < minShortRestart || n >= strongOverlap {
		return 0, false
	}
	if line := strings.TrimSpace(doc); !strings.Contains(line, "\n") && (!strings.HasSuffix(doc, "\n") || words(line) < 3) {
		// A document of one line: only a whole line of words (a title),
		// which a document does not write twice in a row.
		return 0, false
	}
	for p := 1; p < n; p++ {
		if n%p == 0 && string(content[p:]) == string(content[:n-p]) {
			return 0, false
		}
	}
	k := 0
	for i := 0; i < len(next); i++ {
		if isSpace(next[i]) {
			continue
		}
		if next[i] != content[k] {
			return 0, false
		}
		if k++; k == n {
			return i + 1, true
		}
	}
	return 0, false
}

// wholeRestart reports whether a reproduction of n content bytes from
// offset start is the whole document, long, from its very start, in a
// document that is not two copies of a block or more (its content's
// longest border, a head that is also its tail, under half of it): the
// document's next copy of a block it repeats could match so only if the
// block were all of the document, and a document that opens and ends
// with the same block (the cut in its last copy) does not go on by
// writing itself again whole.
func wholeRestart(doc string, start, n int) bool {
	if start > firstContentOffset(doc) || n < 4*minReproduction {
		return false
	}
	content := firstContent(doc, len(doc))
	return 2*longestBorder(content) < len(content)
}

// longestBorder is the length of the longest proper head of s that is
// also its tail (the Knuth-Morris-Pratt failure function at its end).
func longestBorder(s []byte) int {
	fail := make([]int, len(s))
	k := 0
	for i := 1; i < len(s); i++ {
		for k > 0 && s[i] != s[k] {
			k = fail[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		fail[i] = k
	}
	if len(s) == 0 {
		return 0
	}
	return fail[len(s)-1]
}

// contentBorder is a prefix of the continuation, next[:end], whose content
// (n bytes that are not whitespace) equals the document's last n bytes of
// content, which start at offset start.
type contentBorder struct{ n, end, start int }

// contentBorders returns every content border of strongOverlap bytes or
// more, longest first. Each holds the document's last content as it is
// (whitespace is only between its runs): the continuation's places that
// hold the longest run of it are the only candidates, each checked
// backwards, where a wrong one fails at once; so a continuation costs a
// substring search, whatever its length. It reports false when the checks
// cost more than a few passes over next (text of one repeated run), or
// when the document's last content holds no word to search for (a rule of
// dashes), for the caller to use slowContentBorders.
func contentBorders(doc, next string) ([]contentBorder, bool) {
	run, after := tailRun(doc, strongOverlap)
	if run == "" {
		return nil, after < 0
	}
	budget := 4*len(next) + 64
	// The places are found forwards (a vector search; backwards is
	// byte by byte) and checked longest first.
	at := make([]int, 0, 16)
	for i := 0; ; {
		q := strings.Index(next[i:], run)
		if q < 0 {
			break
		}
		at = append(at, i+q)
		i += q + 1
	}
	var out []contentBorder
	for k := len(at) - 1; k >= 0; k-- {
		q := at[k]
		end := contentEnd(next[q+len(run):], after) + q + len(run)
		if countContent(next[q+len(run):end]) < after {
			continue
		}
		n, start, cost := matchBackwards(doc, next[:end])
		if budget -= cost; budget < 0 {
			return nil, false
		}
		if n >= strongOverlap {
			out = append(out, contentBorder{n: n, end: end, start: start})
		}
	}
	return out, true
}

// tailRun returns the longest run of word bytes (letters, digits, '_')
// among the document's last n bytes of content, and how many bytes of
// content follow it ("" and -1 when the document holds fewer than n;
// "" and 0 when they hold no word). A change of
// whitespace never splits a word, so a reproduction holds the run as it is.
func tailRun(doc string, n int) (string, int) {
	best, bestAfter := "", 0
	seen, end := 0, -1 // end: where the word being read ends (exclusive)
	i := len(doc)
	for ; i > 0 && seen < n; i-- {
		c := doc[i-1]
		if isSpace(c) {
			if end >= 0 {
				best, bestAfter = longer(doc, i, end, best, bestAfter, seen)
				end = -1
			}
			continue
		}
		if !isWordByte(c) {
			if end >= 0 {
				best, bestAfter = longer(doc, i, end, best, bestAfter, seen)
				end = -1
			}
		} else if end < 0 {
			end = i
		}
		seen++
	}
	if seen < n {
		return "", -1
	}
	if end >= 0 {
		best, bestAfter = longer(doc, i, end, best, bestAfter, seen)
	}
	return best, bestAfter
}

// longer keeps the word doc[from:to] when it is longer than best; seen is
// how many bytes of content the scan (which is at from) has read, so the
// word is followed by seen-(to-from) of them.
func longer(doc string, from, to int, best string, bestAfter, seen int) (string, int) {
	if to-from > len(best) {
		return doc[from:to], seen - (to - from)
	}
	return best, bestAfter
}

// matchBackwards compares the content of t with the document's content,
// both read backwards from their ends. It returns the length of the match
// when all of t's content matched (0 otherwise), the offset in doc where
// the match starts, and how many bytes it read.
func matchBackwards(doc, t string) (n, start, cost int) {
	i, j := len(t)-1, len(doc)-1
	for {
		for i >= 0 && isSpace(t[i]) {
			i--
			cost++
		}
		for j >= 0 && isSpace(doc[j]) {
			j--
		}
		if i < 0 {
			return n, j + 1 + leadingSpace(doc[j+1:]), cost
		}
		if j < 0 || t[i] != doc[j] {
			return 0, 0, cost
		}
		n++
		cost++
		i--
		j--
	}
}

// leadingSpace is the length of the whitespace s starts with.
func leadingSpace(s string) int { return len(s) - len(strings.TrimLeft(s, " \t\r\n")) }

// countContent counts the bytes of s that are not whitespace.
func countContent(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			n++
		}
	}
	return n
}

// lastContent is the document's last n bytes of content.
func lastContent(doc string, n int) []byte {
	out := make([]byte, 0, n)
	for i := len(doc) - 1; i >= 0 && len(out) < n; i-- {
		if !isSpace(doc[i]) {
			out = append(out, doc[i])
		}
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// firstContent returns the first n bytes of s's content (the bytes that
// are not whitespace), or all of it when s holds fewer: lastContent's
// mirror.
func firstContent(s string, n int) []byte {
	out := make([]byte, 0, min(n, len(s)))
	for i := 0; i < len(s) && len(out) < n; i++ {
		if !isSpace(s[i]) {
			out = append(out, s[i])
		}
	}
	return out
}

// slowContentBorders is contentBorders by the Knuth-Morris-Pratt automaton
// over the content of both, for text where the candidates are too many.
func (s *buffers) slowContentBorders(doc, next string) []contentBorder {
	nt := s.content(next, len(next))
	from := contentStart(doc, len(nt))
	nd, dpos := s.docContent(doc[from:])
	var out []contentBorder
	for _, l := range s.borders(bytesView(nd), bytesView(nt), len(nt)) {
		if l < strongOverlap {
			break
		}
		out = append(out, contentBorder{n: l, end: contentEnd(next, l), start: from + int(dpos[len(nd)-l])})
	}
	return out
}

// restatedWhole is the reproduction step run before any repeated
// structure is taken away: a continuation that starts the document over
// from a line start, with whitespace changed, also restates the structure
// it started from (the JSON document's opening containers, the CSV header),
// which is then part of the reproduction rather than structure to remove
// (and the element that structure seems to open is no restart). It takes
// a reproduction at least as long as the longest exact repeat: one the
// exact repeat covers too is no less a restart of the structure (a JSON
// array reproduced byte for byte from its "[" up to an element's end, where
// taking the "[" away first would leave the first element to be read as
// the next), and a shorter one is the exact steps' to judge.
func restatedWhole(c *joinCtx) (overlap, bool) {
	if c.doc == "" || c.next == "" {
		return overlap{}, false
	}
	ov, ok := reproductionStep(c)
	if !ok && !c.toldOver {
		return overlap{}, false
	}
	// (Read only now: most joins have no reproduction to weigh.)
	longest := c.buf.longestBorder(c.doc, c.next)
	if !ok {
		return toldRestart(c, longest)
	}
	if ov.cut < longest {
		return overlap{}, false
	}
	if ov.cut == longest {
		// Byte for byte: the exact repeat's evidence.
		return overlap{cut: ov.cut, method: methodExact, confidence: exactConfidence(ov.cut)}, true
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

// toldRestart: the preamble removed from the continuation says that the
// model starts the answer over ("from the top", "start over", "again"),
// and the continuation opens with the whole document's content, up to the
// cut, whitespace aside. The words and a match from the document's very
// first byte combine into a restart however short the document, below the
// length the reproduction step asks of a match alone. It takes nothing
// shorter than the longest exact repeat (that is the exact steps' to
// judge).
func toldRestart(c *joinCtx, longest int) (overlap, bool) {
	if !c.toldOver {
		return overlap{}, false
	}
	doc, next := c.doc, c.next
	i, j, n := 0, 0, 0
	for ; i < len(doc); i++ {
		if isSpace(doc[i]) {
			continue
		}
		for j < len(next) && isSpace(next[j]) {
			j++
		}
		if j == len(next) || next[j] != doc[i] {
			return overlap{}, false
		}
		j, n = j+1, n+1
	}
	if n < 2 || j < longest {
		return overlap{}, false
	}
	return overlap{cut: trailingRun(doc, next, j), method: methodReproduction, confidence: confReproduction}, true
}

// overWords say that the model starts its answer over.
var overWords = []string{
	"again", "restart*", "start over", "starting over", "started over", "from the top", "from the beginning",
	"from the start", "once more", "anew", "afresh", "from scratch", "reproduc*", "in full", "whole thing",
}

// toldOver reports whether a preamble removed says that the model starts
// the answer over (see overWords).
func toldOver(removals []Removal) bool { return preambleSays(removals, overWords) }

// repeatWords say that the model repeats some of what it wrote before it
// goes on: backs up, repeats for context, overlaps.
var repeatWords = []string{
	"repeat*", "earlier", "back up", "backing up", "go back", "going back", "overlap*", "context",
}

// toldRepeat reports whether a preamble removed says that the model
// repeats some of what it wrote before it goes on (see repeatWords).
func toldRepeat(removals []Removal) bool { return preambleSays(removals, repeatWords) }

// preambleSays reports whether a preamble removed says one of ws, and does
// not deny it (see saysWord: "I'll continue without repeating").
func preambleSays(removals []Removal, ws []string) bool {
	for _, r := range removals {
		if r.Why == WhyPreamble && saysWord(strings.ToLower(r.Removed), ws) {
			return true
		}
	}
	return false
}
