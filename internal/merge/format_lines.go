package merge

import (
	"strconv"
	"strings"
)

// lineDoc is what every line-oriented format (text, code, Markdown, diffs)
// keeps of its document: the lines so far and where the last, incomplete
// one starts. Joins are byte-exact (no space is ever inserted, whitespace at
// the cut is kept).
type lineDoc struct {
	lines     int // newlines so far
	lineStart int // offset of the last (incomplete) line
	scanned   int // complete lines before this offset were inspected
}

// advance counts the lines of doc[from:] and returns the complete lines not
// inspected yet (they end at the last newline) and their offset.
func (l *lineDoc) advance(doc string, from int) (region string, at int) {
	s := doc[from:]
	l.lines += strings.Count(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		l.lineStart = from + i + 1
	}
	region, at = doc[l.scanned:l.lineStart], l.scanned
	l.scanned = l.lineStart
	return region, at
}

func (l *lineDoc) restarts(out []int, doc string) []int { return append(out, l.lineStart) }

// lineSite is the site of a line-oriented document: where its last line
// starts, and its last byte for the reading of a preamble's line break.
func (l *lineDoc) lineSite(doc string) site {
	s := site{atLineStart: doc == "" || strings.HasSuffix(doc, "\n"), partial: doc[l.lineStart:]}
	if doc != "" {
		s.end, s.doc = doc[len(doc)-1], doc
	}
	return s
}

func (l *lineDoc) stripStructure(doc, t string) (string, string) { return t, "" }

func (l *lineDoc) adjust(doc, rest string, last bool) (string, string) { return rest, "" }

func (l *lineDoc) verify(doc, rest string, last bool) bool { return true }

func (l *lineDoc) point(doc string) string { return "line:" + strconv.Itoa(l.lines+1) }

func (l *lineDoc) repair(res *Result) {}

// validate counts lines: a line-oriented document is valid as it stands.
func (l *lineDoc) validate(res *Result) {
	n := l.lines
	if res.Content != "" && !strings.HasSuffix(res.Content, "\n") {
		n++
	}
	res.RecordCount = n
}

// lineTraits are what the line-oriented formats share.
func lineTraits() traits {
	return traits{
		lines: true, glue: true, doubledLetters: true,
		blank: blankRules{leads: true, markers: markersAlways},
	}
}

// textFormat is prose: nothing to track beyond lines.
type textFormat struct{ lineDoc }

func (f *textFormat) traits() traits {
	t := lineTraits()
	t.tokens = true
	t.endBlanks = true
	t.fences = fenceRules{names: []string{"text"}, lineStart: wrapNever, answer: wrapNever}
	t.blank.markers = markersLineStarts
	return t
}

func (f *textFormat) observe(doc string, from int) { f.advance(doc, from) }

func (f *textFormat) site(doc string) site { return f.lineSite(doc) }

// codeFormat is source code: it tracks code fences, which a document that
// the model wrapped in a fence from its first chunk carries.
type codeFormat struct {
	lineDoc
	docFenced bool
	fence     fenceOpen
}

func (f *codeFormat) traits() traits {
	t := lineTraits()
	t.indentRestart = true
	t.doubledLetters = false
	t.syntax, t.proseAt = codeSyntax, inComment
	t.fences = fenceRules{names: []string{"code"}, tracked: true, lineStart: wrapUnlessFenced, answer: wrapAny}
	// A source file cut between two definitions ends with a blank line.
	t.endBlanks = true
	return t
}

func (f *codeFormat) observe(doc string, from int) {
	if from == 0 {
		if i := strings.IndexByte(doc, '\n'); i >= 0 {
			if _, ok := fenceLine(doc[:i]); ok {
				f.docFenced = true
			}
		}
	}
	region, _ := f.advance(doc, from)
	f.scanFences(region)
}

