package merge

import (
	"math/bits"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// overlapWindow bounds how far back into the document and how far into a
// continuation the overlap search looks. A model repeats at most a few lines
// of what it already wrote, so a window of this size finds every real repeat
// while keeping each join O(window) and the whole merge linear.
const overlapWindow = 16 << 10

// strongOverlap is the length from which an exact repeat is cut even when it
// does not start at a token boundary: coincidental repeats this long do not
// happen in real text at a random cut.
const strongOverlap = 24

// minOverlap is the shortest repeat that is cut at all; shorter ones are kept,
// since a continuation may legitimately start with what the document ends with.
const minOverlap = 3

// Join methods, in cascade order.
const (
	methodNone       = "none"
	methodExact      = "exact"
	methodWhitespace = "whitespace"
	methodToken      = "token"
	methodStructural = "structural"
	methodFallback   = "fallback"
	// methodMarkers: the echo between an overlap prompt's markers repeated
	// the document's tail exactly, which placed the join.
	methodMarkers = "overlap_markers"
)

// overlap is one candidate answer to "how much of the continuation repeats
// the document": the first cut bytes of the continuation are dropped.
type overlap struct {
	cut        int
	method     string
	confidence float64
}

// tail returns the last n bytes of s (all of s when shorter).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// head returns the first n bytes of s (all of s when shorter).
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// scratch holds the buffers one merge reuses from join to join, so that a
// join allocates nothing in the common case and costs what its chunk costs.
// Merges take one from scratchPool, so that a job of many small chunks
// does not grow a new set each time.
type scratch struct {
	pi     []int32
	out    []int
	norm   []byte
	dnorm  []byte
	dt, nt []token
	dh, nh []uint64
	score  []int32
	match  []int32
	seed   [seedSlots]int16
	chain  []int16
	// restarts holds the format's restarts for the join at hand.
	restarts []int
	// win is continuationHabit's stand-in for the document's end.
	win []byte
	// habit is how the job's model continues at the other joins (see
	// continuationHabit): 1 it starts over, -1 it goes on, 0 unknown or
	// both.
	habit int
	// rewraps: the other joins that repeat mostly re-wrap their repeat.
	rewraps bool
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// continuationHabit reads, from the chunks alone (less the chatter around
// them), how the model continues a cut line where that is plain to see:
// where the previous chunk ends with a partial line, a continuation that
// starts with that line (two letters or digits of it), with a longer repeat
// of the chunk's end, with a line of it or with a re-wrapped repeat starts
// over (1); one that shares at most two bytes with the end goes on (-1).
// A model continues the same way from one boundary to the next (same model,
// same prompt), so the other joins decide the ones that cannot tell by
// themselves: a partial line of indentation or markers that the
// continuation also starts with, a repeated line that the document may
// have written twice. evidence[i] is what join i (chunk i's) shows, 0 when
// nothing. It reads a bounded window per join, with the merge's scratch,
// which it leaves with no habit: it runs before the merge has one.
func continuationHabit(sc *scratch, kind string, chunks []Chunk) []int8 {
	ev := make([]int8, len(chunks))
	sc.habit, sc.rewraps = 0, false
	if len(chunks) < 2 {
		return ev
	}
	// prev stands for the end of the document so far: the chunks' text,
	// each less the repeat it was seen to start with (the last habitWindow
	// bytes of it, kept in one buffer).
	const habitWindow = 4 << 10
	win := sc.win[:0]
	if cap(win) < 2*habitWindow {
		win = make([]byte, 0, 2*habitWindow)
	}
	win = append(win, tail(chunks[0].Text, habitWindow)...)
	for i := 1; i < len(chunks); i++ {
		prev := bytesView(win)
		p := prev[strings.LastIndexByte(prev, '\n')+1:]
		// What the model wrote around the text goes first, as the merge
		// takes it away.
		t := stripChatter(chunks[i].Text, chatterCtx{format: kind, partial: p}).text
		cut := 0
		// A continuation after a complete line (or blank indentation) shows
		// no restart and no going on, only a repeat if it has one.
		blank := strings.TrimSpace(p) == ""
		switch bs := sc.borders(prev, t, len(prev)); {
		case t == "":
			// Nothing written.
		case !blank && strings.HasPrefix(t, p):
			if alnumCount(p) >= 2 {
				ev[i], cut = 1, len(p)
			}
			if len(bs) > 0 && bs[0] > cut && alnumCount(prev[len(prev)-bs[0]:]) >= 2 {
				ev[i], cut = 1, bs[0]
			}
		case len(bs) > 0 && bs[0] >= 4 && alnumCount(prev[len(prev)-bs[0]:]) >= 2:
			ev[i], cut = 1, bs[0]
		case !blank && restatesLine(prev, t):
			// Structure restated first (a header, the line before). Not
			// after a complete line, where the line may be the document's
			// next copy of it (records that share a line).
			ev[i] = 1
		default:
			short := len(bs) > 0 && bs[0] >= 3
			// A re-wrapped repeat is evidence, a shorter one (found only
			// with habit 1) half of it. With sc.rewraps false the two
			// searches differ only in the shortest repeat they take, so
			// the shorter finds every repeat the longer one does, at the
			// same cut: the longer one runs only after it found one.
			n, _ := sc.whitespaceOverlap(prev, t, 1)
			switch {
			case n > 0:
				ev[i], cut = weakRepeat, n
				if n, _ := sc.whitespaceOverlap(prev, t, 0); n > 0 {
					ev[i], cut = rewrapped, n
				}
			case !short && !blank && !fenceFromCutLine(chunks[i].Text, p):
				// A byte or two in common is coincidence.
				ev[i] = -1
			}
		}
		add := tail(t[cut:], habitWindow)
		if keep := habitWindow - len(add); len(win) > keep {
			// Keep the window's last bytes at its front (prev, a view of
			// it, is not used after this).
			n := copy(win, win[len(win)-max(keep, 0):])
			win = win[:n]
		}
		win = append(win, add...)
	}
	sc.win = win
	return ev
}

// fenceFromCutLine reports whether chunk opens with a fence line that
// starts with the cut line p and goes on ("```" + "```sql"): a wrapper, or
// the line started over; which one the habit is to tell, not to show.
func fenceFromCutLine(chunk, p string) bool {
	fl, _, _ := strings.Cut(chunk, "\n")
	if len(fl) <= len(p) || !strings.HasPrefix(fl, p) {
		return false
	}
	_, ok := fenceLine(fl)
	return ok
}

// habitTotals weighs the evidence of every join once, so that each join's
// habitAt and rewrapsAt only take its own out: for habitAt a join that
// starts over or goes on counts two, a weak repeat one; for rewrapsAt,
// wraps is the joins that re-wrap their repeat less those that repeat it as
// it is.
func habitTotals(ev []int8) (re, on, wraps int) {
	for _, e := range ev {
		switch e {
		case 1:
			re += 2
			wraps--
		case rewrapped:
			re += 2
			wraps++
		case weakRepeat:
			re++
			wraps++
		case -1:
			on += 2
		}
	}
	return re, on, wraps
}

// rewrapsAt reports whether the joins other than join i that repeat re-wrap
// what they repeat more often than they repeat it as it is. wraps is
// habitTotals' for all the joins.
func rewrapsAt(ev []int8, wraps, i int) bool {
	switch ev[i] {
	case rewrapped, weakRepeat:
		wraps--
	case 1:
		wraps++
	}
	return wraps > 0
}

// Evidence of a join beyond 1 (starts over, repeating what it wrote as it
// is) and -1 (goes on): rewrapped, a re-wrapped repeat; weakRepeat, a
// re-wrapped repeat too short to be certain of, which counts half.
const (
	weakRepeat = 2
	rewrapped  = 3
)

// habitAt is the habit the joins other than join i show: 1 when they start
// over (three times as often as they go on, at least), -1 when they go on
// (as much more often), 0 when they show neither or both alike. re and on
// are habitTotals of all the joins.
func habitAt(ev []int8, re, on, i int) int {
	switch ev[i] {
	case 1, rewrapped:
		re -= 2
	case weakRepeat:
		re--
	case -1:
		on -= 2
	}
	// A join or two may go the other way (a boundary where there was
	// nothing to repeat yet, a coincidence): three to one decides.
	switch {
	case re >= 2 && re >= 3*on:
		return 1
	case on > 0 && on >= 3*re:
		return -1
	}
	return 0
}

// restatesLine reports whether t starts with a whole line of eight bytes or
// more, two of them letters or digits, that stands as a whole line in prev.
func restatesLine(prev, t string) bool {
	i := strings.IndexByte(t, '\n')
	if i < 8 {
		return false
	}
	l := t[:i+1]
	if alnumCount(l) < 2 {
		return false
	}
	// Only line starts can match, so only they are tried: a search for
	// the line (or its head) stops at every place its first bytes occur,
	// which in prose of a small vocabulary is most words.
	for j := 0; ; {
		if strings.HasPrefix(prev[j:], l) {
			return true
		}
		k := strings.IndexByte(prev[j:], '\n')
		if k < 0 {
			return false
		}
		j += k + 1
	}
}

// alnumCount counts the letters and digits of s (any non-ASCII byte counts).
func alnumCount(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '_' && isWordByte(c) {
			n++
		}
	}
	return n
}

// borders returns, longest first, every length L > 0 such that next[:L] is a
// suffix of doc, looking at most window bytes into each. It runs the
// Knuth-Morris-Pratt automaton of next's head over doc's tail; a border is
// never longer than next's head, so the tail scanned is no longer than it
// and the cost follows the chunk, never the document. The result is valid
// until the next call.
func (s *scratch) borders(doc, next string, window int) []int {
	a := head(next, window)
	b := tail(doc, len(a))
	if a == "" || b == "" {
		return nil
	}
	// A border longer than probe bytes holds the document's last probe
	// bytes: where next's head does not hold the last needle of them, only
	// the short ones are looked for, which is what most joins come to. (A
	// substring of needle bytes is found with vector instructions, on
	// amd64 with AVX2 up to 63 bytes; a longer one by Rabin-Karp, many
	// times slower on text that often holds its first byte.)
	const probe, needle = 64, 32
	if len(a) > 2*probe && len(b) >= probe && !strings.Contains(a, b[len(b)-needle:]) {
		a, b = a[:probe], b[len(b)-probe:]
	}
	if out, ok := s.fastBorders(a, b); ok {
		return out
	}
	if cap(s.pi) < len(a) {
		s.pi = make([]int32, len(a), 2*len(a))
	}
	pi := s.pi[:len(a)]
	pi[0] = 0
	for i, k := 1, int32(0); i < len(a); i++ {
		for k > 0 && a[i] != a[k] {
			k = pi[k-1]
		}
		if a[i] == a[k] {
			k++
		}
		pi[i] = k
	}
	q := int32(0)
	for i := 0; i < len(b); i++ {
		for q > 0 && (int(q) == len(a) || a[q] != b[i]) {
			q = pi[q-1]
		}
		if a[q] == b[i] {
			q++
		}
	}
	out := s.out[:0]
	for q > 0 {
		out = append(out, int(q))
		q = pi[q-1]
	}
	s.out = out
	return out
}

// fastBorders finds the borders by checking each place where next's head
// holds the document's last byte, longest first. Text rarely holds that byte
// often, so this is cheaper than building the automaton; when the checks
// cost more than a few passes over the head (runs of one byte), it gives up
// and borders runs the automaton.
func (s *scratch) fastBorders(a, b string) ([]int, bool) {
	last := b[len(b)-1]
	budget := 4*len(a) + 64
	out := s.out[:0]
	for end := len(a); end > 0; {
		p := strings.LastIndexByte(a[:end], last)
		if p < 0 {
			break
		}
		l := p + 1
		if l > len(b) {
			end = p
			continue
		}
		// Compare backwards: a wrong candidate usually fails at once.
		i, j := p, len(b)-1
		for i >= 0 && a[i] == b[j] {
			i--
			j--
		}
		budget -= p - i + 1
		if budget < 0 {
			return nil, false
		}
		if i < 0 {
			out = append(out, l)
		}
		end = p
	}
	s.out = out
	return out, true
}

// isWordByte reports whether the byte continues an ASCII word; non-ASCII
// bytes count as word bytes, with CJK handled by wordBoundary.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// isCJK reports whether r is written without spaces between words, so that
// every rune boundary is a word boundary.
func isCJK(r rune) bool {
	if r < 0x0E00 {
		return false // below Thai, the first of these scripts
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

// wordBoundary reports whether offset i of s falls between two words rather
// than inside one.
func wordBoundary(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	if !isWordByte(s[i-1]) || !isWordByte(s[i]) {
		return true
	}
	if s[i-1] < 0x80 && s[i] < 0x80 {
		return false
	}
	if !utf8.RuneStart(s[i]) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i:])
	return isCJK(before) || isCJK(after) || !unicode.IsLetter(before) && !unicode.IsDigit(before)
}

// substantive reports whether a repeat carries enough content to be told
// apart from coincidence: at least two letters or digits and three distinct
// non-space bytes (so runs of dashes, spaces or zeros never qualify).
func substantive(s string) bool {
	alnum := 0
	var seen [256]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isWordByte(c) {
			alnum++
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' && !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	return alnum >= 2 && distinct >= 3
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
	if habit < 0 && (l < 2*strongOverlap || repeatedNearby(doc, rep)) {
		// A model that goes on where the joins show it: a repeat shorter
		// than a line or two, or one of text the document repeats itself,
		// is the document's (examples that vary a line, records that share
		// their start).
		return false, 0
	}
	start := len(doc) - l
	atSpace := start == 0 || isSpace(doc[start-1])
	lineStart := start == 0 || doc[start-1] == '\n'
	nonSpace, distinct := contentBytes(rep)
	conf := 0.7 + 0.3*float64(min(l, 2*strongOverlap))/(2*strongOverlap)
	if habit > 0 && (atSpace || wordBoundary(doc, start)) && nonSpace >= 2 {
		// The model re-emits what it wrote at every other join: a repeat
		// that starts where a token does is its repeat here too, however
		// bare or familiar.
		return true, conf
	}
	body := strings.TrimRight(rep, " \t\r\n")
	inner := strings.ContainsAny(body, " \t\r\n") // a separator inside the repeat
	content := substantive(rep) || strings.Contains(body, "\n") && nonSpace >= 3 && distinct >= 2
	if strings.HasSuffix(doc, "\n") {
		lines := strings.Count(rep, "\n")
		switch {
		case lineStart && lines >= 2 && nonSpace >= 3 && distinct >= 2:
		case lineStart && habit > 0 && lines == 1 && substantive(rep):
		case !lineStart && atSpace && inner && content:
		case !lineStart && l >= strongOverlap && (habit >= 0 || wordBoundary(doc, start)) && content && (habit > 0 || !repeatedNearby(doc, rep)):
		default:
			return false, 0
		}
	} else {
		switch {
		case lineStart && habit <= 0 && strings.Count(rep, "\n") == 1 && (l < strongOverlap || repeatedNearby(doc, rep)) && !gluesWords(rep):
			// One short or familiar line plus the partial one: structured
			// documents repeat a line and the next line's opening
			// ("## foo\n#", "{\"Action\":") all the time.
			return false, 0
		case atSpace && (inner || utf8.RuneCountInString(body) >= 12) && content:
			// One word alone counts from twelve letters (a path, a long
			// identifier): a shorter one doubled ("Ελλάδα Ελλάδα") may be
			// the document's.
		case l >= 6 && cjkBoundary(doc, start) && content:
		case l >= strongOverlap && (habit >= 0 || wordBoundary(doc, start)) && content && (habit > 0 || !repeatedNearby(doc, rep)):
		default:
			return false, 0
		}
	}
	if doubledBefore(doc, rep) || completesRepeatedLine(doc, rep) {
		return false, 0
	}
	return true, conf
}

// gluesWords reports whether a repeat of one line and the partial line after
// it (prev + "\n" + partial), left uncut, would glue the partial line's
// words to a copy of the line before it that does not start with them
// ("diff --" + "+blah", "l" + "literal 0"): a line no document writes. A
// partial line of markers ("#" + "## foo" is "### foo") or the opening of
// the same record again stays ambiguous.
func gluesWords(rep string) bool {
	i := strings.IndexByte(rep, '\n')
	prev, partial := rep[:i], rep[i+1:]
	if strings.HasPrefix(prev, partial) || strings.TrimSpace(prev) == "" {
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

// contentBytes counts the non-space bytes of s and how many distinct ones.
func contentBytes(s string) (int, int) {
	var seen [256]bool
	n, distinct := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			continue
		}
		n++
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	return n, distinct
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// repeatedNearby reports whether rep, which ends doc, also occurs earlier in
// the document's recent tail.
func repeatedNearby(doc, rep string) bool {
	w := tail(doc, 4<<10)
	return strings.Contains(w[:len(w)-1], rep)
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
// s.habit; callers may weaken it): from one that starts over (habit > 0) a
// shorter repeat will do. Only as much of the document's tail is normalized
// as a repeat of next's head could span; the wider look back that rejects
// familiar phrases runs only for a candidate.
func (s *scratch) whitespaceOverlap(doc, next string, habit int) (int, float64) {
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
	if k > 0 {
		return 0, 0
	}
	so, sl := 0, 0
	for i := 0; i < len(last); {
		j := i
		for j < len(last) && last[j] != ' ' {
			j++
		}
		if j-i > sl {
			so, sl = i, j-i
		}
		i = j + 1
	}
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
	// Three separators, or one in a repeat twice as long: a path or a URL
	// is one long word.
	if sp := countByte(rep, ' '); l < minLen || sp < 3 && (sp < 1 || l < 2*strongOverlap) || !substantive(bytesView(rep)) {
		// From a model that re-wraps its repeats at the other joins, any
		// repeat of two words or more and some variety will do.
		if nonSpace, distinct := contentBytes(bytesView(rep)); !s.rewraps || habit <= 0 || l < minLen || sp < 1 || nonSpace < 6 || distinct < 2 || distinct < 3 && nonSpace < 10 {
			return 0, 0
		}
	}
	if !wordBoundary(ds, len(ds)-l) {
		return 0, 0
	}
	cut := normEnd(next, l)
	docStart := normTailStart(doc, l, window)
	docRep := doc[docStart:]
	if strings.HasSuffix(doc, "\n") && (docStart == 0 || doc[docStart-1] == '\n') && strings.Count(docRep, "\n") < 2 && strings.Count(strings.TrimSpace(next[:cut]), "\n") == 0 {
		// As for exact repeats: one repeated whole line at a line boundary
		// may be the document's own (one broken into several lines is a
		// re-wrap).
		return 0, 0
	}
	// The same text with the same line breaks, only indented or spaced
	// differently (or not differently at all, which the exact match judged
	// already), is how documents of examples and aligned columns go on, not
	// how a model re-wraps what it repeats.
	if sameBreaks(docRep, next[:cut]) {
		return 0, 0
	}
	if ns[l-1] == ' ' {
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
		return 0, 0
	}
	return cut, 0.9
}

// bytesView reads b as a string without copying; the caller keeps b
// unchanged while the string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
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
func sameBreaks(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	breaks := false
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if !isSpace(a[i]) || !isSpace(b[j]) {
			if a[i] != b[j] {
				return false
			}
			i++
			j++
			continue
		}
		na, nb := false, false
		i0, j0 := i, j
		for ; i < len(a) && isSpace(a[i]); i++ {
			na = na || a[i] == '\n'
		}
		for ; j < len(b) && isSpace(b[j]); j++ {
			nb = nb || b[j] == '\n'
		}
		if na != nb {
			return false
		}
		if !na && a[i0:i] != b[j0:j] && (i-i0 < 2 || j-j0 < 2) {
			return false
		}
		breaks = breaks || na
	}
	return breaks && i == len(a) && j == len(b)
}

func countByte(b []byte, c byte) int {
	n := 0
	for _, x := range b {
		if x == c {
			n++
		}
	}
	return n
}

// token is a word or a single punctuation rune, by byte offsets.
type token struct{ start, end int }

// isWordRune reports whether r continues a token word.
func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') && !isCJK(r)
}

// asciiWord[c] reports whether ASCII byte c continues a token word.
var asciiWord = func() (t [128]bool) {
	for c := 0; c < 128; c++ {
		t[c] = c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return
}()

// nextToken returns the token of s at or after offset i (skipping
// whitespace), or start -1 when there is none.
func nextToken(s string, i int) (int, int) {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i >= len(s) {
		return -1, -1
	}
	c := s[i]
	j := i + 1
	word := false
	if c < utf8.RuneSelf {
		word = asciiWord[c]
	} else {
		r, w := utf8.DecodeRuneInString(s[i:])
		j = i + w
		word = isWordRune(r)
	}
	if word {
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				j++
				continue
			}
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r2) {
				break
			}
			j += w2
		}
	}
	return i, j
}

// tokenize appends the tokens of s (offsets plus base) to out, skipping
// whitespace, stopping once out holds max tokens.
func tokenize(out []token, s string, base, max int) []token {
	for i := 0; len(out) < max; {
		a, b := nextToken(s, i)
		if a < 0 {
			break
		}
		out = append(out, token{base + a, base + b})
		i = b
	}
	return out
}

// tailTokens sets s.dt to the last max tokens of doc's last window bytes.
// It tokenizes from a whitespace byte (where no token can straddle) a short
// way back, widening until enough tokens are found, so that the document's
// tail is never tokenized whole at every join.
func (s *scratch) tailTokens(doc string, window, max int) {
	lo := len(doc) - min(window, len(doc))
	if s.asciiTailTokens(doc, lo, max) {
		return
	}
	for back := 512; ; back *= 4 {
		start := len(doc) - back
		if start <= lo {
			s.dt = tokenize(s.dt[:0], doc[lo:], lo, 1<<30)
			break
		}
		for start < len(doc) && !isSpace(doc[start]) {
			start++
		}
		s.dt = tokenize(s.dt[:0], doc[start:], start, 1<<30)
		if len(s.dt) >= max {
			break
		}
	}
	if len(s.dt) > max {
		s.dt = s.dt[len(s.dt)-max:]
	}
}

// asciiTailTokens tokenizes doc[lo:] backwards from its end, stopping after
// max tokens, as long as the text is ASCII (where a token is a run of word
// bytes or one other byte, the same read in either direction). It reports
// false, leaving s.dt to be redone, when it meets a byte beyond ASCII.
func (s *scratch) asciiTailTokens(doc string, lo, max int) bool {
	dt := s.dt[:0]
	i := len(doc)
	for i > lo && len(dt) < max {
		c := doc[i-1]
		if c >= utf8.RuneSelf {
			return false
		}
		if isSpace(c) {
			i--
			continue
		}
		j := i - 1
		if asciiWord[c] {
			for j > lo && doc[j-1] < utf8.RuneSelf && asciiWord[doc[j-1]] {
				j--
			}
			if j > lo && doc[j-1] >= utf8.RuneSelf {
				return false
			}
		}
		dt = append(dt, token{j, i})
		i = j
	}
	// Oldest first.
	for a, b := 0, len(dt)-1; a < b; a, b = a+1, b-1 {
		dt[a], dt[b] = dt[b], dt[a]
	}
	s.dt = dt
	return true
}

func hashToken(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// seedSlots sizes the hash table of document tokens mayAlign looks up.
const seedSlots = 128

// tokenOverlap aligns the document's last tokens with the continuation's
// first ones allowing a few edits (a model that repeats its tail with a word
// changed), by a semi-global alignment whose size is bounded by the token
// windows. It returns the bytes of next that repeat the document and the share
// of aligned tokens that matched.
//
// The alignment only runs when mayAlign's bound leaves room for one it would
// accept; for a clean continuation it rarely does, and the join then costs a
// tokenization of the two heads and a linear pass.
func (s *scratch) tokenOverlap(doc, next string) (int, float64) {
	const maxDoc, maxNext = 48, 96
	s.tailTokens(doc, 2<<10, maxDoc)
	dt := s.dt
	if len(dt) < 6 {
		return 0, 0
	}
	// A tail made of few distinct tokens (rules, entity runs, repeated
	// headings, runs of numbers) aligns with anything; only a varied tail
	// of words is evidence. Numbers alone are left to the exact steps.
	var distinct [12]string
	nd := 0
	for _, tk := range dt[max(0, len(dt)-12):] {
		w := doc[tk.start:tk.end]
		if !isWordByte(w[0]) || !strings.ContainsFunc(w, unicode.IsLetter) {
			continue
		}
		seen := false
		for _, d := range distinct[:nd] {
			if d == w {
				seen = true
				break
			}
		}
		if !seen {
			distinct[nd] = w
			nd++
		}
	}
	if nd < 5 {
		return 0, 0
	}
	D := len(dt)
	midWord := isWordByte(doc[len(doc)-1])
	// The continuation's tokens are read only as far as mayAlign needs; an
	// accepted alignment spans at most len(dt)/0.8 of them. It ends with the
	// document's last token (or, cut mid-word, a token that starts with
	// it): a head without that text has none, and nothing need be hashed.
	h := head(next, 4<<10)
	if !strings.Contains(h, doc[dt[D-1].start:dt[D-1].end]) {
		return 0, 0
	}
	s.dh = s.dh[:0]
	for _, tk := range dt {
		s.dh = append(s.dh, hashToken(doc[tk.start:tk.end]))
	}
	if !s.mayAlign(doc, h, midWord, min(maxNext, D*5/4+2)) {
		return 0, 0
	}
	nt := s.nt
	N := len(nt)
	if N < 6 {
		return 0, 0
	}
	dh, nh := s.dh, s.nh
	eq := func(i, j int) bool {
		if i == D-1 && midWord {
			return strings.HasPrefix(next[nt[j].start:nt[j].end], doc[dt[i].start:dt[i].end])
		}
		return dh[i] == nh[j] && doc[dt[i].start:dt[i].end] == next[nt[j].start:nt[j].end]
	}
	// A tail the document has written before (a list of similar links, a
	// repeated example) aligns with its next repetition: not evidence.
	if repeatedNearby(doc, doc[dt[D-6].start:]) {
		return 0, 0
	}
	// score[i][j]: best score aligning doc tokens ending before i (free start)
	// with next tokens [0, j).
	cells := (D + 1) * (N + 1)
	if cap(s.score) < cells {
		s.score = make([]int32, cells)
		s.match = make([]int32, cells)
	}
	score, match := s.score[:cells], s.match[:cells]
	W := N + 1
	for j := 0; j <= N; j++ {
		score[j], match[j] = -int32(j), 0
	}
	for i := 1; i <= D; i++ {
		row, up := i*W, (i-1)*W
		score[row], match[row] = 0, 0
		h := dh[i-1]
		exactRow := i < D || !midWord
		for j := 1; j <= N; j++ {
			best, bm := score[up+j]-1, match[up+j]
			if s := score[row+j-1] - 1; s > best {
				best, bm = s, match[row+j-1]
			}
			var same bool
			if exactRow {
				same = h == nh[j-1] && eq(i-1, j-1)
			} else {
				same = eq(i-1, j-1)
			}
			if same {
				if s := score[up+j-1] + 1; s > best {
					best, bm = s, match[up+j-1]+1
				}
			} else if s := score[up+j-1] - 1; s > best {
				best, bm = s, match[up+j-1]
			}
			score[row+j], match[row+j] = best, bm
		}
	}
	bestJ, bestScore := 0, int32(0)
	for j := 1; j <= N; j++ {
		if s := score[D*W+j]; s > bestScore {
			bestJ, bestScore = j, s
		}
	}
	if bestJ == 0 || bestScore < 6 || match[D*W+bestJ] < 8 || !eq(D-1, bestJ-1) {
		return 0, 0
	}
	m := int(match[D*W+bestJ])
	conf := float64(m) / float64(max(bestJ, m))
	if conf < 0.8 {
		return 0, 0
	}
	last := nt[bestJ-1]
	cut := last.end
	if midWord {
		cut = last.start + dt[D-1].end - dt[D-1].start
	}
	return cut, conf
}

// mayAlign reports whether an alignment tokenOverlap would accept can
// exist, by an upper bound that needs no alignment: the matches of an
// alignment ending at next token j form a common subsequence of the
// document's tail and nt[:j], so they number at most the LCS of the two.
// Accepting needs at least 8 matches, a share of 0.8 of j and a score (at
// most 2*matches - j) of 6, with the document's last token matched at j-1.
// The LCS of every prefix comes from the bit-parallel algorithm of Hyyrö
// (one word per document tail of up to 64 tokens), so the check costs O(N);
// and since j - LCS never shrinks while an accepted alignment needs it at
// most a quarter of the tail, a clean continuation is dropped after a few
// tokens. It reads next's tokens into s.nt and s.nh as it goes, all of the
// first max when it reports true.
func (s *scratch) mayAlign(doc, next string, midWord bool, max int) bool {
	dt := s.dt
	D := len(dt)
	s.nt, s.nh = s.nt[:0], s.nh[:0]
	if D > 64 {
		s.nt = tokenize(s.nt, next, 0, max)
		for _, tk := range s.nt {
			s.nh = append(s.nh, hashToken(next[tk.start:tk.end]))
		}
		return true
	}
	for k := range s.seed {
		s.seed[k] = -1
	}
	if cap(s.chain) < D {
		s.chain = make([]int16, D, 64)
	}
	chain := s.chain[:D]
	for i := 0; i < D; i++ {
		k := s.dh[i] % seedSlots
		chain[i] = s.seed[k]
		s.seed[k] = int16(i)
	}
	lastTok := doc[dt[D-1].start:dt[D-1].end]
	mask := uint64(1)<<D - 1
	if D == 64 {
		mask = ^uint64(0)
	}
	v := ^uint64(0)
	ok := false
	pos := 0
	for j := 0; j < max; j++ {
		a, b := nextToken(next, pos)
		if a < 0 {
			break
		}
		pos = b
		tok := next[a:b]
		h := hashToken(tok)
		s.nt = append(s.nt, token{a, b})
		s.nh = append(s.nh, h)
		if ok {
			continue // only reading the rest of the tokens
		}
		var m uint64
		for i := s.seed[h%seedSlots]; i >= 0; i = chain[i] {
			if (int(i) != D-1 || !midWord) && s.dh[i] == h && doc[dt[i].start:dt[i].end] == tok {
				m |= 1 << uint(i)
			}
		}
		var last bool
		if midWord {
			last = strings.HasPrefix(tok, lastTok)
		} else {
			last = m&(1<<uint(D-1)) != 0
		}
		if last {
			m |= 1 << uint(D-1)
		}
		u := v & m
		v = (v + u) | (v &^ m)
		lcs := D - bits.OnesCount64(v&mask)
		n := j + 1
		if 4*(n-lcs) > D {
			return false // the deficit only grows
		}
		if last && lcs >= 8 && 5*lcs >= 4*n && 2*lcs-n >= 6 {
			ok = true
		}
	}
	return ok
}

// sameEnding reports whether next ends with the same last few bytes (of
// content, trailing whitespace aside) as doc.
func sameEnding(doc, next string) bool {
	d, n := strings.TrimRight(doc, " \t\r\n"), strings.TrimRight(next, " \t\r\n")
	k := min(8, len(d), len(n))
	return k > 0 && d[len(d)-k:] == n[len(n)-k:]
}

// findOverlap runs the cascade on a continuation whose chatter and repeated
// structure are already gone (bias: some was, which makes a restart likely):
// a restart of an incomplete record at one of restarts (outermost first), an
// exact repeat, a whitespace-normalized repeat, (when tokens) a token-level
// one, then the weak evidence of the format kind's text: a short repeat
// judged by the tokens it would glue at the join, and a restart of a bare
// partial line judged by the line starts it would leave. Where a join
// cannot tell by itself, s.habit (how the model continued at the job's other
// joins) decides: a model that starts over has a bare partial line restarted
// and any repeat that starts at a token cut; one that goes on has them kept
// and short repeats taken for the document's own. It returns the accepted
// overlap, or a zero cut with method none. Every step reads at most a
// bounded window, sized by the continuation where it can be.
func (s *scratch) findOverlap(doc, next string, restarts []int, tokens, bias bool, kind string) overlap {
	indent := kind == "code"
	if doc == "" || next == "" {
		return overlap{method: methodNone, confidence: 1}
	}
	// The longest exact repeat (what borders returns is only valid until
	// the next call, which whitespaceOverlap makes).
	b0 := 0
	if bs := s.borders(doc, next, overlapWindow); len(bs) > 0 {
		b0 = bs[0]
	}
	// A partial line of indentation alone that the continuation starts
	// with: the model restarts the line or goes on with its indentation.
	// The other joins decide (a model that starts over restarts this one
	// too), or else the indentation the line before calls for. Code gets
	// this below, as the restart of its line.
	if kind == "json" {
		ls := strings.LastIndexByte(doc, '\n') + 1
		if p := doc[ls:]; ls > 0 && p != "" && b0 <= len(p) && strings.TrimLeft(p, " \t") == "" && strings.HasPrefix(next, p) &&
			(s.habit > 0 || s.habit == 0 && indentRestart(doc, ls, next)) {
			return overlap{cut: len(p), method: methodStructural, confidence: 0.9}
		}
	}
	// A restart of an incomplete record from its start.
	for _, r := range restarts {
		if r < 0 || r >= len(doc) {
			continue
		}
		partial := doc[r:]
		// HasPrefix first: it fails at once when the partial record (which
		// may be most of the document for an outer container) is longer.
		line := isLineFormat(kind)
		// (From a model that goes on at the other joins, a bare partial
		// line, or one too short to rule out coincidence, that the
		// continuation starts with is the document's doubling: "Ελλάδα "
		// + "Ελλάδα Zürich".)
		if strings.HasPrefix(next, partial) && restartable(partial, bias) && !(s.habit < 0 && !bias && (line && alnumCount(partial) == 0 || len(partial) < strongOverlap)) ||
			indent && s.habit == 0 && indentRestart(doc, r, next) ||
			line && s.habit > 0 && strings.HasPrefix(next, partial) && (r == 0 || doc[r-1] == '\n') && !(kind == "diff" && diffHeaderKept(doc, r, next)) ||
			!line && s.habit > 0 && strings.HasPrefix(next, partial) && strings.TrimSpace(partial) != "" {
			if b0 <= len(partial) {
				// A re-wrapped repeat of more than the partial record
				// starts with it too; it must be long enough by itself to
				// outweigh the restart.
				n, conf := s.whitespaceOverlap(doc, next, 0)
				if n > len(partial) {
					return overlap{cut: n, method: methodWhitespace, confidence: conf}
				}
				return overlap{cut: len(partial), method: methodStructural, confidence: 0.95}
			}
		}
	}
	if b0 > 0 {
		if ok, conf := acceptExact(doc, b0, s.habit); ok {
			if b0 < strongOverlap {
				// A short exact repeat may be the end of a re-wrapped one
				// (long enough by itself to outweigh it, unless the model
				// re-wraps what it repeats at the other joins).
				habit := s.habit
				if !s.rewraps {
					habit = 0
				}
				n, wconf := s.whitespaceOverlap(doc, next, habit)
				if n > b0 && nonSpaceCount(next[:n]) > nonSpaceCount(next[:b0]) {
					return overlap{cut: n, method: methodWhitespace, confidence: wconf}
				}
			}
			return overlap{cut: b0, method: methodExact, confidence: conf}
		}
	}
	if n, conf := s.whitespaceOverlap(doc, next, s.habit); n > 0 {
		return overlap{cut: n, method: methodWhitespace, confidence: conf}
	}
	if tokens {
		// A near match may not swallow the whole continuation unless it
		// ends as the document does: a chunk that only repeats the tail
		// ends the same way, one that differs at its end has new content.
		if n, conf := s.tokenOverlap(doc, next); n > 0 && (n < len(strings.TrimRight(next, " \t\r\n")) || sameEnding(doc, next)) {
			return overlap{cut: n, method: methodToken, confidence: conf}
		}
	}
	// Then a short repeat of more than one token judged by the join it
	// would leave: keeping it glues the document's last token to the
	// repeat ("if f" + "if from" reads "fif"), cutting it glues the same
	// token to what follows ("from"); the reading the document's own text
	// shows wins. CSV too: inside a quoted value its field count cannot
	// tell the two apart.
	if (isLineFormat(kind) || kind == "csv") && b0 >= 3 && b0 < len(next) && distinctBytes(next[:b0]) >= 2 && strings.ContainsAny(strings.TrimSpace(next[:b0]), " \t\n") {
		w := doc[max(0, len(doc)-leadWindow):]
		if !gluePlausible(w, next) && gluePlausible(w, next[b0:]) {
			return overlap{cut: b0, method: methodExact, confidence: 0.75}
		}
	}
	// Last, the weakest evidence: a restart of a line that is only one
	// letter or punctuation long, judged by the line starts it would leave.
	if isLineFormat(kind) && len(restarts) > 0 && s.habit == 0 {
		if r := restarts[len(restarts)-1]; r >= 0 && r < len(doc) && strings.HasPrefix(next, doc[r:]) && leadRestart(doc, r, next, kind) {
			return overlap{cut: len(doc) - r, method: methodStructural, confidence: 0.8}
		}
	}
	return overlap{method: methodNone, confidence: 1}
}

// nonSpaceCount counts the bytes of s that are not whitespace.
func nonSpaceCount(s string) int {
	n, _ := contentBytes(s)
	return n
}

// diffHeaderKept reports whether a diff's partial line at lineStart, kept,
// makes the header line that the line before calls for ("--- " after a
// git extended header line, "+++ " after "--- ", "@@ " after "+++ ") and
// starting it over would not.
func diffHeaderKept(doc string, lineStart int, next string) bool {
	prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
	prev := doc[prevStart:max(prevStart, lineStart-1)]
	want := ""
	switch {
	case strings.HasPrefix(prev, "--- "):
		want = "+++ "
	case strings.HasPrefix(prev, "+++ "):
		want = "@@ "
	case strings.HasPrefix(prev, "index "), strings.HasPrefix(prev, "diff "), strings.HasPrefix(prev, "new file mode"),
		strings.HasPrefix(prev, "deleted file mode"), strings.HasPrefix(prev, "old mode"), strings.HasPrefix(prev, "new mode"):
		want = "--- "
	default:
		return false
	}
	return strings.HasPrefix(doc[lineStart:]+next, want) && !strings.HasPrefix(next, want)
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

// distinctBytes counts the distinct non-space bytes of s: a run of one byte
// ("0000", "----") repeats by itself and says nothing about a join.
func distinctBytes(s string) int {
	_, d := contentBytes(s)
	return d
}

// gluePlausible reports whether appending right to doc leaves a join the
// document's own text shows: no glue at all (whitespace on either side), a
// token across the join (word or punctuation run) that the document already
// uses whole, or, where the join changes from punctuation to a word or back,
// the document's last run followed the same way somewhere before.
func gluePlausible(doc, right string) bool {
	if doc == "" || right == "" || isSpace(doc[len(doc)-1]) || isSpace(right[0]) {
		return true
	}
	word := isWordByte(doc[len(doc)-1])
	a := len(doc)
	for a > 0 && !isSpace(doc[a-1]) && isWordByte(doc[a-1]) == word {
		a--
	}
	run := doc[a:]
	before := doc[:a]
	if isWordByte(right[0]) != word {
		return strings.Contains(before, run+right[:1])
	}
	b := 0
	for b < len(right) && !isSpace(right[b]) && isWordByte(right[b]) == word {
		b++
	}
	tok := run + right[:b]
	for i := 0; ; {
		j := strings.Index(before[i:], tok)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(tok)
		if (s == 0 || isSpace(before[s-1]) || isWordByte(before[s-1]) != word) && (e == len(before) || isSpace(before[e]) || isWordByte(before[e]) != word) {
			return true
		}
		i = s + 1
	}
}

// leadWindow bounds how much of the document leadRestart reads for the
// line starts and words it already uses.
const leadWindow = 32 << 10

// leadRestart decides a continuation that starts with a partial line too
// short or too bare to be evidence by itself (one letter, or only
// punctuation and spaces: "+", "---", "- ", "\t// "). Restarting the line
// or continuing it give two readings of the line; the restart wins when the
// document already starts lines the way it would and has never started one
// the way continuing would: "+++ +++ b/x" against "+++ b/x", "- - The"
// against "- The", "aa series" against "a series". In Markdown a run of
// marker characters that the continuation would lengthen ("#" + "# x",
// "**" + "** x") is left alone: heading levels and emphasis grow that way.
func leadRestart(doc string, lineStart int, next, kind string) bool {
	partial := doc[lineStart:]
	if partial == "" || lineStart > 0 && doc[lineStart-1] != '\n' || strings.ContainsAny(partial, "\n\r") || restartable(partial, false) {
		return false
	}
	first := next
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = strings.TrimSuffix(first, "\r")
	before := doc[max(0, lineStart-leadWindow):lineStart]
	if len(partial) == 1 && (partial[0]|0x20 >= 'a' && partial[0]|0x20 <= 'z') {
		// One letter: the first word with the letter doubled or not. A
		// word the document has not used that would start with a doubled
		// letter ("ppatches", "FFoo", "rrename") is not prose or a diff's
		// header either; code is left to what it has used ("ssa", "llvm").
		e := 0
		for e < len(first) && first[e] < utf8.RuneSelf && asciiWord[first[e]] {
			e++
		}
		if e < 1 || e < len(first) && first[e] >= utf8.RuneSelf {
			return false
		}
		w := first[:e]
		if wordCount(before, partial+w, 1) > 0 {
			return false
		}
		return wordCount(before, w, 1) >= 1 || kind != "code" && len(w) >= 3 && w[1] >= 'a' && w[1] <= 'z'
	}
	for i := 0; i < len(partial); i++ {
		if isWordByte(partial[i]) {
			return false
		}
	}
	if kind == "markdown" {
		if ok, decided := markdownRestart(doc, lineStart, partial, first); decided {
			return ok
		}
	}
	if kind == "diff" && strings.IndexByte(" +-", partial[0]) >= 0 && strings.Trim(partial[1:], " \t") == "" && next[0] == partial[0] {
		// A hunk line cut in its indentation: the content's indentation
		// closer to the line before it decides, as for code.
		prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
		prev := doc[prevStart:max(prevStart, lineStart-1)]
		if prev != "" && strings.IndexByte(" +-", prev[0]) >= 0 {
			want := indentWidth(prev[1:])
			cutInd := indentWidth(first[1:])
			keepInd := indentWidth(partial[1:] + first)
			if c, k := abs(cutInd-want), abs(keepInd-want); c != k {
				return c < k
			}
		}
	}
	if kind == "diff" {
		// A file or hunk header started over: continuing it would double
		// its marker ("---" + "--- a/x", "+++ " + "+++ b/x", "@@" + "@@ -1").
		for _, m := range []string{"--- ", "+++ ", "@@ "} {
			if strings.HasPrefix(first, m) && strings.HasPrefix(m, strings.TrimRight(partial, " ")) {
				return true
			}
		}
	}
	keep, cut := lineLead(partial+first), lineLead(first)
	if keep == cut {
		return false
	}
	nKeep, nCut := 0, 0
	for rest := before; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		switch lineLead(line) {
		case keep:
			nKeep++
		case cut:
			nCut++
		}
	}
	return nKeep == 0 && nCut >= 1
}

// markdownRestart judges the Markdown partial lines leadRestart cannot
// judge by line starts alone, reporting whether it decided. A table row
// keeps the number of cells of the row before it; a heading marker is never
// followed by another; a list or quote marker with its space followed by
// another is a nested block, and lengthening a run of marker characters
// ("**" + "** x", "```" + "```") is how emphasis and fences grow: both are
// left alone.
func markdownRestart(doc string, lineStart int, partial, first string) (bool, bool) {
	if partial[0] == '|' {
		prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
		prev := strings.TrimRight(doc[prevStart:max(prevStart, lineStart-1)], " \t\r")
		if strings.HasPrefix(prev, "|") {
			n := strings.Count(prev, "|")
			keep, cut := strings.Count(partial+first, "|"), strings.Count(first, "|")
			return cut == n && keep != n, true
		}
	}
	if strings.Trim(partial, "#") == "" || strings.TrimRight(partial, "#") == "" || strings.Trim(strings.TrimRight(partial, " "), "#") == "" && strings.HasSuffix(partial, " ") {
		// "###" + "### x" makes a heading of level six, "# " + "# x" a
		// heading that starts with "#": when the document has headings
		// like the restart's and none like that.
		lvl := len(strings.TrimLeft(first, "#"))
		lvl = len(first) - lvl
		if lvl == 0 || lvl >= len(first) || first[lvl] != ' ' {
			return false, true
		}
		if strings.HasSuffix(partial, " ") {
			return true, true
		}
		// Lengthening the heading's marker: a restart only when that would
		// jump two levels past every heading the document has written
		// ("###" + "### x" after levels 1 to 3); "#" + "# x" may well be
		// the first level-two heading.
		top := 0
		for rest := doc[max(0, lineStart-leadWindow):lineStart]; rest != ""; {
			line := rest
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = ""
			}
			if h := len(line) - len(strings.TrimLeft(line, "#")); h > 0 && h < len(line) && line[h] == ' ' {
				top = max(top, h)
			}
		}
		return top > 0 && len(partial)+lvl > top+1, true
	}
	last := partial[len(partial)-1]
	if isSpace(last) || last == first[0] && strings.IndexByte("#*-_=`~>+", last) >= 0 {
		return false, true
	}
	return false, false
}

// lineLead is how a line starts: what comes before its first word (all of
// it when it has none), with each run of whitespace read as one space.
func lineLead(line string) string {
	line = strings.TrimRight(line, "\r")
	e := 0
	for e < len(line) && !isWordByte(line[e]) {
		e++
	}
	lead := line[:e]
	if !strings.Contains(lead, "  ") && !strings.Contains(lead, "\t") {
		return lead
	}
	var b strings.Builder
	for i := 0; i < len(lead); i++ {
		if isSpace(lead[i]) {
			if i > 0 && isSpace(lead[i-1]) {
				continue
			}
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(lead[i])
	}
	return b.String()
}

// wordCount counts the whole-word occurrences of w in s, stopping at limit.
func wordCount(s, w string, limit int) int {
	n := 0
	for i := 0; n < limit; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			break
		}
		a, b := i+j, i+j+len(w)
		if (a == 0 || !isWordByte(s[a-1])) && (b == len(s) || !isWordByte(s[b])) {
			n++
		}
		i = a + 1
	}
	return n
}

