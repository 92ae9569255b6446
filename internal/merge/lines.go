package merge

import (
	"strconv"
	"strings"
)

// lineFormat merges line-oriented documents: text, code, markdown and diffs.
// Joins are byte-exact (no space is ever inserted, whitespace at the cut is
// kept); the kinds differ in the structure they track: fences for code and
// Markdown, the current table header for Markdown, file and hunk headers for
// diffs.
type lineFormat struct {
	kind string

	lines     int // newlines so far
	lineStart int // offset of the last (incomplete) line
	scanned   int // complete lines before this offset were inspected

	// code and markdown
	docFenced bool
	inFence   bool

	// markdown tables
	prevLine    string
	tableHeader string
	inTable     bool

	// diffs
	fileHeader    string // from "diff --git" (or "---") through "+++"
	minimalHeader string // the "---" and "+++" lines alone
	// The file header being read: where it starts in the document (-1
	// when none), whether it has its "---" line yet and where that starts.
	pendingStart int
	pendingMinus bool
	minusStart   int
	hunkHeader   string
	oldLeft      int
	newLeft      int
	hunks        int
	// loose: the hunks' line counts have not matched their lines (a
	// hand-edited patch), so they cannot verify a join.
	loose    bool
	hunkEnds bool // the line before ended a hunk
}

func (f *lineFormat) observe(doc string, from int) {
	s := doc[from:]
	f.lines += strings.Count(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		f.lineStart = from + i + 1
	}
	if from == 0 && (f.kind == "code" || f.kind == "markdown") {
		if i := strings.IndexByte(doc, '\n'); i >= 0 {
			if _, ok := fenceLine(doc[:i]); ok {
				f.docFenced = true
			}
		}
		if f.kind == "markdown" {
			f.docFenced = true
		}
	}
	if f.kind == "text" {
		f.scanned = f.lineStart
		return
	}
	region := doc[f.scanned:f.lineStart]
	f.scanned = f.lineStart
	if f.kind == "code" {
		f.scanFences(region)
		return
	}
	at := f.scanned - len(region)
	for len(region) > 0 {
		i := strings.IndexByte(region, '\n')
		line := region[:i]
		region = region[i+1:]
		switch f.kind {
		case "markdown":
			f.markdownLine(line)
		case "diff":
			f.diffLine(doc, at, line)
		}
		at += i + 1
	}
}

// scanFences flips the fence state for each fence line in region (complete
// lines only), finding candidates with a substring search so that code
// without fences costs almost nothing.
func (f *lineFormat) scanFences(region string) {
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
			f.inFence = !f.inFence
		}
		region = region[i+le+1:]
	}
}