// scanFences steps the fence state through each fence line in region (complete
// lines only), finding candidates with a substring search so that code
// without fences costs almost nothing.
func (f *codeFormat) scanFences(region string) {
	for len(region) > 0 {
		i := strings.Index(region, "```")
		j := strings.Index(region, "~~~")
		if i < 0 || j >= 0 && j < i {
			i = j
		}
		if i < 0 {
			return
		}
		ls := strings.LastIndexByte(region[:i], '\n') + 1
		le := strings.IndexByte(region[i:], '\n')
		if le < 0 {
			return
		}
		if _, ok := fenceLine(region[ls : i+le]); ok {
			f.docFenced = true
			f.fence.step(region[ls : i+le])
		}
		region = region[i+le+1:]
	}
}

// breaks: a sentence of prose (three words at least) standing as a line
// of its own, or a note (emphasised, bracketed), is no code in any
// language, unless the document is inside a block comment or a long
// string there; at the line start (after a cut line of indentation alone
// too) or after the document's end only (a cut line with text may be a
// comment's).
func (f *codeFormat) breaks(doc, line, after string) bool {
	if strings.TrimRight(doc[strings.LastIndexByte(doc, '\n')+1:], " \t") != "" {
		return false
	}
	return f.endBreaks(doc, "", line)
}

// endBreaks: see breaks.
func (f *codeFormat) endBreaks(doc, body, line string) bool {
	if inBlockComment(doc) {
		return false
	}
	end, ok := remarkForm(line)
	return ok && !codeSyntax(line) && (isNote(line) || end != ')' && sentenceLine(line)) && holdsCode(doc+body)
}

// holdsCode reports whether the recent text has a line that reads as code
// (what detection counts, or a remark's code syntax): a line of prose
// breaks a code document only where there is code to break. Asked for
// code, a model may answer in prose; then a closing sentence is the
// document's own, not a remark about it.
func holdsCode(text string) bool {
	for line := range strings.Lines(text[max(0, len(text)-proseWindow):]) {
		if codeLine(line) || codeSyntax(line) {
			return true
		}
	}
	return false
}

// inBlockComment reports whether the document's recent text leaves a block
// comment or a triple-quoted string open.
func inBlockComment(doc string) bool {
	w := doc[max(0, len(doc)-proseWindow):]
	return strings.Count(w, "/*") > strings.Count(w, "*/") || strings.Count(w, `"""`)%2 == 1 || strings.Count(w, "\x27\x27\x27")%2 == 1
}

func (f *codeFormat) site(doc string) site {
	s := f.lineSite(doc)
	s.docFenced, s.inFence, s.fence = f.docFenced, f.fence.open(), f.fence
	return s
}

// breaks: any line may be a line of prose, code or Markdown.
func (l *lineDoc) breaks(doc, line, after string) bool { return false }

func (l *lineDoc) lineBreak(doc, t string, last bool) (bool, bool) { return false, false }

// endBreaks: nor after the end.
func (l *lineDoc) endBreaks(doc, body, line string) bool { return false }

// codeSyntax reports whether a line reads as code rather than a remark: a
// comment, a call or a selector, a statement or element that goes on
// ("foo(", "a,").
func codeSyntax(line string) bool {
	s := strings.TrimSpace(line)
	for _, c := range []string{"//", "#", "/*", "* ", "*/", "--", "<!--", `"""`, "'''", "%"} {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	if strings.HasSuffix(s, ",") || strings.HasSuffix(s, "(") || strings.HasSuffix(s, `\`) {
		return true
	}
	for i := 1; i+1 < len(s); i++ {
		call := s[i] == '(' && isWordByte(s[i-1])
		selector := s[i] == '.' && isWordByte(s[i-1]) && s[i+1] >= 'a' && s[i+1] <= 'z'
		if call || selector {
			return true
		}
	}
	return false
}

// inComment reports whether a cut line of code opened a line comment or a
// docstring (Python's `"""`), where prose goes on.
func inComment(partial string) bool {
	s := strings.TrimLeft(partial, " \t")
	for _, c := range []string{"//", "#", "/*", "* ", "--", "%", ";", `"""`, "'''"} {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	return false
}
