package merge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonlFormat merges JSON Lines: one JSON value per line. Joins are checked
// by validating the lines around them; the interior of a chunk is the
// model's own text and is not re-validated, which keeps large merges fast.
type jsonlFormat struct {
	lines     int
	lineStart int
	num       numbering
}

func (f *jsonlFormat) observe(doc string, from int) {
	s := doc[from:]
	f.lines += strings.Count(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		f.lineStart = from + i + 1
	}
	f.num.observe(doc, from)
}

func (f *jsonlFormat) restarts(out []int, doc string) []int { return append(out, f.lineStart) }

func (f *jsonlFormat) traits() traits {
	return traits{fences: fenceRules{names: []string{"jsonl"}, lineStart: wrapUnlessFenced, answer: wrapAny}}
}

func (f *jsonlFormat) site(doc string) site {
	return site{atLineStart: doc == "" || strings.HasSuffix(doc, "\n")}
}

func (f *jsonlFormat) stripStructure(doc, t string) (string, string) { return t, "" }

// lineInString reports whether the incomplete last line ends inside a string.
func lineInString(line string) bool {
	sc := newJSONScanner()
	sc.feed(line, 0)
	return sc.inStr
}

func (f *jsonlFormat) adjust(doc, rest string, last bool) (string, string) {
	partial := doc[f.lineStart:]
	if p := strings.TrimRight(partial, " \t\r"); p != "" && rest != "" && (rest[0] == '{' || rest[0] == '[') &&
		(p[len(p)-1] == '}' || p[len(p)-1] == ']') && json.Valid([]byte(p)) {
		// A complete record that lacks its newline, then the next one:
		// separate them, as a CSV row is.
		r, note := f.adjust(doc, "\n"+rest, last)
		return r, strings.TrimPrefix(note+", record separated", ", ")
	}
	inStr := partial != "" && lineInString(partial)
	var notes []string
	if inStr {
		// A record cut inside a string that goes on as raw text.
		sc := newJSONScanner()
		sc.feed(partial, 0)
		if r, ok := escapeRawString(rest, sc, true); ok {
			rest = r
			notes = append(notes, noteRawEscaped)
		}
	}
	recStart := -1
	if partial != "" {
		recStart = f.lineStart
	}
	recEnd := func(r string) int { return strings.IndexByte(r, '\n') }
	if r, ok := f.num.renumber(doc, rest, recStart, recEnd); ok {
		rest = r
		notes = append(notes, "renumbered")
	}
	return rest, strings.Join(notes, ", ")
}

// verify checks the line that spans the join and the next one: each must be
// a JSON value (a line still being written must at least scan cleanly).
func (f *jsonlFormat) verify(doc, rest string, last bool) bool {
	line := doc[f.lineStart:]
	s := rest
	for k := 0; k < 2; k++ {
		e := strings.IndexByte(s, '\n')
		if e < 0 {
			full := line + s
			if strings.TrimSpace(full) == "" {
				return true
			}
			if last {
				return json.Valid([]byte(full))
			}
			sc := newJSONScanner()
			sc.feed(full, 0)
			return sc.err < 0
		}
		full := strings.TrimSuffix(line+s[:e], "\r")
		if strings.TrimSpace(full) != "" && !json.Valid([]byte(full)) {
			return false
		}
		line, s = "", s[e+1:]
	}
	return true
}

func (f *jsonlFormat) point(doc string) string { return "line:" + strconv.Itoa(f.lines+1) }

func (f *jsonlFormat) repair(res *Result) {}

// validate counts records (non-empty lines) and checks the last one, which
// no join verified.
func (f *jsonlFormat) validate(res *Result) {
	c := res.Content
	n := f.lines - strings.Count(c, "\n\n")
	if strings.HasPrefix(c, "\n") {
		n--
	}
	if c != "" && !strings.HasSuffix(c, "\n") {
		n++
	}
	res.RecordCount = max(n, 0)
	last := c[f.lineStart:]
	if strings.TrimSpace(last) != "" && !json.Valid([]byte(last)) {
		res.Error = fmt.Sprintf("jsonl: last record at line %d is not valid JSON", f.lines+1)
	}
}

// breaks: a line of prose is no JSON value, unless it goes on with a
// string the record was cut in.
func (f *jsonlFormat) breaks(doc, line, after string) bool {
	partial := doc[f.lineStart:]
	if partial != "" && lineInString(partial) {
		return false
	}
	return notJSON(partial + line)
}

// endBreaks: after the last record, a line of prose is a record of its own,
// and no JSON value.
func (f *jsonlFormat) endBreaks(doc, body, line string) bool { return notJSON(line) }

// lineBreak: a line break between values tells nothing.
func (f *jsonlFormat) lineBreak(doc, t string, last bool) (bool, bool) { return false, false }

// notJSON reports whether s cannot begin a JSON value.
func notJSON(s string) bool {
	sc := newJSONScanner()
	sc.feed(s, 0)
	return sc.err >= 0
}
