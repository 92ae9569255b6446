package merge

import (
	"strings"
	"unicode/utf8"
)

// leadStep, the weakest evidence: a restart of a line that is only one
// letter or punctuation long, judged by the line starts it would leave
// (line formats, and only where the other joins show no habit).
func leadStep(c *joinCtx) (overlap, bool) {
	if !c.tr.lines || len(c.restarts) == 0 || c.habit != 0 {
		return overlap{}, false
	}
	if r := c.restarts[len(c.restarts)-1]; r >= 0 && r < len(c.doc) && strings.HasPrefix(c.next, c.doc[r:]) && leadRestart(c.doc, r, c.next, c.tr) {
		return overlap{cut: len(c.doc) - r, method: methodStructural, confidence: confLead}, true
	}
	return overlap{}, false
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
// against "- The", "aa series" against "a series". The format's own rule
// (tr.lead) decides first where it can: Markdown's heading levels and
// emphasis, a diff's headers and hunk lines.
func leadRestart(doc string, lineStart int, next string, tr traits) bool {
	partial := doc[lineStart:]
	if partial == "" || !lineStartAt(doc, lineStart) || strings.ContainsAny(partial, "\n\r") || restartable(partial, false) {
		return false
	}
	first := next
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = strings.TrimSuffix(first, "\r")
	before := doc[max(0, lineStart-leadWindow):lineStart]
	if len(partial) == 1 && (partial[0]|0x20 >= 'a' && partial[0]|0x20 <= 'z') {
		return letterRestart(before, partial, first, tr.doubledLetters)
	}
	for i := 0; i < len(partial); i++ {
		if isWordByte(partial[i]) {
			return false
		}
	}
	if tr.lead != nil {
		if ok, decided := tr.lead(doc, lineStart, partial, first, next); decided {
			return ok
		}
	}
	return leadsFavourRestart(before, partial, first)
}

// letterRestart decides a partial line of one letter: the first word with
// the letter doubled or not. A word the document has not used that would
// start with a doubled letter ("ppatches", "FFoo", "rrename") is not prose
// or a diff's header either (doubledLetters); code is left to what it has
// used ("ssa", "llvm").
func letterRestart(before, partial, first string, doubledLetters bool) bool {
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
	return wordCount(before, w, 1) >= 1 || doubledLetters && len(w) >= 3 && w[1] >= 'a' && w[1] <= 'z'
}

// leadsFavourRestart reports whether the document's lines before start the
// way restarting the partial line would leave it, and never the way
// continuing it would.
func leadsFavourRestart(before, partial, first string) bool {
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
