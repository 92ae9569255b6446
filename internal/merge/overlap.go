package merge

import (
	"strings"
	"unicode"
	"unicode/utf8"
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

// borders returns, longest first, every length L > 0 such that next[:L] is a
// suffix of doc, looking at most window bytes into each. It runs the
// Knuth-Morris-Pratt automaton of next's head over doc's tail, so the cost is
// linear in the window, never in the document.
func borders(doc, next string, window int) []int {
	a := head(next, window)
	b := tail(doc, window)
	if a == "" || b == "" {
		return nil
	}
	pi := make([]int32, len(a))
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
	var out []int
	for q > 0 {
		out = append(out, int(q))
		q = pi[q-1]
	}
	return out
}

// isWordByte reports whether the byte continues an ASCII word; non-ASCII
// bytes count as word bytes, with CJK handled by wordBoundary.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// isCJK reports whether r is written without spaces between words, so that
// every rune boundary is a word boundary.
func isCJK(r rune) bool {
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
// after another) are common and must both survive.
func acceptExact(doc string, l int) (bool, float64) {
	if l < minOverlap || l > len(doc) {
		return false, 0
	}
	rep := doc[len(doc)-l:]
	start := len(doc) - l
	atSpace := start == 0 || isSpace(doc[start-1])
	lineStart := start == 0 || doc[start-1] == '\n'
	body := strings.TrimRight(rep, " \t\r\n")
	inner := strings.ContainsAny(body, " \t\r\n") // a separator inside the repeat
	nonSpace, distinct := contentBytes(rep)
	content := substantive(rep) || strings.Contains(body, "\n") && nonSpace >= 3 && distinct >= 2
	conf := 0.7 + 0.3*float64(min(l, 2*strongOverlap))/(2*strongOverlap)
	if strings.HasSuffix(doc, "\n") {
		lines := strings.Count(rep, "\n")
		switch {
		case lineStart && lines >= 2 && nonSpace >= 3 && distinct >= 2:
		case !lineStart && atSpace && inner && content:
		case !lineStart && l >= strongOverlap && wordBoundary(doc, start) && content && !repeatedNearby(doc, rep):
		default:
			return false, 0
		}
	} else {
		switch {
		case lineStart && strings.Count(rep, "\n") == 1 && (l < strongOverlap || repeatedNearby(doc, rep)):
			// One short or familiar line plus the partial one: structured
			// documents repeat a line and the next line's opening
			// ("## foo\n#", "{\"Action\":") all the time.
			return false, 0
		case atSpace && (inner || l >= 12) && content:
		case l >= 6 && cjkBoundary(doc, start) && content:
		case l >= strongOverlap && wordBoundary(doc, start) && content && !repeatedNearby(doc, rep):
		default:
			return false, 0
		}
	}
	if doubledBefore(doc, rep) || completesRepeatedLine(doc, rep) {
		return false, 0
	}
	return true, conf
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
	w := tail(doc, overlapWindow)
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

// minSignificant is the shortest repeat the cascade cuts on its own.
const minSignificant = 8

// repeatedNearby reports whether rep, which ends doc, also occurs earlier in
// the document's recent tail.
func repeatedNearby(doc, rep string) bool {
	w := tail(doc, 4<<10)
	return strings.Contains(w[:len(w)-1], rep)
}

// normalized is text with every run of whitespace collapsed to one space,
// remembering for each normalized byte the offset just past it in the original
// so that a match can be mapped back.
type normalized struct {
	s   string
	end []int32
}

func normalize(s string) normalized {
	var b strings.Builder
	b.Grow(len(s))
	end := make([]int32, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
				j++
			}
			b.WriteByte(' ')
			end = append(end, int32(j))
			i = j
			continue
		}
		b.WriteByte(c)
		end = append(end, int32(i+1))
		i++
	}
	return normalized{s: b.String(), end: end}
}

// whitespaceOverlap finds a repeat that differs from the document only in
// whitespace (re-wrapped or re-indented) and returns how many bytes of next it
// spans.
func whitespaceOverlap(doc, next string) (int, float64) {
	const window = 4 << 10
	d := normalize(tail(doc, window))
	n := normalize(head(next, window))
	bs := borders(d.s, n.s, window)
	if len(bs) == 0 {
		return 0, 0
	}
	l := bs[0]
	rep := n.s[:l]
	if l < strongOverlap || strings.Count(rep, " ") < 3 || !substantive(rep) {
		return 0, 0
	}
	if !wordBoundary(d.s, len(d.s)-l) || repeatedNearby(d.s, rep) {
		return 0, 0
	}
	cut := int(n.end[l-1])
	if strings.HasSuffix(doc, "\n") && strings.Count(next[:cut], "\n") < 2 {
		// As for exact repeats: one repeated line at a line boundary may be
		// the document's own.
		return 0, 0
	}
	return cut, 0.9
}

// token is a word or a single punctuation rune, by byte offsets.
type token struct{ start, end int }

// tokenize splits s into tokens, skipping whitespace, stopping after max tokens.
func tokenize(s string, max int) []token {
	var out []token
	for i := 0; i < len(s) && len(out) < max; {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		j := i + w
		if (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') && !isCJK(r) {
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || r2 == '_') || isCJK(r2) {
					break
				}
				j += w2
			}
		}
		out = append(out, token{i, j})
		i = j
	}
	return out
}

