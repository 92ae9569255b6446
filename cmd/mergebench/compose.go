package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// env is what a habit writes one case with: its random stream, its
// document, its half's phrasings and the words it picked for the case (a
// model names the document the same way throughout an answer).
type env struct {
	r           *rand.Rand
	d           doc
	ph          *phrasebook
	noun        string
	unit, units string
	part        int // the number of the message being written, for {part}
}

func newEnv(r *rand.Rand, d doc, ph *phrasebook) *env {
	ns := nouns[d.format]
	us := units[d.format]
	u := us[r.IntN(len(us))]
	return &env{r: r, d: d, ph: ph, noun: ns[r.IntN(len(ns))], unit: u[0], units: u[1]}
}

// pick returns a random element of a non-empty list.
func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// fill writes a template for this case; false when it names an anchor the
// document has none of at this cut.
func (e *env) fill(t, prev string) (string, bool) {
	if strings.Contains(t, "{anchor}") {
		as := anchors(e.d, prev)
		if len(as) == 0 {
			return "", false
		}
		t = strings.ReplaceAll(t, "{anchor}", pick(e.r, as))
	}
	return strings.NewReplacer("{noun}", e.noun, "{unit}", e.unit, "{units}", e.units, "{part}", strconv.Itoa(e.part)).Replace(t), true
}

