package merge

import "strings"

// glueStep: a short repeat of more than one token judged by the join it
// would leave (formats with glue): keeping it glues the document's last
// token to the repeat ("if f" + "if from" reads "fif"), cutting it glues
// the same token to what follows ("from"); the reading the document's own
// text shows wins.
func glueStep(c *joinCtx) (overlap, bool) {
	b0, next := c.longest, c.next
	if !c.tr.glue || b0 < 3 || b0 >= len(next) || distinctBytes(next[:b0]) < 2 || !strings.ContainsAny(strings.TrimSpace(next[:b0]), " \t\n") {
		return overlap{}, false
	}
	w := c.doc[max(0, len(c.doc)-leadWindow):]
	if !gluePlausible(w, next) && gluePlausible(w, next[b0:]) {
		return overlap{cut: b0, method: methodExact, confidence: confGlue}, true
	}
	return overlap{}, false
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
	if usesWhole(before, tok, word) {
		return true
	}
	// A word the document wrote at a sentence's start is the same word
	// ("It is" before, "that i" + "t is" now).
	if c := tok[0]; word && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return usesWhole(before, string(c^0x20)+tok[1:], word)
	}
	return false
}

// usesWhole reports whether before holds tok as a whole token: not inside a
// longer run of bytes of its kind (word bytes when word, else punctuation).
func usesWhole(before, tok string, word bool) bool {
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
