package merge

import (
	"strconv"
	"strings"
)

// diffFormat is a unified diff: it follows file and hunk headers and the
// hunks' line counts, which verify the lines around a join and tell a
// restated header from the document's next one.
type diffFormat struct {
	lineDoc
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
	// binary: the file header in progress announced binary content
	// ("GIT binary patch", "Binary files"), whose lines are no headers.
	binary bool
	// last reads the last hunk on its own, as git does: a header ends a
	// hunk short of its counts (which the reading above takes for hunk
	// lines, as the benchmark's restated structure does). Where another
	// hunk's counts proved loose, the last one's may still hold exactly.
	last lastHunk
}

// lastHunk is the last hunk's counts as git reads them.
type lastHunk struct {
	old, new int
	// exact: the hunk's counts ran out together on its last line, with
	// hunk lines only.
	exact bool
}

// step reads one line of the diff. (It runs on every line: the first
// byte decides before any prefix is compared.)
func (h *lastHunk) step(line string) {
	if line != "" && line[0] == '@' && strings.HasPrefix(line, "@@ ") {
		h.old, h.new = hunkCounts(line)
		h.exact = true
		return
	}
	if line != "" && line[0] == 'd' && strings.HasPrefix(line, "diff ") {
		h.old, h.new, h.exact = 0, 0, false
		return
	}
	if h.old <= 0 && h.new <= 0 {
		if hunkLineBeyond(line) {
			h.exact = false // a hunk line beyond the counts
		}
		return
	}
	if !countHunkLine(line, &h.old, &h.new) {
		h.old, h.new, h.exact = 0, 0, false
	}
	if h.old < 0 || h.new < 0 {
		h.exact = false
	}
}

// complete reports whether the last hunk ran out its counts exactly.
func (h lastHunk) complete() bool { return h.exact && h.old == 0 && h.new == 0 }

func newDiffFormat() *diffFormat { return &diffFormat{pendingStart: -1} }

func (f *diffFormat) traits() traits {
	t := lineTraits()
	t.fences = fenceRules{names: []string{"diff"}, lineStart: wrapUnlessFenced, answer: wrapAny}
	t.blank.leads = false
	t.lead = diffRestart
	t.keepsHeader = diffHeaderKept
	t.syntax = diffSyntax
	t.endBlanks = true // a binary patch ends with a blank line
	return t
}

func (f *diffFormat) observe(doc string, from int) {
	region, at := f.advance(doc, from)
	for len(region) > 0 {
		i := strings.IndexByte(region, '\n')
		f.line(doc, at, region[:i])
		region = region[i+1:]
		at += i + 1
	}
}

func (f *diffFormat) site(doc string) site { return f.lineSite(doc) }

// line follows a diff's structure line by line; line is doc[at:] up to its
// newline. The headers are kept as spans of the document, which stays as
// it is while it lives.
func (f *diffFormat) line(doc string, at int, line string) {
	inHunk := f.oldLeft > 0 || f.newLeft > 0
	if inHunk || !strings.HasPrefix(line, "@@ ") {
		f.last.step(line) // (a header the reading below parses starts it)
	}
	if inHunk {
		f.hunkLine(line)
		return
	}
	if f.hunkEnds && hunkLineBeyond(line) {
		// A hunk line after the hunk ended: its counts were short.
		f.loose = true
	}
	f.hunkEnds = false
	end := at + len(line) + 1
	switch {
	case strings.HasPrefix(line, "diff "):
		f.pendingStart, f.pendingMinus, f.binary = at, false, false
	case binaryHeader(line):
		f.binary = true
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
		f.last = lastHunk{old: f.oldLeft, new: f.newLeft, exact: true}
	}
}

// countHunkLine counts one line of a hunk against its counts, old and
// new: an added, removed or context line (an empty line is context). It
// reports false, counting nothing, for a line no hunk line starts like.
func countHunkLine(line string, old, new *int) bool {
	switch {
	case strings.HasPrefix(line, "\\"):
	case strings.HasPrefix(line, "+"):
		*new--
	case strings.HasPrefix(line, "-"):
		*old--
	case line == "" || line == "\r" || line[0] == ' ':
		*old--
		*new--
	default:
		return false
	}
	return true
}

