package merge

import (
	"fmt"
	"strconv"
	"strings"
)

// csvFormat merges RFC 4180 CSV (and other delimiters). It tracks the quote
// state and where the incomplete record starts, and verifies every join by
// the field count of the records around it, which is what tells a restarted
// row, a repeated header or a complete row missing its newline apart from a
// clean continuation.
type csvFormat struct {
	delim byte

	inQuote  bool
	recStart int // offset of the incomplete record
	records  int // complete records, header included
	header   string
	cols     int
	crlf     bool
	// counts has bit n set when a complete record of n fields was seen
	// (n < 64): real CSV is often ragged (trailing empty fields left out),
	// so a record is judged by the field counts the document already uses.
	counts uint64
	fences bool // the document holds a code fence (inside a field)
	// valueFence is the fence state of the quoted value in progress, read
	// over its complete lines up to valueTo (see observe).
	valueFence fenceOpen
	valueTo    int
	fields     int // fields of the record in progress so far
	// lastID is the first field of the last complete record as a number
	// (-1 when it is none); counted is how many records in a row before
	// it counted up by one in that field (row numbers, ids).
	lastID  int
	counted int
}

// fits reports whether a complete record of n fields looks like the
// document's records.
//
// A document whose records already vary in length (up to the header's), or
// that has shown no record after its header yet, may leave out trailing
// fields, so any length from two up to the header's fits too: a wrong join
// glues records into one that is too long.
func (f *csvFormat) fits(n int) bool {
	if n == f.cols || n < 64 && f.counts&(1<<n) != 0 {
		return true
	}
	other := f.counts
	if f.cols < 64 {
		other &^= 1 << f.cols
	}
	return (other != 0 || f.records < 2) && n >= 2 && n < f.cols
}

// maxCols is the largest field count of a complete record so far.
func (f *csvFormat) maxCols() int {
	m := f.cols
	for n := 63; n > m; n-- {
		if f.counts&(1<<n) != 0 {
			return n
		}
	}
	return m
}

// detectDelimiter picks the separator that occurs most often outside quotes in
// the first line.
func detectDelimiter(line string) byte {
	best, bestN := byte(','), 0
	for _, d := range []byte{',', ';', '\t', '|'} {
		if n := countFields(line, d) - 1; n > bestN {
			best, bestN = d, n
		}
	}
	return best
}

// countFields counts the fields of one record (without its line ending),
// honouring quotes; a record that ends inside a quote still counts the field
// it is in.
func countFields(rec string, delim byte) int {
	n := 1
	in := false
	for i := 0; i < len(rec); i++ {
		switch c := rec[i]; {
		case c == '"':
			in = !in
		case c == delim && !in:
			n++
		}
	}
	return n
}

// wellQuoted reports whether every quote in rec belongs to a quoted field
// (opening at the field start, doubled inside, closing before a delimiter or
// the end): a wrong cut inside a quoted field shows up as a stray quote.
func wellQuoted(rec string, delim byte) bool {
	fieldStart, in, closed := true, false, false
	for i := 0; i < len(rec); i++ {
		c := rec[i]
		switch {
		case in:
			if c == '"' {
				if i+1 < len(rec) && rec[i+1] == '"' {
					i++
					continue
				}
				in, closed = false, true
			}
		case c == delim:
			fieldStart, closed = true, false
			continue
		case c == '"':
			if !fieldStart {
				return false
			}
			in = true
		case closed && c != '\r':
			return false
		}
		fieldStart = false
	}
	return true
}

// recordEnd returns the offset of the newline that ends the first record of
// s, given the quote state at its start, or -1.
func recordEnd(s string, in bool) int {
	for i := 0; i < len(s); {
		if in {
			j := strings.IndexByte(s[i:], '"')
			if j < 0 {
				return -1
			}
			i += j + 1
			in = false
			continue
		}
		j := strings.IndexAny(s[i:], "\"\n")
		if j < 0 {
			return -1
		}
		if s[i+j] == '\n' {
			return i + j
		}
		i += j + 1
		in = true
	}
	return -1
}

func (f *csvFormat) observe(doc string, from int) {
	s := doc[from:]
	f.fences = f.fences || strings.Contains(s, "```") || strings.Contains(s, "~~~")
	if f.delim == 0 {
		first := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			first = s[:i]
		}
		f.delim = detectDelimiter(first)
	}
	// One pass: the quote state, the fields of the record in progress and,
	// at each record's end, its field count.
	d, in, n := f.delim, f.inQuote, f.fields
	if n == 0 {
		n = 1
	}
	for i := 0; i < len(s); i++ {
		if in {
			j := strings.IndexByte(s[i:], '"')
			if j < 0 {
				break
			}
			i += j
			in = false
			continue
		}
		switch s[i] {
		case '"':
			in = true
			if at := from + i; at == 0 || doc[at-1] != '"' {
				// A new value (not a doubled quote inside one).
				f.valueFence, f.valueTo = fenceOpen{}, at+1
			}
		case d:
			n++
		case '\n':
			end := from + i
			f.countRecord(doc, f.recStart, end)
			if f.records == 0 {
				f.header = strings.Clone(doc[:end+1])
				h := strings.TrimSuffix(f.header[:len(f.header)-1], "\r")
				f.crlf = len(h) < len(f.header)-1
				f.cols = countFields(h, d)
			}
			f.records++
			if n < 64 {
				f.counts |= 1 << n
			}
			f.recStart = end + 1
			n = 1
		}
	}
	f.inQuote, f.fields = in, n
	if to := strings.LastIndexByte(doc, '\n') + 1; in && f.fences && to > f.valueTo {
		// The value's own fences, over the complete lines it gained: a
		// fence line after it may close one it opened.
		f.valueFence.stepLines(doc[f.valueTo:to])
		f.valueTo = to
	}
}