func (f *lineFormat) markdownLine(line string) {
	line = strings.TrimSuffix(line, "\r")
	if _, ok := fenceLine(line); ok {
		f.inFence = !f.inFence
	}
	pipe := strings.IndexByte(line, '|') >= 0
	switch {
	case f.inFence:
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

// maybeFence reports whether line could be a fence line: at most three
// spaces, then a backtick or a tilde. It is fenceLine's quick first test.
func maybeFence(line string) bool {
	i := 0
	for i < len(line) && i < 4 && line[i] == ' ' {
		i++
	}
	return i < len(line) && (line[i] == '`' || line[i] == '~')
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

// diffLine follows a diff's structure line by line; line is doc[at:] up to
// its newline. The headers are kept as spans of the document, which stays
// as it is while it lives.
func (f *lineFormat) diffLine(doc string, at int, line string) {
	if f.oldLeft > 0 || f.newLeft > 0 {
		switch {
		case strings.HasPrefix(line, "\\"):
		case strings.HasPrefix(line, "+"):
			f.newLeft--
		case strings.HasPrefix(line, "-"):
			f.oldLeft--
		default:
			if l := strings.TrimSuffix(line, "\r"); l != "" && l[0] != ' ' {
				f.loose = true
			}
			f.oldLeft--
			f.newLeft--
		}
		f.hunkEnds = f.oldLeft <= 0 && f.newLeft <= 0
		return
	}
	if f.hunkEnds && line != "" && (line[0] == ' ' || line[0] == '+' && !strings.HasPrefix(line, "+++ ") || line[0] == '-' && !strings.HasPrefix(line, "--- ")) {
		// A hunk line after the hunk ended: its counts were short.
		f.loose = true
	}
	f.hunkEnds = false
	end := at + len(line) + 1
	switch {
	case strings.HasPrefix(line, "diff "):
		f.pendingStart, f.pendingMinus = at, false
	case strings.HasPrefix(line, "--- "):
		if f.pendingStart < 0 || f.pendingMinus {
			f.pendingStart = at
		}
		f.pendingMinus, f.minusStart = true, at
		f.minimalHeader = doc[at:end]
	case strings.HasPrefix(line, "+++ "):
		if f.pendingStart < 0 {
			f.pendingStart = at
		}
		f.fileHeader = doc[f.pendingStart:end]
		if f.pendingMinus && f.minusStart+len(f.minimalHeader) == at {
			f.minimalHeader = doc[f.minusStart:end]
		} else {
			f.minimalHeader += doc[at:end]
		}
		f.pendingStart, f.pendingMinus = -1, false
	case strings.HasPrefix(line, "@@ "):
		f.hunkHeader = doc[at:end]
		f.oldLeft, f.newLeft = hunkCounts(line)
		f.hunks++
	}
}

// hunkCounts parses "@@ -a,b +c,d @@" into b and d (1 when omitted).
func hunkCounts(line string) (int, int) {
	// The second and third fields, without splitting the line.
	field := func(s string) (string, string) {
		s = strings.TrimLeft(s, " \t")
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			return s, ""
		}
		return s[:i], s[i:]
	}
	_, rest := field(line)
	a, rest := field(rest)
	b, _ := field(rest)
	if a == "" || b == "" {
		return 0, 0
	}
	count := func(s string) int {
		if i := strings.IndexByte(s, ','); i >= 0 {
			n, err := strconv.Atoi(s[i+1:])
			if err != nil {
				return 0
			}
			return n
		}
		return 1
	}
	return count(a), count(b)
}

func (f *lineFormat) restarts(out []int, doc string) []int { return append(out, f.lineStart) }

func (f *lineFormat) chatter(doc string) chatterCtx {
	return chatterCtx{
		format:      f.kind,
		docFenced:   f.docFenced,
		inFence:     f.inFenceAt(doc),
		atLineStart: doc == "" || strings.HasSuffix(doc, "\n"),
		partial:     doc[f.lineStart:],
	}
}

// inFenceAt is the fence state at the end of doc, including an incomplete
// last line that is itself a fence.
func (f *lineFormat) inFenceAt(doc string) bool {
	return f.inFence
}

func (f *lineFormat) stripStructure(doc, t string) (string, string) {
	switch f.kind {
	case "markdown":
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
	case "diff":
		note := ""
		for _, h := range []string{f.fileHeader, f.minimalHeader} {
			if h != "" && strings.HasPrefix(t, h) && !strings.HasSuffix(doc, h) {
				t, note = t[len(h):], "diff file header"
				break
			}
		}
		if f.hunkHeader != "" && strings.HasPrefix(t, f.hunkHeader) && !strings.HasSuffix(doc, f.hunkHeader) {
			t = t[len(f.hunkHeader):]
			note = strings.TrimPrefix(note+", hunk header", ", ")
		}
		return t, note
	}
	return t, ""
}

func (f *lineFormat) adjust(doc, rest string, last bool) (string, string) { return rest, "" }

// verify checks, in a diff, the lines of a hunk the join falls in: each
// must start as a hunk line does (" ", "+", "-", "\\"; an empty line is
// tolerated as context), unless a header shows the hunk ended before its
// counts said. Other kinds have nothing to check.
func (f *lineFormat) verify(doc, rest string, last bool) bool {
	if f.kind != "diff" || f.loose || f.oldLeft <= 0 && f.newLeft <= 0 {
		return true
	}
	oldLeft, newLeft := f.oldLeft, f.newLeft
	line, s := doc[f.lineStart:], rest
	for k := 0; k < 3 && (oldLeft > 0 || newLeft > 0); k++ {
		e := strings.IndexByte(s, '\n')
		if e < 0 && !last {
			return true // the line is still being written
		}
		if e < 0 {
			e = len(s)
		}
		l := strings.TrimSuffix(line+s[:e], "\r")
		switch {
		case diffHeaderLine(l):
			return true // the hunk ended before its counts said
		case l == "":
			if e == len(s) {
				return true
			}
			oldLeft--
			newLeft--
		case l[0] == '\\':
		case l[0] == '+':
			newLeft--
		case l[0] == '-':
			oldLeft--
		case l[0] == ' ':
			oldLeft--
			newLeft--
		default:
			return false
		}
		if e == len(s) {
			return true
		}
		line, s = "", s[e+1:]
	}
	return true
}

func (f *lineFormat) point(doc string) string { return "line:" + strconv.Itoa(f.lines+1) }

// tokens: token alignment suits prose; code, diffs and Markdown (examples,
// tables, lists of links) repeat their own token sequences too often for a
// fuzzy match to be evidence. A re-wrapped repeat in Markdown is still found
// by the whitespace-insensitive match.
func (f *lineFormat) tokens() bool { return f.kind == "text" }

func (f *lineFormat) finish(res *Result) {
	if f.kind == "diff" {
		res.RecordCount = f.hunks
		return
	}
	n := f.lines
	if res.Content != "" && !strings.HasSuffix(res.Content, "\n") {
		n++
	}
	res.RecordCount = n
}

// diffHeaderLine reports whether line is one of a diff's header lines: a
// hunk or file header, or a git extended header.
func diffHeaderLine(line string) bool {
	for _, h := range []string{"@@ ", "diff ", "--- ", "+++ ", "index ", "new file mode", "deleted file mode", "old mode", "new mode",
		"similarity index", "dissimilarity index", "rename ", "copy ", "Binary files", "GIT binary patch", "Only in "} {
		if strings.HasPrefix(line, h) {
			return true
		}
	}
	return false
}