// indentRestart decides a continuation that starts with the indentation the
// document's last line was cut in: restarting the line gives the line
// next's indentation, continuing it gives partial plus next's. The choice
// closer to the indentation the previous line calls for wins: its own, one
// level more when it opens a block, one level less when the line closes
// one (a level is the document's own indentation step).
func indentRestart(doc string, lineStart int, next string) bool {
	partial := doc[lineStart:]
	if partial == "" || !strings.HasPrefix(next, partial) || strings.TrimLeft(partial, " \t") != "" {
		return false
	}
	ind := len(next) - len(strings.TrimLeft(next, " \t"))
	if ind == len(next) {
		return false
	}
	prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
	prev := doc[prevStart:max(prevStart, lineStart-1)]
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
	}
	if strings.IndexByte("}])", next[ind]) >= 0 {
		// The line closes a block: one level less.
		target -= level()
	}
	restart, cont := ind, len(partial)+ind
	return abs(restart-target) < abs(cont-target)
}

// indentStep is the document's indentation step before offset end: the
// smallest change of indentation between two lines in a row (blank lines
// aside) among its last lines, 0 when they show none.
func indentStep(doc string, end int) int {
	w := doc[max(0, end-4<<10):end]
	if i := strings.IndexByte(w, '\n'); i >= 0 && len(w) < end {
		w = w[i+1:] // the first line may be cut
	}
	step, prev := 0, -1
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
		if d := abs(ind - prev); prev >= 0 && d > 0 && (step == 0 || d < step) {
			step = d
		}
		prev = ind
	}
	return step
}

// indentWidth is the width of s's leading whitespace, a tab counting four.
func indentWidth(s string) int {
	w := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w
		}
	}
	return w
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
