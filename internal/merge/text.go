package merge

import (
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// tail returns the last n bytes of s (all of s when shorter).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// cutLineBreak returns t without the one line break it opens with ("\n"
// or "\r\n"), and whether it opened with one: the text after a preamble's
// separator, whose first line break the votes weigh.
func cutLineBreak(t string) (string, bool) {
	return strings.CutPrefix(strings.TrimPrefix(t, "\r"), "\n")
}

// recentLines returns the last n bytes of s from a line start: the first
// of them dropped up to its line break when the window cut it.
func recentLines(s string, n int) string {
	w := tail(s, n)
	if i := strings.IndexByte(w, '\n'); i >= 0 && len(w) < len(s) {
		w = w[i+1:]
	}
	return w
}

// tailJoin returns the last n bytes of a+b (all when shorter) without
// copying the rest of a.
func tailJoin(a, b string, n int) string {
	if len(b) >= n {
		return b[len(b)-n:]
	}
	return tail(a, n-len(b)) + b
}

// head returns the first n bytes of s (all of s when shorter).
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
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

// lineStartAt reports whether offset i of s starts a line.
func lineStartAt(s string, i int) bool { return i == 0 || s[i-1] == '\n' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// bytesView reads b as a string without copying; the caller keeps b
// unchanged while the string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
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

// nonSpaceCount counts the bytes of s that are not whitespace.
func nonSpaceCount(s string) int {
	n, _ := contentBytes(s)
	return n
}

// distinctBytes counts the distinct non-space bytes of s: a run of one byte
// ("0000", "----") repeats by itself and says nothing about a join.
func distinctBytes(s string) int {
	_, d := contentBytes(s)
	return d
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

// lastTextLine returns the last line of s that holds more than whitespace
// (its trailing whitespace left out) and the offset where it starts; ""
// and 0 when no line does.
func lastTextLine(s string) (string, int) {
	b := strings.TrimRight(s, " \t\r\n")
	start := strings.LastIndexByte(b, '\n') + 1
	return b[start:], start
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
