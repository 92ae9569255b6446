package merge

import "strings"

// markdownFormat is Markdown: it tracks code fences (a fence line inside one
// is text) and the current table's header, which a continuation may repeat.
type markdownFormat struct {
	lineDoc
	fence       fenceOpen
	prevLine    string
	tableHeader string
	inTable     bool
}

func (f *markdownFormat) traits() traits {
	t := lineTraits()
	t.fences = fenceRules{names: []string{"markdown", "md"}, tracked: true, lineStart: wrapNamed, answer: wrapNamed}
	t.blank.markers = markersEmphasis
	t.lead = markdownRestart
	t.syntax, t.markup, t.heading = markdownSyntax, markdownMarkup, markdownHeading
	t.endBlanks = true
	return t
}

func (f *markdownFormat) observe(doc string, from int) {
	region, _ := f.advance(doc, from)
	for len(region) > 0 {
		i := strings.IndexByte(region, '\n')
		f.line(region[:i])
		region = region[i+1:]
	}
}

func (f *markdownFormat) line(line string) {
	line = strings.TrimSuffix(line, "\r")
	f.fence.step(line)
	pipe := strings.IndexByte(line, '|') >= 0
	switch {
	case f.fence.open():
	case f.prevLine != "" && isDelimiterRow(line):
		if !isHeader(f.tableHeader, f.prevLine, line) {
			f.tableHeader = f.prevLine + "\n" + line + "\n"
		}
		f.inTable = true
	case !pipe:
		f.inTable = false
	}
	// A line of the document: it stays as it is while the document lives.
	if pipe {
		f.prevLine = line
	} else {
		f.prevLine = ""
	}
}

func (f *markdownFormat) site(doc string) site {
	s := f.lineSite(doc)
	s.docFenced, s.inFence, s.fence = true, f.fence.open(), f.fence
	return s
}

// stripStructure removes a table header the continuation repeats before the
// row in progress.
func (f *markdownFormat) stripStructure(doc, t string) (string, string) {
	p := doc[f.lineStart:]
	prev := doc[strings.LastIndexByte(doc[:max(0, f.lineStart-1)], '\n')+1:]
	if f.tableHeader != "" && (f.inTable || strings.HasPrefix(p, "|")) &&
		strings.HasPrefix(t, f.tableHeader) && !strings.HasSuffix(doc, f.tableHeader) &&
		!(p != "" && strings.HasPrefix(f.tableHeader, p) && !strings.HasPrefix(t[len(f.tableHeader):], p)) &&
		!(f.lineStart > 0 && strings.HasPrefix(f.tableHeader, prev)) {
		// (A cut inside a new table's header, which the continuation
		// repeats or starts over, is no repeated header: a repeated
		// one is followed by the row in progress started over.)
		return t[len(f.tableHeader):], "table header"
	}
	return t, ""
}

// verify holds a table's delimiter row to its header: the row completed
// at the join, when it is one right after a row of cells, has as many
// cells as that row (GitHub's tables require it, and a model that goes on
// or starts the row over leaves it so). Nothing else in Markdown can be
// checked at a join.
func (f *markdownFormat) verify(doc, rest string, last bool) bool {
	if f.fence.open() || f.lineStart < 1 {
		return true
	}
	first, _, complete := strings.Cut(rest, "\n")
	if !complete && !last {
		return true
	}
	// (prevLine is the document's last complete line when it holds a
	// pipe, the row before the one completed here.)
	line := doc[f.lineStart:] + strings.TrimSuffix(first, "\r")
	if f.prevLine == "" || isDelimiterRow(f.prevLine) || !strings.Contains(line, "|") || !isDelimiterRow(line) {
		return true
	}
	return tableCells(line) == tableCells(f.prevLine)
}

// tableCells counts the cells of a table row: its pipes, an escaped one
// aside, less the row's leading and trailing pipe, plus one.
func tableCells(row string) int {
	row = strings.TrimSpace(row)
	n := 1
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\':
			i++
		case row[i] == '|' && i > 0 && i < len(row)-1:
			n++
		}
	}
	return n
}

// isHeader reports whether h is prev + "\n" + delim + "\n".
func isHeader(h, prev, delim string) bool {
	return len(h) == len(prev)+len(delim)+2 && strings.HasPrefix(h, prev) && h[len(prev)] == '\n' &&
		h[len(prev)+1:len(h)-1] == delim && h[len(h)-1] == '\n'
}

// isDelimiterRow reports whether line is a Markdown table's |---|:---:| row.
func isDelimiterRow(line string) bool {
	s := strings.TrimSpace(line)
	if !strings.Contains(s, "-") || !strings.Contains(s, "|") && !strings.HasPrefix(s, "-") {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '|', '-', ':', ' ', '\t':
		default:
			return false
		}
	}
	return true
}