// countRecord follows the first field of the record doc[start:end] as a
// counter: the records' numbers, when they count up by one.
func (f *csvFormat) countRecord(doc string, start, end int) {
	id := firstNumber(doc[start:end], f.delim)
	switch {
	case id < 0:
		f.counted = 0
	case f.lastID >= 0 && id == f.lastID+1:
		f.counted++
	default:
		f.counted = 0
	}
	f.lastID = id
}

// firstNumber returns the record's first field as a small decimal number
// (no sign, no leading zero), or -1.
func firstNumber(rec string, delim byte) int {
	n := 0
	i := 0
	for ; i < len(rec) && i < 9 && rec[i] >= '0' && rec[i] <= '9'; i++ {
		n = n*10 + int(rec[i]-'0')
	}
	if i == 0 || i >= len(rec) || rec[i] != delim || rec[0] == '0' && i > 1 {
		return -1
	}
	return n
}

// startsDigit reports whether s starts with a digit.
func startsDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// restarts: the record in progress, and the line of it in progress when it
// runs over several lines (a quoted value with line breaks): a model
// restarts the line it was cut in as much as the record.
func (f *csvFormat) restarts(out []int, doc string) []int {
	if ls := strings.LastIndexByte(doc, '\n') + 1; ls > f.recStart {
		return append(out, f.recStart, ls)
	}
	return append(out, f.recStart)
}

func (f *csvFormat) traits() traits {
	return traits{
		glue:   true,
		fences: fenceRules{names: []string{"csv"}, inValues: true, lineStart: wrapUnlessFenced, answer: wrapAny},
		blank:  blankRules{leads: true, markers: markersAlways},
	}
}

func (f *csvFormat) site(doc string) site {
	s := site{atLineStart: doc == "" || strings.HasSuffix(doc, "\n"), noFence: f.inQuote && f.fences, inQuote: f.inQuote,
		partial: doc[strings.LastIndexByte(doc, '\n')+1:]}
	if s.noFence {
		s.fence, s.inFence = f.valueFence, f.valueFence.open()
	}
	if doc != "" {
		s.end, s.doc = doc[len(doc)-1], doc
	}
	return s
}

func (f *csvFormat) stripStructure(doc, t string) (string, string) {
	if f.records < 2 || f.header == "" {
		return t, ""
	}
	h := strings.TrimRight(f.header, "\r\n")
	if strings.HasPrefix(t, h) {
		rest := t[len(h):]
		switch {
		case strings.HasPrefix(rest, "\r\n"):
			return rest[2:], "csv header"
		case strings.HasPrefix(rest, "\n"):
			return rest[1:], "csv header"
		}
	}
	return t, ""
}

// noteRowSeparated is adjust's note for a line break put between a complete
// row that lacked it and the next.
const noteRowSeparated = "row separated"

// adjust separates a complete row that lacks its newline from the next one,
// so that two rows never fuse into one with too many fields.
func (f *csvFormat) adjust(doc, rest string, last bool) (string, string) {
	partial := doc[f.recStart:]
	if f.cols == 0 || partial == "" || f.inQuote || rest == "" || rest[0] == '\n' || rest[0] == '\r' {
		return rest, ""
	}
	if !f.fits(countFields(strings.TrimSuffix(partial, "\r"), f.delim)) {
		return rest, ""
	}
	first := rest
	if e := recordEnd(rest, false); e >= 0 {
		first = rest[:e]
	}
	first = strings.TrimSuffix(first, "\r")
	if !f.fits(countFields(partial+first, f.delim)) && f.fits(countFields(first, f.delim)) {
		if f.crlf {
			return "\r\n" + rest, noteRowSeparated
		}
		return "\n" + rest, noteRowSeparated
	}
	return rest, ""
}