// hunkLine counts one line of a hunk against the hunk's line counts; a
// line no hunk line starts like counts as context, and the counts are
// loose.
func (f *diffFormat) hunkLine(line string) {
	if !countHunkLine(line, &f.oldLeft, &f.newLeft) {
		f.loose = true
		f.oldLeft--
		f.newLeft--
	}
	f.hunkEnds = f.oldLeft <= 0 && f.newLeft <= 0
}

// lineBreak reads a line break after a preamble by the line counts of
// the hunk the document was cut in (or whose header it was cut after):
// kept, the break ends the cut line and the text's first line is a hunk
// line of its own; dropped, the two are one line. Where the hunk ends
// within the text, one reading runs the counts out exactly at its end and
// the other does not. Not once a hunk's counts proved loose.
func (f *diffFormat) lineBreak(doc, t string, last bool) (keep, decided bool) {
	if f.loose || f.binary {
		return false, false
	}
	cut, ok := cutLineBreak(t)
	if !ok {
		return false, false
	}
	partial := doc[f.lineStart:]
	k := hunkEnd(f.oldLeft, f.newLeft, f.hunkEnds, partial, t, last)
	c := hunkEnd(f.oldLeft, f.newLeft, f.hunkEnds, partial, cut, last)
	if k != c && k != hunkOpen && c != hunkOpen {
		return k == hunkExact, true
	}
	// A git file header names one path twice, unless a rename follows:
	// the reading that makes its two paths one is the header's.
	if strings.HasPrefix(partial, "diff --git ") {
		first, _, _ := strings.Cut(cut, "\n")
		if apart, glued := samePaths(partial), samePaths(partial+strings.TrimRight(first, "\r")); apart != glued {
			return apart, true
		}
	}
	// A hunk header's section heading is set apart by a space: a text
	// that starts otherwise after a whole header starts the hunk's first
	// line.
	if hunkHeaderLine(partial) && strings.HasSuffix(partial, "@@") && cut != "" && !isSpace(cut[0]) {
		return true, true
	}
	// Inside a hunk, a text that starts as an added or removed line does
	// so after a line break, unless the document glues such a byte to
	// such a word ("the" + "-changes").
	if (f.oldLeft > 0 || f.newLeft > 0) && hunkLineBeyond(partial) && cut != "" && (cut[0] == '+' || cut[0] == '-') &&
		!gluePlausible(tail(doc, leadWindow), cut) {
		return true, true
	}
	return false, false
}

// hunkFit is how a hunk's lines fit its counts.
type hunkFit int

const (
	// hunkOpen: the text ends before the hunk does (or no hunk is open).
	hunkOpen hunkFit = iota
	// hunkExact: the counts run out together on a hunk line, and no hunk
	// line follows.
	hunkExact
	// hunkOff: a line no hunk has comes inside it, the counts run out
	// apart, or hunk lines go on past them.
	hunkOff
)

// hunkEnd follows the hunk in progress (old and new lines left) through
// partial, the document's cut line, completed by s and the lines after it;
// a cut line that completes a hunk header opens its hunk. ended: the
// document's last line ended a hunk, so the line after it is a header, not
// another hunk line. last: s ends the document, and with it every hunk.
func hunkEnd(old, new int, ended bool, partial, s string, last bool) hunkFit {
	line, rest, ok := strings.Cut(partial+s, "\n")
	if old <= 0 && new <= 0 {
		l := strings.TrimSuffix(line, "\r")
		switch {
		case !ok:
			return hunkOpen
		case ended && partial == "" && (l == "" || hunkLineBeyond(l)):
			return hunkOff
		case ended && partial == "" && diffHeaderLine(l):
			return hunkExact
		case !hunkHeaderLine(l):
			return hunkOpen
		}
		old, new = hunkCounts(line)
		line, rest, ok = strings.Cut(rest, "\n")
	}
	for ; ok || last && line != ""; line, rest, ok = strings.Cut(rest, "\n") {
		if !countHunkLine(line, &old, &new) || old < 0 || new < 0 {
			return hunkOff
		}
		if old == 0 && new == 0 {
			next, _, _ := strings.Cut(rest, "\n")
			if hunkLineBeyond(next) || extendedHeaderLine(next) {
				return hunkOff
			}
			return hunkExact
		}
		if !ok {
			break
		}
	}
	if last {
		return hunkOff // the document ends inside the hunk
	}
	return hunkOpen
}

