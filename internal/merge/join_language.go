package merge

import "strings"

// languageStep: a short exact repeat that the exact step would not cut by
// its own tests, judged by the document's own language (see langModel): the
// continuation's bytes read on from the cut word far better without the
// repeat than with it ("can quite rea" + "quite reasonably": "rea" + "son"
// against "rea" + "qui"). The document decides, not a word list, so a
// document that does write a doubling keeps it.
func languageStep(c *joinCtx) (overlap, bool) {
	b0, next, doc := c.longest, c.next, c.doc
	if b0 < 3 || b0 >= len(next) || !letterBefore(doc, len(doc)) || !letterAt(next, b0) ||
		distinctBytes(next[:b0]) < 2 || !strings.ContainsAny(strings.TrimSpace(next[:b0]), " \t\n") {
		return overlap{}, false
	}
	w := tail(doc, langWindow)
	if len(w) < langMin {
		return overlap{}, false
	}
	m := newLangModel(w)
	k := min(langJunction, len(next)-b0)
	if m.logProb(doc, next[b0:b0+k])-m.logProb(doc, next[:k]) < langDecides {
		return overlap{}, false
	}
	return overlap{cut: b0, method: methodExact, confidence: confLanguage}, true
}