// verify checks the record that spans the join and the next two records of
// the continuation: each must have the header's field count and sound quoting.
func (f *csvFormat) verify(doc, rest string, last bool) bool {
	if f.cols == 0 {
		return true
	}
	in := f.inQuote
	rec := doc[f.recStart:]
	s := rest
	for k := 0; k < 3; k++ {
		e := recordEnd(s, in)
		var part string
		if e < 0 {
			part = s
		} else {
			part = s[:e]
		}
		full := strings.TrimSuffix(rec+part, "\r")
		n := countFields(full, f.delim)
		if k == 0 && f.counted >= 2 && strings.IndexByte(rec, f.delim) < 0 && strings.IndexByte(full, f.delim) >= 0 &&
			firstNumber(full, f.delim) != f.lastID+1 && !(rec == "" && !startsDigit(full)) {
			// The records count up in their first field (three in a
			// row): the one across the join has the next number, unless
			// the document already wrote its first field (no join
			// changes it then), or the record, whole after the join,
			// has no number there (Debian's ",Sid,sid,…" after
			// "15,Duke,…": the count ends).
			return false
		}
		if e < 0 {
			// The record runs to the chunk's end: complete only in the last chunk.
			if last && strings.TrimSpace(full) != "" {
				return f.fits(n) && wellQuoted(full, f.delim)
			}
			return n <= f.maxCols()
		}
		if !f.fits(n) || !wellQuoted(full, f.delim) {
			// A blank line between records is tolerated.
			if strings.TrimSpace(full) != "" {
				return false
			}
		}
		s, rec, in = s[e+1:], "", false
	}
	return true
}

func (f *csvFormat) point(doc string) string { return "row:" + strconv.Itoa(f.records+1) }

func (f *csvFormat) repair(res *Result) {}

// validate counts data records (every record, less a header row when the
// first record looks like one: no numeric field) and reports a quoted value
// left open.
func (f *csvFormat) validate(res *Result) {
	n := f.records
	if res.Content[f.recStart:] != "" {
		n++
	}
	if n > 1 && looksLikeHeader(f.header, f.delim) {
		n--
	}
	res.RecordCount = n
	if f.inQuote {
		res.Error = fmt.Sprintf("csv: unterminated quoted field at byte %d", f.recStart)
	}
}

// looksLikeHeader reports whether a first record names columns rather than
// holding data: every field is non-empty and none is a number.
func looksLikeHeader(rec string, delim byte) bool {
	rec = strings.TrimRight(rec, "\r\n")
	if rec == "" {
		return false
	}
	for _, field := range strings.Split(rec, string(delim)) {
		field = strings.Trim(strings.TrimSpace(field), `"`)
		if field == "" {
			return false
		}
		if _, err := strconv.ParseFloat(field, 64); err == nil {
			return false
		}
	}
	return true
}

// breaks: a line of prose breaks a CSV document when the record it would
// make has a field count the document has not used (or glued to a cut
// record, makes one that no longer fits where the text after it would), or
// leaves a first column that counts the records without a number. Inside a
// quoted value any text may stand. At the document's start the header
// that follows decides.
func (f *csvFormat) breaks(doc, line, after string) bool {
	next, _, _ := strings.Cut(after, "\n")
	next = strings.TrimSuffix(next, "\r")
	if doc == "" || f.records == 0 {
		d := f.delim
		if d == 0 {
			d = detectDelimiter(next)
		}
		return next != "" && countFields(next, d) >= 2 && countFields(line, d) != countFields(next, d)
	}
	if f.inQuote || f.cols < 2 {
		return false
	}
	if partial := doc[f.recStart:]; partial != "" {
		return !f.fits(countFields(partial+line, f.delim)) && f.fits(countFields(partial+next, f.delim))
	}
	return f.foreign(line)
}

// lineBreak reads a line break after a preamble by field counts, where
// the record was cut outside a quoted value and the text's first line
// holds no quote: kept, the cut record and that line are records of their
// own; dropped, they are one. It decides where exactly one reading gives
// records of the lengths the document writes.
func (f *csvFormat) lineBreak(doc, t string, _ bool) (bool, bool) {
	if f.inQuote || f.delim == 0 {
		return false, false
	}
	cut, ok := cutLineBreak(t)
	partial := doc[f.recStart:]
	first, rest, more := strings.Cut(cut, "\n")
	first = strings.TrimSuffix(first, "\r")
	fits := f.fits
	if f.records == 0 {
		// In the header, the document's only line so far, no record
		// length is known yet but that of the text's next line.
		next, _, _ := strings.Cut(rest, "\n")
		next = strings.TrimSuffix(next, "\r")
		n := countFields(next, f.delim)
		if !more || n < 2 || strings.Contains(next, `"`) {
			return false, false
		}
		fits = func(k int) bool { return k == n }
	} else if f.cols < 2 {
		return false, false
	}
	if !ok || partial == "" || first == "" || strings.ContainsAny(partial+first, "\"\n") {
		return false, false
	}
	apart := fits(countFields(partial, f.delim)) && fits(countFields(first, f.delim))
	if joined := fits(countFields(partial+first, f.delim)); apart == joined {
		return false, false
	}
	return apart, true
}

// endBreaks: after the document's records, a line of prose is a record of
// its own (see breaks).
func (f *csvFormat) endBreaks(doc, body, line string) bool {
	return doc != "" && f.records > 0 && f.cols >= 2 && f.foreign(line)
}

// foreign reports whether line, as a record, has a field count the
// document has not used, or leaves a first column that counts the records
// without a number.
func (f *csvFormat) foreign(line string) bool {
	return !f.fits(countFields(line, f.delim)) || f.counted >= 2 && firstNumber(line, f.delim) < 0
}