// tokenOverlap aligns the document's last tokens with the continuation's
// first ones allowing a few edits (a model that repeats its tail with a word
// changed), by a semi-global alignment whose size is bounded by the token
// windows. It returns the bytes of next that repeat the document and the share
// of aligned tokens that matched.
func tokenOverlap(doc, next string) (int, float64) {
	const maxDoc, maxNext = 48, 96
	dtail := tail(doc, 2<<10)
	dt := tokenize(dtail, 1<<20)
	if len(dt) > maxDoc {
		dt = dt[len(dt)-maxDoc:]
	}
	nt := tokenize(head(next, 4<<10), maxNext)
	if len(dt) < 6 || len(nt) < 6 {
		return 0, 0
	}
	// A tail made of few distinct tokens (rules, entity runs, repeated
	// headings) aligns with anything; only a varied tail is evidence.
	distinct := map[string]bool{}
	for _, tk := range dt[max(0, len(dt)-12):] {
		if w := dtail[tk.start:tk.end]; isWordByte(w[0]) {
			distinct[w] = true
		}
	}
	if len(distinct) < 5 {
		return 0, 0
	}
	// A tail the document has written before (a list of similar links, a
	// repeated example) aligns with its next repetition: not evidence.
	if repeatedNearby(doc, dtail[dt[len(dt)-6].start:]) {
		return 0, 0
	}
	midWord := len(dtail) > 0 && isWordByte(dtail[len(dtail)-1])
	eq := func(i, j int) bool {
		a := dtail[dt[i].start:dt[i].end]
		b := next[nt[j].start:nt[j].end]
		if i == len(dt)-1 && midWord {
			return strings.HasPrefix(b, a)
		}
		return a == b
	}
	// score[i][j]: best score aligning doc tokens ending before i (free start)
	// with next tokens [0, j).
	D, N := len(dt), len(nt)
	score := make([]int, (D+1)*(N+1))
	match := make([]int, (D+1)*(N+1))
	at := func(i, j int) int { return i*(N+1) + j }
	for j := 1; j <= N; j++ {
		score[at(0, j)] = -j
	}
	for i := 1; i <= D; i++ {
		for j := 1; j <= N; j++ {
			best, bm := score[at(i-1, j)]-1, match[at(i-1, j)]
			if s := score[at(i, j-1)] - 1; s > best {
				best, bm = s, match[at(i, j-1)]
			}
			if eq(i-1, j-1) {
				if s := score[at(i-1, j-1)] + 1; s > best {
					best, bm = s, match[at(i-1, j-1)]+1
				}
			} else if s := score[at(i-1, j-1)] - 1; s > best {
				best, bm = s, match[at(i-1, j-1)]
			}
			score[at(i, j)], match[at(i, j)] = best, bm
		}
	}
	bestJ, bestScore := 0, 0
	for j := 1; j <= N; j++ {
		if s := score[at(D, j)]; s > bestScore {
			bestJ, bestScore = j, s
		}
	}
	if bestJ == 0 || bestScore < 6 || match[at(D, bestJ)] < 8 || !eq(D-1, bestJ-1) {
		return 0, 0
	}
	conf := float64(match[at(D, bestJ)]) / float64(max(bestJ, match[at(D, bestJ)]))
	if conf < 0.8 {
		return 0, 0
	}
	last := nt[bestJ-1]
	cut := last.end
	if midWord {
		a := dtail[dt[D-1].start:dt[D-1].end]
		cut = last.start + len(a)
	}
	return cut, conf
}

// findOverlap runs the cascade on a continuation whose chatter and repeated
// structure are already gone (bias: some was, which makes a restart likely):
// a restart of an incomplete record at one of
// restarts (outermost first),
// an exact repeat, a whitespace-normalized repeat, then (when allowed) a
// token-level one. It returns the accepted overlap, or a zero cut with method
// none.
func findOverlap(doc, next string, restarts []int, tokens, bias, indent bool) overlap {
	if doc == "" || next == "" {
		return overlap{method: methodNone, confidence: 1}
	}
	bs := borders(doc, next, overlapWindow)
	// A restart of an incomplete record from its start.
	for _, r := range restarts {
		if r < 0 || r >= len(doc) {
			continue
		}
		partial := doc[r:]
		// HasPrefix first: it fails at once when the partial record (which
		// may be most of the document for an outer container) is longer.
		if strings.HasPrefix(next, partial) && restartable(partial, bias) || indent && indentRestart(doc, r, next) {
			if len(bs) == 0 || bs[0] <= len(partial) {
				return overlap{cut: len(partial), method: methodStructural, confidence: 0.95}
			}
		}
	}
	if len(bs) > 0 {
		if ok, conf := acceptExact(doc, bs[0]); ok {
			return overlap{cut: bs[0], method: methodExact, confidence: conf}
		}
	}
	if n, conf := whitespaceOverlap(doc, next); n > 0 {
		return overlap{cut: n, method: methodWhitespace, confidence: conf}
	}
	if tokens {
		if n, conf := tokenOverlap(doc, next); n > 0 {
			return overlap{cut: n, method: methodToken, confidence: conf}
		}
	}
	return overlap{method: methodNone, confidence: 1}
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
// next's indentation, continuing it gives partial plus next's. The choice
// closer to the previous line's indentation wins.
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
	if p := strings.TrimRight(prev, " \t\r"); p != "" && strings.ContainsRune("{([:", rune(p[len(p)-1])) {
		// The previous line opens a block: the next is indented one level more.
		if strings.HasPrefix(prev, "\t") || prev == "" {
			target++
		} else {
			target += 4
		}
	}
	restart, cont := ind, len(partial)+ind
	return abs(restart-target) < abs(cont-target)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
