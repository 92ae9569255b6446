package merge

import "math"

// The document's own language is evidence about a line no word list can
// give: a byte n-gram model of the document's recent text tells how well a
// line fits it, and at the cut, which reading of the bytes around a line
// the document's text makes likely. A continuation's text goes on with the
// cut line ("bro" + "wn fox"); a remark stands apart from both ("bro" +
// "Sure, here is the rest:"), and in a document of code, records or
// another register, reads unlike any of it.

// Model sizes: the order of the byte n-grams, the bytes of the document a
// model learns from, and the bytes held out to measure how well the
// document's own text fits.
const (
	langOrder   = 5
	langWindow  = 12 << 10
	langHeldOut = 2 << 10
	// langJunction is how many bytes of a text are scored at a junction.
	langJunction = 12
	// langMin is the shortest document that has a language to read.
	langMin = 512
)

// langModel is a byte n-gram model with Witten-Bell interpolation.
type langModel struct {
	// next counts each context (hashed with its order) followed by each
	// byte; ctx counts each context, and kinds the distinct bytes after
	// it.
	next  map[uint64]uint32
	ctx   map[uint64]uint32
	kinds map[uint64]uint32
	// uni counts single bytes; total is their sum.
	uni   [256]uint32
	total uint32
}

// newLangModel learns text.
func newLangModel(text string) *langModel {
	m := &langModel{
		next:  make(map[uint64]uint32, 4*len(text)),
		ctx:   make(map[uint64]uint32, 2*len(text)),
		kinds: make(map[uint64]uint32, 2*len(text)),
	}
	m.learn(text)
	return m
}

// learn counts the n-grams of text, a stretch of its own (no context
// reaches back into an earlier one).
func (m *langModel) learn(text string) {
	for i := 0; i < len(text); i++ {
		c := text[i]
		m.uni[c]++
		m.total++
		h := uint64(14695981039346656037)
		for k := 1; k < langOrder && k <= i; k++ {
			h = (h ^ uint64(text[i-k])) * 1099511628211
			hk := h ^ uint64(k)<<56
			m.ctx[hk]++
			pair := (hk ^ uint64(c)) * 0x9e3779b97f4a7c15
			if m.next[pair]++; m.next[pair] == 1 {
				m.kinds[hk]++
			}
		}
	}
}

// logProb is the log probability of text following context (its last
// langOrder-1 bytes count).
func (m *langModel) logProb(context, text string) float64 {
	buf := make([]byte, 0, langOrder+len(text))
	buf = append(buf, tail(context, langOrder-1)...)
	base := len(buf)
	buf = append(buf, text...)
	lp := 0.0
	for i := base; i < len(buf); i++ {
		lp += math.Log(m.prob(buf[:i], buf[i]))
	}
	return lp
}

// prob is P(c | the bytes before it), interpolated from order 0 up.
func (m *langModel) prob(before []byte, c byte) float64 {
	p := (float64(m.uni[c]) + 1) / (float64(m.total) + 256)
	h := uint64(14695981039346656037)
	for k := 1; k < langOrder && k <= len(before); k++ {
		h = (h ^ uint64(before[len(before)-k])) * 1099511628211
		hk := h ^ uint64(k)<<56
		n := float64(m.ctx[hk])
		if n == 0 {
			break
		}
		t := float64(m.kinds[hk])
		pair := float64(m.next[(hk^uint64(c))*0x9e3779b97f4a7c15])
		p = (pair + t*p) / (n + t)
	}
	return p
}

// perByte is the mean log probability per byte of text after context.
func (m *langModel) perByte(context, text string) float64 {
	if text == "" {
		return 0
	}
	return m.logProb(context, text) / float64(len(text))
}

// language is what the document's language says of a candidate remark.
type language struct {
	// foreign is how much less likely per byte the line is than the
	// document's own recent text (nats per byte; large: unlike it).
	foreign float64
	// goesOn is how much more likely the text after the line is right
	// after the cut than right after the line (nats; large: the text,
	// not the line, goes on with the cut line).
	goesOn float64
	// apart is how much more likely the line's opening is at the start of
	// a line than right after the cut (nats; large: the line does not go
	// on with the cut line).
	apart float64
}

// foreignEvidence weighs how unlike the document's language a remark reads.
func (l language) foreignEvidence(r *remark) {
	switch {
	case l.foreign >= 3:
		r.add(2, "reads unlike the document")
	case l.foreign >= 1.5:
		r.add(1, "reads little like the document")
	}
}

// readLanguage weighs line, standing between the document doc and the
// text after it (after its line breaks sep), by the document's language.
// ok is false when the document is too short to have one.
func readLanguage(doc, line, sep, after string) (language, bool) {
	w := tail(doc, langWindow)
	if len(w) < langMin {
		return language{}, false
	}
	n := min(langHeldOut, len(w)/4)
	train, held := w[:len(w)-n], w[len(w)-n:]
	m := newLangModel(train)
	var l language
	own := m.perByte(train, held)
	l.foreign = own - m.perByte("\n", line+"\n")
	x := head(after, langJunction)
	l.goesOn = m.logProb(doc, x) - m.logProb(line+sep, x)
	y := head(line, langJunction)
	l.apart = m.logProb("\n", y) - m.logProb(doc, y)
	return l, true
}