// sentence writes a clause with one of the endings both it and the caller
// allow, not capitalized; false when there is none or the template cannot
// be filled.
func (e *env) sentence(c clause, ends, prev string) (string, bool) {
	var ok []rune
	for _, x := range c.ends {
		if strings.ContainsRune(ends, x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return "", false
	}
	s, filled := e.fill(c.text, prev)
	if !filled {
		return "", false
	}
	end := string(pick(e.r, ok))
	if end == "…" && e.r.IntN(3) == 0 {
		end = "..."
	}
	return s + end, true
}

// compose writes [interjection] + a clause of list with one of the
// endings; interject is the chance in 20 of an interjection, drawn from
// the generic ones and, for a continuation (cont), the apologies too.
func (e *env) compose(list []clause, ends, prev string, interject int, cont bool) string {
	s := ""
	for try := 0; s == "" && try < 200; try++ {
		s, _ = e.sentence(pick(e.r, list), ends, prev)
	}
	if s == "" {
		// Every list has clauses with every ending its callers ask for and
		// no anchor; a miss here means a list lost them.
		panic("mergebench: no clause of the list takes the endings " + ends)
	}
	pool := e.ph.interjections
	if cont {
		pool = append(pool[:len(pool):len(pool)], e.ph.apologies...)
	}
	if e.r.IntN(20) >= interject || len(pool) == 0 {
		return capitalize(s)
	}
	in := pick(e.r, pool)
	switch p := pick(e.r, []rune(in.ends)); p {
	case ',':
		return in.text + ", " + s
	case '—':
		return in.text + " — " + s
	default:
		return in.text + string(p) + " " + capitalize(s)
	}
}

// bracketed writes one of the bracketed or emphasized forms of list.
func (e *env) bracketed(list []string, prev string) (string, bool) {
	for try := 0; try < 50; try++ {
		if s, ok := e.fill(pick(e.r, list), prev); ok {
			return s, true
		}
	}
	return "", false
}

// preamble introduces a continuation: a sentence ending in one of ends,
// or, with bracketChance in 20, a bracketed note.
func (e *env) preamble(prev, ends string, bracketChance int) string {
	if e.r.IntN(20) < bracketChance {
		if s, ok := e.bracketed(e.ph.brackets, prev); ok {
			return s
		}
	}
	return e.compose(e.ph.preambles, ends, prev, 9, true)
}

// restartPreamble announces a continuation that starts over: from the
// top, or from an earlier line (before names the document up to it).
func (e *env) restartPreamble(before string, top bool) string {
	if top {
		return e.compose(e.ph.restartsTop, ":.…", before, 6, true)
	}
	return e.compose(e.ph.restartsEarlier, ":.…", before, 6, true)
}

// firstPreamble introduces the whole answer, sometimes with a note.
func (e *env) firstPreamble() string {
	s := e.compose(e.ph.firsts, ":.!", "", 6, false)
	if e.r.IntN(5) == 0 && !strings.HasSuffix(s, ":") {
		s += " " + pick(e.r, e.ph.notes)
	}
	return s
}

// trailer closes an answer: a bracketed mark, or [opener] + a sentence,
// sometimes two, on one line or as two paragraphs.
func (e *env) trailer(prev string) string {
	if e.r.IntN(5) == 0 {
		if s, ok := e.bracketed(e.ph.marks, prev); ok {
			return s
		}
	}
	s := capitalize(e.compose(e.ph.trailers, ".!?", prev, 0, false))
	if e.r.IntN(4) == 0 {
		o := pick(e.r, e.ph.openers)
		s = o.text + string(pick(e.r, []rune(o.ends))) + " " + s
	}
	switch e.r.IntN(8) {
	case 0:
		s += " " + capitalize(e.compose(e.ph.trailers, ".!", prev, 0, false))
	case 1:
		s += "\n\n" + capitalize(e.compose(e.ph.trailers, ".!?", prev, 0, false))
	}
	return s
}

func capitalize(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// fence is a code fence a model wraps an answer in.
type fence struct{ open, close string }

// fence picks one of the half's fence styles for the format; ok false for
// a format no model fences (text). Four backticks only for Markdown that
// holds fences itself.
func (e *env) fence() (fence, bool) {
	var styles []string
	for _, s := range e.ph.fences[e.d.format] {
		if !strings.HasPrefix(s, "````") || strings.Contains(e.d.text, "```") {
			styles = append(styles, s)
		}
	}
	if len(styles) == 0 {
		return fence{}, false
	}
	s := pick(e.r, styles)
	c := s[:len(s)-len(strings.TrimLeft(s, s[:1]))]
	return fence{open: s, close: c}, true
}

// anchors are the specifics a model may name at a cut: the row, record or
// line it stopped at, the section or function it was writing, the file a
// patch was changing, the last words of prose.
func anchors(d doc, prev string) []string {
	var out []string
	lines := strings.Count(prev, "\n")
	switch d.format {
	case "csv":
		if n := csvLines(prev) - 1; n > 0 {
			out = append(out, fmt.Sprintf("row %d", n))
		}
		return out
	case "jsonl":
		if lines > 0 {
			out = append(out, fmt.Sprintf("record %d", lines), fmt.Sprintf("line %d", lines))
		}
		return out
	case "json":
		if n := lastNumber(prev, `"line":`); n > 0 {
			out = append(out, fmt.Sprintf("line %d", n), fmt.Sprintf("record %d", n))
		}
	case "markdown":
		if t := lastHeading(prev); t != "" {
			out = append(out, `the "`+t+`" section`, `"`+t+`"`)
		}
	case "code":
		if f := lastFunc(prev); f != "" {
			out = append(out, "`"+f+"`", "the "+f+" function")
		}
	case "diff":
		if p := lastPrefixed(prev, "+++ "); p != "" {
			p = strings.TrimPrefix(strings.Fields(p)[0], "b/")
			out = append(out, "`"+p+"`", "the changes to "+p)
		}
	case "text":
		if w := lastWords(prev, 4); w != "" {
			out = append(out, `"`+w+`"`)
		}
	}
	if lines > 0 && d.format != "json" {
		out = append(out, fmt.Sprintf("line %d", lines))
	}
	return out
}

// csvLines counts the records prev completes: line breaks outside quotes.
func csvLines(prev string) int {
	in, n := false, 0
	for i := 0; i < len(prev); i++ {
		switch prev[i] {
		case '"':
			in = !in
		case '\n':
			if !in {
				n++
			}
		}
	}
	return n
}

// lastNumber is the number after the last occurrence of key, 0 if none.
func lastNumber(s, key string) int {
	i := strings.LastIndex(s, key)
	if i < 0 {
		return 0
	}
	rest := strings.TrimLeft(s[i+len(key):], " ")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(rest[:j])
	return n
}

// lastHeading is the text of the last ATX heading in prev, if short.
func lastHeading(prev string) string {
	for _, l := range reverseLines(prev) {
		if strings.HasPrefix(l, "#") {
			t := strings.TrimSpace(strings.TrimLeft(l, "#"))
			if t != "" && len(t) < 60 && !strings.ContainsAny(t, "`\"") {
				return t
			}
			return ""
		}
	}
	return ""
}

// lastFunc is the name of the last Go function declared in prev.
func lastFunc(prev string) string {
	for _, l := range reverseLines(prev) {
		rest, ok := strings.CutPrefix(l, "func ")
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, "(") {
			if i := strings.Index(rest, ") "); i >= 0 {
				rest = rest[i+2:]
			}
		}
		i := strings.IndexAny(rest, "([ ")
		if i > 0 {
			return rest[:i]
		}
	}
	return ""
}

// lastPrefixed is the rest of the last complete line starting with p.
func lastPrefixed(prev, p string) string {
	for _, l := range reverseLines(prev) {
		if rest, ok := strings.CutPrefix(l, p); ok && strings.TrimSpace(rest) != "" {
			return rest
		}
	}
	return ""
}

// reverseLines lists the complete lines of prev, last first.
func reverseLines(prev string) []string {
	ls := strings.Split(prev[:strings.LastIndexByte(prev, '\n')+1], "\n")
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
	return ls
}

// lastWords are the last n complete words of prev, quoted as a model
// quotes where it stopped.
func lastWords(prev string, n int) string {
	end := strings.LastIndexAny(prev, " \n")
	if end < 0 {
		return ""
	}
	ws := strings.Fields(prev[:end])
	if len(ws) < n {
		return ""
	}
	s := strings.Join(ws[len(ws)-n:], " ")
	if strings.ContainsAny(s, `"`) {
		return ""
	}
	return s
}