// markdownRestart judges the Markdown partial lines leadRestart cannot
// judge by line starts alone, reporting whether it decided. A table row
// keeps the number of cells of the row before it; a heading marker is never
// followed by another; a list or quote marker with its space followed by
// another is a nested block, and lengthening a run of marker characters
// ("**" + "** x", "```" + "```") is how emphasis and fences grow: both are
// left alone.
func markdownRestart(doc string, lineStart int, partial, first, _ string) (bool, bool) {
	if partial[0] == '|' {
		prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
		prev := strings.TrimRight(doc[prevStart:max(prevStart, lineStart-1)], " \t\r")
		if strings.HasPrefix(prev, "|") {
			n := strings.Count(prev, "|")
			keep, cut := strings.Count(partial+first, "|"), strings.Count(first, "|")
			return cut == n && keep != n, true
		}
	}
	if strings.Trim(partial, "#") == "" || strings.TrimRight(partial, "#") == "" || strings.Trim(strings.TrimRight(partial, " "), "#") == "" && strings.HasSuffix(partial, " ") {
		// "###" + "### x" makes a heading of level six, "# " + "# x" a
		// heading that starts with "#": when the document has headings
		// like the restart's and none like that.
		lvl := len(strings.TrimLeft(first, "#"))
		lvl = len(first) - lvl
		if lvl == 0 || lvl >= len(first) || first[lvl] != ' ' {
			return false, true
		}
		if strings.HasSuffix(partial, " ") {
			return true, true
		}
		// Lengthening the heading's marker: a restart only when that would
		// jump two levels past every heading the document has written
		// ("###" + "### x" after levels 1 to 3); "#" + "# x" may well be
		// the first level-two heading.
		top := 0
		for rest := doc[max(0, lineStart-leadWindow):lineStart]; rest != ""; {
			line := rest
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = ""
			}
			if h := len(line) - len(strings.TrimLeft(line, "#")); h > 0 && h < len(line) && line[h] == ' ' {
				top = max(top, h)
			}
		}
		return top > 0 && len(partial)+lvl > top+1, true
	}
	last := partial[len(partial)-1]
	if isSpace(last) || last == first[0] && strings.IndexByte("#*-_=`~>+", last) >= 0 {
		return false, true
	}
	return false, false
}

// markdownSyntax reports whether a line opens a Markdown block other than a
// paragraph: a heading, a quote, a list item, a table row, a fence, an
// indented code line. Emphasis ("**Note:**") is a paragraph's.
func markdownSyntax(line string) bool {
	if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
		return true
	}
	s := strings.TrimLeft(line, " ")
	if s == "" {
		return false
	}
	switch s[0] {
	case '#', '>', '|':
		return true
	case '-', '+', '*':
		return len(s) > 1 && s[1] == ' '
	}
	if _, ok := fenceLine(s); ok {
		return true
	}
	_, _, size := orderedMarker(s)
	return size > 0
}

// markdownHeading returns the level of a Markdown heading line: an ATX
// heading ("## Usage" is 2), or a setext underline under a line of text
// (above), which makes that line one ("=====" 1, "-----" 2); 0 for any
// other line.
func markdownHeading(above, line string) int {
	s := strings.TrimRight(line, " \t\r")
	if n := len(s) - len(strings.TrimLeft(s, " ")); n > 3 {
		return 0
	}
	s = strings.TrimLeft(s, " ")
	if h := strings.TrimLeft(s, "#"); len(s)-len(h) >= 1 && len(s)-len(h) <= 6 {
		if h == "" || h[0] == ' ' || h[0] == '\t' {
			return len(s) - len(h)
		}
		return 0
	}
	if s == "" || strings.Trim(s, s[:1]) != "" || s[0] != '=' && s[0] != '-' {
		return 0
	}
	if a := strings.TrimSpace(above); a == "" || markdownSyntax(a) {
		return 0
	}
	if s[0] == '=' {
		return 1
	}
	return 2
}

// markdownMarkup reports whether a line has Markdown's inline markup: a
// link ("[text](url)") or a code span ("`x`").
func markdownMarkup(line string) bool {
	if i := strings.Index(line, "]("); i > 0 && strings.LastIndexByte(line[:i], '[') >= 0 && strings.IndexByte(line[i:], ')') > 0 {
		return true
	}
	i := strings.IndexByte(line, '`')
	return i >= 0 && strings.IndexByte(line[i+1:], '`') > 0
}
