package merge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonFormat merges one JSON document. Chunks are joined as text (never
// parsed one by one: a chunk is not a JSON value) with the scanner telling
// each join where it falls; the joined document is repaired once, at the end,
// and validated with encoding/json.
type jsonFormat struct {
	sc  jsonScanner
	num numbering

	// verified is the scanner state after the last join verify accepted:
	// the text it accepted is what gets appended, so observe adopts that
	// state instead of scanning the same bytes a second time.
	verified    jsonScanner
	verifiedAt  int // len(doc) of that verify, -1 when none
	verifiedLen int // len(rest) of that verify
}

func newJSONFormat() *jsonFormat {
	return &jsonFormat{sc: newJSONScanner(), verifiedAt: -1}
}

func (f *jsonFormat) observe(doc string, from int) {
	if f.verifiedAt == from && f.verifiedLen == len(doc)-from {
		f.sc = f.verified
	} else {
		f.sc.feed(doc[from:], from)
	}
	f.verifiedAt = -1
	f.num.observe(doc, from)
}

// restarts are the starts of the elements in progress, outermost first: a
// model restarts the record it was writing, or just the member.
func (f *jsonFormat) restarts(out []int, doc string) []int {
	for _, fr := range f.sc.stack {
		if fr.elemStart >= 0 {
			out = append(out, fr.elemStart)
		}
	}
	return out
}

func (f *jsonFormat) traits() traits {
	return traits{
		blankIndentRestart: true,
		fences:             fenceRules{names: []string{"json"}, lineStart: wrapUnlessFenced, answer: wrapAny},
	}
}

func (f *jsonFormat) site(doc string) site {
	s := site{atLineStart: doc == "" || strings.HasSuffix(doc, "\n")}
	if doc != "" {
		s.end, s.doc = doc[len(doc)-1], doc
	}
	return s
}

// stripStructure removes a restatement of the enclosing containers — the
// opening "[" or `{"data": {"items": [` the model already wrote. It accepts
// the open path down to some container only when what follows restarts that
// container's element in progress (or, when none is in progress, starts a new
// one), so that a value that merely begins like the path is never cut.
func (f *jsonFormat) stripStructure(doc, t string) (string, string) {
	st := f.sc.stack
	if len(st) == 0 || f.sc.err >= 0 {
		return t, ""
	}
	// Outermost first: a restated "[" followed by the restart of the
	// element in progress must not be read as "[{" restating the open
	// object of that element.
	for d := 0; d < len(st); d++ {
		i, ok := matchPath(doc, t, st[:d+1])
		if !ok {
			continue
		}
		rest := t[i:]
		if es := st[d].elemStart; es >= 0 {
			if strings.HasPrefix(rest, doc[es:]) {
				return rest, "json enclosing structure"
			}
			continue
		}
		if d != len(st)-1 || f.sc.inStr || rest == "" || rest[0] == ']' || rest[0] == '}' {
			continue
		}
		if f.sc.expect == expCommaOrEnd {
			// The document ended after an element: the restated path is
			// followed by that element started over, or by the next one,
			// which needs its comma back.
			if (rest[0] == '{' || rest[0] == '[') && len(rest) > 1 {
				if e := jsonRecordEnd(rest[1:], false, 1); e > 0 && strings.HasSuffix(strings.TrimRight(doc, " \t\r\n"), rest[:e+1]) {
					return rest[e+1:], "json enclosing structure, restarted element"
				}
			}
			rest = "," + rest
		}
		return rest, "json enclosing structure"
	}
	return t, ""
}

// matchPath reports whether t opens with the containers of path (and the keys
// leading into them), returning the offset just past the path and the space
// after it.
func matchPath(doc, t string, path []jsonFrame) (int, bool) {
	i := skipSpace(t, 0)
	for k, fr := range path {
		if i >= len(t) || t[i] != fr.kind {
			return 0, false
		}
		i = skipSpace(t, i+1)
		if k == len(path)-1 {
			break
		}
		if fr.kind == '{' {
			if fr.keyEnd <= fr.keyStart {
				return 0, false
			}
			key := doc[fr.keyStart:fr.keyEnd]
			if !strings.HasPrefix(t[i:], key) {
				return 0, false
			}
			i = skipSpace(t, i+len(key))
			if i >= len(t) || t[i] != ':' {
				return 0, false
			}
			i = skipSpace(t, i+1)
		}
	}
	return i, true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// adjust escapes raw text that continues an open string, renumbers records
// whose numbering restarted, and settles the comma at the cut.
func (f *jsonFormat) adjust(doc, rest string, last bool) (string, string) {
	var notes []string
	if f.sc.inStr {
		if r, ok := escapeRawString(rest, f.sc.clone(), false); ok {
			rest = r
			notes = append(notes, noteRawEscaped)
		}
	}
	recStart, depth := f.record()
	recEnd := func(r string) int { return jsonRecordEnd(r, f.sc.inStr, depth) }
	if r, ok := f.num.renumber(doc, rest, recStart, recEnd); ok {
		rest = r
		notes = append(notes, "renumbered")
	}
	if !f.sc.inStr && !f.sc.inLit {
		i := skipSpace(rest, 0)
		switch {
		case i < len(rest) && rest[i] == ',' && (f.sc.expect == expValue || f.sc.expect == expKey) && f.sc.lastComma >= 0 && strings.TrimSpace(doc[f.sc.lastComma+1:]) == "":
			rest = rest[:i] + rest[i+1:]
			notes = append(notes, "doubled comma")
		case i < len(rest) && f.sc.expect == expCommaOrEnd && (rest[i] == '{' || rest[i] == '[' || rest[i] == '"'):
			if top := f.sc.stack[len(f.sc.stack)-1]; top.kind == '[' || rest[i] == '"' {
				rest = rest[:i] + "," + rest[i:]
				notes = append(notes, "missing comma")
			}
		}
	}
	return rest, strings.Join(notes, ", ")
}

// record returns where the element in progress of the innermost array
// began (-1 when none) and how many containers deep the document's end is
// inside it.
func (f *jsonFormat) record() (int, int) {
	for k := len(f.sc.stack) - 1; k >= 0; k-- {
		if f.sc.stack[k].kind == '[' {
			return f.sc.stack[k].elemStart, len(f.sc.stack) - 1 - k
		}
	}
	return -1, 0
}

// verify feeds the continuation to a copy of the scanner: the join is sound
// when no structural error appears.
func (f *jsonFormat) verify(doc, rest string, last bool) bool {
	f.verifiedAt = -1
	if f.sc.err >= 0 {
		return true // already broken before this join; nothing to choose by
	}
	c := f.sc.clone()
	c.feed(rest, len(doc))
	if c.err >= 0 {
		return false
	}
	if f.sc.bad < 0 && c.bad >= 0 && c.bad < len(doc)+junctionReach {
		// A bad escape right at the junction ("\u" + "\u003c", an escape
		// cut and then repeated): the join, not the model's text, broke
		// the string. (Further on, a bad escape is the text's own and
		// only the whole document's validity reports it.)
		return false
	}
	f.verified, f.verifiedAt, f.verifiedLen = c, len(doc), len(rest)
	return true
}

// junctionReach is how far past a join a string's bad escape is taken
// for the join's: the longest escape, "\uXXXX", and then some.
const junctionReach = 8

func (f *jsonFormat) point(doc string) string { return "byte:" + strconv.Itoa(len(doc)) }

// repair closes what the last chunk left open: a string, a literal, a
// dangling comma or colon, the open containers.
func (f *jsonFormat) repair(res *Result) {
	if strings.TrimSpace(res.Content) == "" {
		return
	}
	if !f.sc.complete() && f.sc.err < 0 {
		if content, ok := repairJSON(res.Content, f.sc); ok {
			res.Content = content
			res.Strategy = "json+repair"
			// Repair is rare (the last chunk was cut too), so recount from scratch.
			f.sc = newJSONScanner()
			f.sc.feed(content, 0)
		}
	}
}

// validate checks the whole document with encoding/json (unless the
// scanner already knows it valid) and counts its records.
func (f *jsonFormat) validate(res *Result) {
	if strings.TrimSpace(res.Content) == "" {
		res.Error = "json: empty document"
		return
	}
	if f.sc.err >= 0 {
		res.Error = fmt.Sprintf("json: structural error at byte %d", f.sc.err)
	}
	if !f.sc.valid() && !json.Valid([]byte(res.Content)) {
		var v json.RawMessage
		err := json.Unmarshal([]byte(res.Content), &v)
		res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + fmt.Sprintf("json: merged document is not valid: %v", err)
	}
	switch {
	case f.sc.subCount >= 0:
		res.RecordCount = f.sc.subCount
	default:
		res.RecordCount = f.sc.rootCount
	}
}

// repairJSON completes a document cut short: it finishes an open string or
// literal, drops a dangling comma, gives a dangling key a null value and
// closes the open containers. Nothing of the document is dropped but a comma.
func repairJSON(doc string, sc jsonScanner) (string, bool) {
	var add strings.Builder
	expect := sc.expect
	switch {
	case sc.inStr:
		if sc.esc {
			add.WriteByte('\\')
		}
		for range sc.uHex {
			add.WriteByte('0')
		}
		add.WriteByte('"')
		expect = expCommaOrEnd
		if sc.isKey {
			expect = expColon
		}
	case sc.inLit:
		lit := string(sc.lit)
		for _, w := range []string{"true", "false", "null"} {
			if strings.HasPrefix(w, lit) {
				add.WriteString(w[len(lit):])
			}
		}
		if l := lit[len(lit)-1]; l == '-' || l == '.' || l == 'e' || l == 'E' || l == '+' {
			add.WriteByte('0')
		}
		expect = expCommaOrEnd
	}
	if expect == expColon {
		add.WriteString(":null")
		expect = expCommaOrEnd
	}
	if expect == expValue && len(sc.stack) > 0 && sc.stack[len(sc.stack)-1].kind == '{' {
		add.WriteString("null")
		expect = expCommaOrEnd
	}
	if (expect == expValue || expect == expKey) && sc.lastComma >= 0 && strings.TrimSpace(doc[sc.lastComma+1:]) == "" {
		doc = doc[:sc.lastComma] + doc[sc.lastComma+1:]
	}
	for k := len(sc.stack) - 1; k >= 0; k-- {
		if sc.stack[k].kind == '{' {
			add.WriteByte('}')
		} else {
			add.WriteByte(']')
		}
	}
	if add.Len() == 0 {
		return doc, false
	}
	return doc + add.String(), true
}

// noteRawEscaped is adjust's note for raw text escaped into an open string.
const noteRawEscaped = "raw text escaped"

// escapeRawString handles a continuation that, inside an open JSON string,
// switched to raw text (real newlines, unescaped quotes). It finds where the
// string really ends — the first quote after which the rest scans as JSON —
// and escapes everything before it. It reports false when the continuation
// is already proper JSON string content. In line mode (JSON Lines) the rest of
// the record must end at the next newline.
func escapeRawString(rest string, sc jsonScanner, lineMode bool) (string, bool) {
	if sc.isKey {
		// Raw text goes on with a value (a diff, a note); a key that runs
		// over lines is a repeat or a restart read wrong.
		return rest, false
	}
	end := rawStringEnd(rest, &sc, lineMode)
	body := rest
	if end >= 0 {
		body = rest[:end]
	} else if strings.IndexByte(rest, '"') >= 0 {
		// Quotes but no place where the string can end: this is not raw
		// text inside the string but something else (a repeat, a restart).
		return rest, false
	}
	if !strings.ContainsAny(body, "\n\r\t") {
		return rest, false
	}
	var b strings.Builder
	b.Grow(len(rest) + len(rest)/8)
	writeEscaped(&b, body)
	if end >= 0 {
		b.WriteString(rest[end:])
	}
	return b.String(), true
}

// rawStringEnd returns the offset in rest of the quote that ends the open
// string sc is in, or -1: the first quote followed by a comma, a closing
// bracket, a colon or the end of rest, after which the rest scans as JSON
// (stringEndsAt). Before the first raw line break or tab, a quote escaped
// by a backslash is string content. It tries 64 quotes at most, since each
// try scans a few kilobytes.
func rawStringEnd(rest string, sc *jsonScanner, lineMode bool) int {
	raw := false
	tries := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c == '\n' || c == '\t' || c == '\r' {
			raw = true
		}
		if c != '"' {
			continue
		}
		if !raw {
			// Before any raw newline the text may be ordinary escaped content.
			if backslashes(rest[:i])%2 == 1 {
				continue
			}
		}
		j := skipSpace(rest, i+1)
		if j < len(rest) && !strings.ContainsRune(",}]:", rune(rest[j])) {
			continue
		}
		tries++
		if tries > 64 {
			break
		}
		if stringEndsAt(rest, i, sc, lineMode) {
			return i
		}
	}
	return -1
}

// stringEndsAt reports whether the open string sc is in can end at the
// quote rest[i]: a copy of the scanner, closed there, reads the next few
// kilobytes without a structural error. In line mode the record must also
// be complete at the next newline, unless rest has none.
func stringEndsAt(rest string, i int, sc *jsonScanner, lineMode bool) bool {
	probe := sc.clone()
	probe.inStr, probe.esc, probe.uHex = false, false, 0
	if probe.isKey {
		probe.expect = expColon
	} else {
		probe.valueEnd()
	}
	// The next few kilobytes tell whether the string can end here.
	after := head(rest[i+1:], 4<<10)
	if lineMode {
		if e := strings.IndexByte(after, '\n'); e >= 0 {
			after = after[:e]
		}
	}
	probe.feed(after, 0)
	return probe.err < 0 && (!lineMode || probe.complete() || !strings.Contains(rest[i+1:], "\n"))
}

// writeEscaped writes body to b as JSON string content: backslashes,
// quotes and control characters escaped, the rest as it is.
func writeEscaped(b *strings.Builder, body string) {
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
}

// backslashes counts the backslashes that end s.
func backslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// breaks: outside a string, a line of prose is no JSON, wherever it stands;
// inside one it may be raw text the model went on with (a diff carried in
// a string), so only after the document's end does it break.
func (f *jsonFormat) breaks(doc, line, after string) bool {
	if f.sc.inStr || f.sc.err >= 0 {
		return false
	}
	c := f.sc.clone()
	c.feed(line, len(doc))
	return c.err >= 0
}

// endBreaks: after the document's end, no prose is JSON.
func (f *jsonFormat) endBreaks(doc, body, line string) bool { return true }

// lineBreak: a line break between values tells nothing.
func (f *jsonFormat) lineBreak(doc, t string, last bool) (bool, bool) { return false, false }