// extendedHeaderLine reports whether line is one of git's extended
// header lines, which follow a "diff --git" line (or one another), never a
// hunk.
func extendedHeaderLine(line string) bool { return hasAnyPrefix(line, extendedHeaders) }

// hasAnyPrefix reports whether line starts with one of prefixes.
func hasAnyPrefix(line string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// samePaths reports whether a "diff --git a/P b/P" line names one path
// twice.
func samePaths(line string) bool {
	rest := strings.TrimPrefix(line, "diff --git ")
	n := len(rest) / 2
	return len(rest)%2 == 1 && rest[n] == ' ' && strings.HasPrefix(rest, "a/") && strings.HasPrefix(rest[n+1:], "b/") && rest[2:n] == rest[n+3:]
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

// stripStructure removes the file header and the hunk header a
// continuation restates before the line in progress. Not a hunk header
// that starts with the document's cut line: the continuation starts that
// line over ("@@ -5" + "@@ -5,16 +11,10 @@", a hunk the diff wrote before
// too), where going on after the header would not make the cut line a
// hunk header ("@@ -0,0 +1," + "@@ -0,0 +1,62 @@\n" + "5 @@" is the last
// header restated, and so is one the cut line's header follows whole).
// (A file header that starts with the cut line may be the
// last file's restated: "--- /dev/nu" + "--- /dev/null\n+++ b/other.go".)
func (f *diffFormat) stripStructure(doc, t string) (string, string) {
	note := ""
	cut := doc[f.lineStart:]
	restarts := func(h string) bool {
		after, _, _ := strings.Cut(t[len(h):], "\n")
		return strings.HasPrefix(cut, "@@ -") && len(cut) > len("@@ -") && strings.HasPrefix(h, cut) &&
			!hunkHeaderLine(cut+after) && !hunkHeaderLine(after)
	}
	for _, h := range []string{f.fileHeader, f.minimalHeader} {
		if h != "" && strings.HasPrefix(t, h) && !strings.HasSuffix(doc, h) {
			t, note = t[len(h):], "diff file header"
			break
		}
	}
	if f.hunkHeader != "" && strings.HasPrefix(t, f.hunkHeader) && !strings.HasSuffix(doc, f.hunkHeader) && !restarts(f.hunkHeader) {
		t = t[len(f.hunkHeader):]
		note = strings.TrimPrefix(note+", hunk header", ", ")
	}
	return t, note
}

// verify checks the lines of a hunk the join falls in: each must start as a
// hunk line does (" ", "+", "-", "\\"; an empty line is tolerated as
// context), unless a header shows the hunk ended before its counts said.
func (f *diffFormat) verify(doc, rest string, last bool) bool {
	if f.oldLeft <= 0 && f.newLeft <= 0 && f.pendingStart >= 0 && !f.binary {
		return headerHolds(doc[f.lineStart:], rest, last)
	}
	if f.loose || f.oldLeft <= 0 && f.newLeft <= 0 {
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

// headerHolds reports whether the lines a join makes inside a file's
// header (after its "diff" or "---" line, before its first hunk) are
// header lines, as a file header's lines all are: the cut line completed
// with rest, and the line after it.
func headerHolds(line, rest string, last bool) bool {
	s := rest
	for k := 0; k < 2; k++ {
		e := strings.IndexByte(s, '\n')
		if e < 0 && !last {
			// The line is still being written: only its start tells.
			return mayBeHeader(line + s)
		}
		if e < 0 {
			e = len(s)
		}
		l := strings.TrimSuffix(line+s[:e], "\r")
		if l == "" && e == len(s) {
			return true
		}
		if !diffHeaderLine(l) || !headerFields(l) {
			return false
		}
		if e == len(s) || strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "+++ ") || binaryHeader(l) {
			// (Binary content follows a binary header.)
			return true
		}
		line, s = "", s[e+1:]
	}
	return true
}

// headerFields reports whether a git extended header line that carries one
// field holds nothing after it: a mode ("new file mode 100644", "old mode
// 0777"), a similarity ("similarity index 100%") or the blob names of an
// index line (with a mode at most). Other header lines pass.
func headerFields(l string) bool {
	for _, h := range [...]string{"new file mode ", "deleted file mode ", "old mode ", "new mode "} {
		if v, ok := strings.CutPrefix(l, h); ok {
			return octalMode(v)
		}
	}
	for _, h := range [...]string{"similarity index ", "dissimilarity index "} {
		if v, ok := strings.CutPrefix(l, h); ok {
			n, pct := strings.CutSuffix(v, "%")
			return pct && n != "" && len(n) <= 3 && strings.Trim(n, "0123456789") == ""
		}
	}
	if v, ok := strings.CutPrefix(l, "index "); ok {
		blobs, mode, _ := strings.Cut(v, " ")
		a, b, two := strings.Cut(blobs, "..")
		hex := func(x string) bool { return x != "" && strings.Trim(x, "0123456789abcdef") == "" }
		return two && hex(a) && hex(b) && (mode == "" || octalMode(mode))
	}
	return true
}

// octalMode reports whether v is a file mode: three to six octal digits
// ("100644", "0755").
func octalMode(v string) bool {
	return len(v) >= 3 && len(v) <= 6 && strings.Trim(v, "01234567") == ""
}

// validate counts hunks.
func (f *diffFormat) validate(res *Result) { res.RecordCount = f.hunks }

// diffHeaderLine reports whether line is one of a diff's header lines: a
// hunk or file header, or a git extended header.
func diffHeaderLine(line string) bool { return hasAnyPrefix(line, diffHeaders) }

// hunkHeaderLine reports whether line reads as a hunk header: "@@ -a,b
// +c,d @@", the counts optional.
func hunkHeaderLine(line string) bool {
	rest, ok := strings.CutPrefix(line, "@@ -")
	plus := strings.Index(rest, " +")
	return ok && plus > 0 && strings.Contains(rest[plus:], " @@")
}

// diffHeaders are how a diff's header lines start.
var diffHeaders = append([]string{"@@ ", "diff ", "--- ", "+++ ", "Binary files", "GIT binary patch", "Only in "}, extendedHeaders...)

// extendedHeaders are how git's extended header lines start.
var extendedHeaders = []string{"index ", "new file mode", "deleted file mode", "old mode", "new mode",
	"similarity index", "dissimilarity index", "rename ", "copy "}

// binaryHeader reports whether a header line announces binary content,
// whose lines that follow are no diff's.
func binaryHeader(line string) bool {
	return strings.HasPrefix(line, "GIT binary patch") || strings.HasPrefix(line, "Binary files")
}

// hunkLineBeyond reports whether a line read after a hunk's counts ran out
// is one more of its lines (added, removed or context), not a header: the
// counts were short.
func hunkLineBeyond(line string) bool {
	return line != "" && (line[0] == ' ' || line[0] == '+' && !strings.HasPrefix(line, "+++ ") || line[0] == '-' && !strings.HasPrefix(line, "--- "))
}

// mayBeHeader reports whether a line still being written may become a
// header line: it starts one, or is the start of one.
func mayBeHeader(line string) bool {
	for _, h := range diffHeaders {
		if strings.HasPrefix(line, h) || strings.HasPrefix(h, line) {
			return true
		}
	}
	return false
}

// diffHeaderKept reports whether a diff's partial line at lineStart, kept,
// makes the header line that the line before calls for ("--- " after a
// git extended header line, "+++ " after "--- ", "@@ " after "+++ ") and
// starting it over would not.
func diffHeaderKept(doc string, lineStart int, next string) bool {
	prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
	prev := doc[prevStart:max(prevStart, lineStart-1)]
	want := ""
	switch {
	case strings.HasPrefix(prev, "--- "):
		want = "+++ "
	case strings.HasPrefix(prev, "+++ "):
		want = "@@ "
	case strings.HasPrefix(prev, "index "), strings.HasPrefix(prev, "diff "), strings.HasPrefix(prev, "new file mode"),
		strings.HasPrefix(prev, "deleted file mode"), strings.HasPrefix(prev, "old mode"), strings.HasPrefix(prev, "new mode"):
		want = "--- "
	default:
		return false
	}
	return strings.HasPrefix(doc[lineStart:]+next, want) && !strings.HasPrefix(next, want)
}

// diffRestart decides a bare partial line of a diff: a hunk line cut in its
// indentation by the indentation closer to the line before's, and a file or
// hunk header started over, which continuing would double ("---" +
// "--- a/x", "+++ " + "+++ b/x", "@@" + "@@ -1").
func diffRestart(doc string, lineStart int, partial, first, next string) (bool, bool) {
	if strings.IndexByte(" +-", partial[0]) >= 0 && strings.Trim(partial[1:], " \t") == "" && next[0] == partial[0] {
		prevStart := strings.LastIndexByte(doc[:max(0, lineStart-1)], '\n') + 1
		prev := doc[prevStart:max(prevStart, lineStart-1)]
		if prev != "" && strings.IndexByte(" +-", prev[0]) >= 0 {
			want := indentWidth(prev[1:])
			cutInd := indentWidth(first[1:])
			keepInd := indentWidth(partial[1:] + first)
			if c, k := abs(cutInd-want), abs(keepInd-want); c != k {
				return c < k, true
			}
		}
	}
	for _, m := range []string{"--- ", "+++ ", "@@ "} {
		if strings.HasPrefix(first, m) && strings.HasPrefix(m, strings.TrimRight(partial, " ")) {
			return true, true
		}
	}
	return false, false
}

// diffSyntax reports whether a line reads as a diff's own: a hunk line or a
// header.
func diffSyntax(line string) bool {
	return line != "" && strings.IndexByte(" +-@\\", line[0]) >= 0 || diffHeaderLine(line)
}

// ending returns the diff's state once after is appended to doc, leaving
// f as it is. It reads only the window from the first offset the state
// holds (the line in progress, a file header being read), so asking costs
// the last chunk's length, not the document's.
func (f *diffFormat) ending(doc, after string) diffFormat {
	end := *f
	if after == "" {
		return end
	}
	base := min(end.scanned, end.lineStart)
	if end.pendingStart >= 0 {
		base = min(base, end.pendingStart)
	}
	if end.pendingMinus {
		base = min(base, end.minusStart)
	}
	shift := func(at *int) {
		if *at >= 0 {
			*at -= base
		}
	}
	shift(&end.scanned)
	shift(&end.lineStart)
	shift(&end.pendingStart)
	shift(&end.minusStart)
	end.observe(doc[base:]+after, len(doc)-base)
	return end
}

// breaks: inside a hunk whose counts hold, every line starts as a hunk line
// does, so a line of prose there breaks the diff; at its start a diff opens
// with a header. Between files, prose may stand (a patch's commit message).
// A cut line that opened a hunk header ("@@ -") is one only if the line
// completes it ("@@ -Here's the rest." is none).
func (f *diffFormat) breaks(doc, line, after string) bool {
	if doc == "" {
		return !diffHeaderLine(line) && !strings.HasPrefix(line, "From ")
	}
	if cut := doc[f.lineStart:]; strings.HasPrefix(cut, "@@") {
		return !hunkHeaderLine(cut + line)
	}
	if f.loose || f.oldLeft <= 0 && f.newLeft <= 0 {
		return false
	}
	l := doc[f.lineStart:] + line
	return l != "" && strings.IndexByte(" +-\\", l[0]) < 0
}

// owesBlankLine: the last hunk is short of exactly one context line, which
// git writes as an empty line when the file's line is empty; its counts
// held so far.
func (f *diffFormat) owesBlankLine(doc, body string) bool {
	end := f.ending(doc, body)
	return !end.loose && end.last.exact && end.last.old == 1 && end.last.new == 1
}

// endBreaks: after a hunk, a sentence is not the diff's: a hunk still short
// of its counts holds only hunk lines, and after the last one is complete
// no line of prose belongs to it (unless the counts proved loose, and the
// last hunk's own counts did not hold exactly either). The last
// chunk's text (body) ends the diff: its state, not doc's, is the end's.
func (f *diffFormat) endBreaks(doc, body, line string) bool {
	end := f.ending(doc, body)
	_, ok := remarkForm(line)
	return ok && (!end.loose || end.last.complete()) && end.hunks > 0 && !diffSyntax(line)
}
