package merge

import (
	"math"
	"strings"
	"unicode/utf8"
)

// blankRules are how a format reads the line break between a preamble and
// the text after it.
type blankRules struct {
	// leads: a line that starts like the cut one (a list item after a list
	// item) is a line of its own. Not in diffs, whose lines all start so.
	leads bool
	// markers is how a run of marker characters glued to a word reads.
	markers markerRule
}

// markerRule reads a run of two marker characters ("**", "--") right
// after a word the document was cut in.
type markerRule int

const (
	// markersAlways: the run starts a line of its own.
	markersAlways markerRule = iota
	// markersEmphasis: unless the document closes emphasis that way
	// (Markdown's "foo bar" + "**"), and when it starts lines that way.
	markersEmphasis
	// markersLineStarts: only when the document starts lines that way
	// (prose: "C" + "++ and Rust" goes on).
	markersLineStarts
)

// blankLineIsNew decides a blank line between a preamble and the text after
// it (r) when the document was cut mid-line: usually it separates the
// remark from text that goes on with the cut line, but it is that text's own
// line break when r could not go on with the line: indentation after text,
// a capital or a line marker right after a sentence's end ("packages." +
// "The"), or a run of marker characters right after a word ("b/README.md"
// + "@@ -1,6", "newname1" + "--- oldname1").
//
// After a complete line the blank line is the text's own when the document
// puts one after lines that start like its last one (headings, say) more
// often than not.
func blankLineIsNew(t string, ctx envCtx) bool {
	if r, ok := cutLineBreak(t); ok && r == "" && ctx.doc != "" {
		// Nothing after it: a model that goes on has something left to
		// write, here the document's last line break.
		return true
	}
	for _, vote := range [...]func(string, envCtx) (bool, bool){formatVote, fenceLineVote, spanVote, itemVote, fenceCloseVote, lengthVote, wordVote, indentVote, languageVote, junctionVote, blockVote, openerVote, gapVote} {
		if keep, decided := vote(t, ctx); decided {
			return keep
		}
	}
	if ctx.end == '\n' {
		r, ok := cutLineBreak(t)
		return ok && r != "" && r[0] != '\n' && r[0] != '\r' && blankUsuallyFollows(ctx.doc)
	}
	if ctx.atLineStart || ctx.end == 0 || isSpace(ctx.end) {
		return false
	}
	r, ok := cutLineBreak(t)
	if !ok || r == "" {
		return false
	}
	first, _, _ := strings.Cut(r, "\n")
	if startsLikeCutLine(r, first, ctx) {
		return true
	}
	if keep, decided := firstByteVote(r, ctx); decided {
		return keep
	}
	// Text that would make the cut line much longer than any line the
	// document has written (wrapped prose) starts a line of its own —
	// unless it goes on with a word the cut split ("indented c" + "ode
	// block"): a document of short lines that wraps none (lengthVote reads
	// those that do) writes a longer line more often than it ends one in
	// the middle of a word.
	if isLetter(ctx.end) && isLetter(r[0]) {
		return false
	}
	if proseBreak(r, ctx) {
		return true
	}
	return muchLongerThanLines(ctx.doc, "", utf8.RuneCountInString(ctx.partial)+utf8.RuneCountInString(first))
}

// formatVote: the format's structure holds with one reading of the line
// break and not with the other (a diff's hunk counts).
func formatVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.lineBreak == nil {
		return false, false
	}
	return ctx.lineBreak(t)
}

// fenceLineVote: a cut line that is a whole fence line ends there when
// the text cannot go on with it. A line that closes the code block the
// document stands in can have nothing after it: glued to it, the text
// would turn the rest of the document into code. A line that opens a
// block takes the text as the rest of its info string only where that
// makes one word, a language's name ("```" + "json"); a first line that
// has spaces in it ("```" + "go run main.go", "```sh" + "go install …")
// or opens with a mark ("~~~" + "\\[\\]") is the block's first line of
// code. And inside a block, text whose first line closes it starts a line:
// glued to a line of code it would close nothing. It does not decide text
// that starts with a space or with the fence's own character, nor after
// an info string of several words or a space (the fence line may go on).
func fenceLineVote(t string, ctx envCtx) (keep, decided bool) {
	if !ctx.docFenced || ctx.atLineStart {
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok || r == "" {
		return false, false
	}
	if closesBlock(r, ctx) {
		return true, true
	}
	if isSpace(r[0]) {
		return false, false
	}
	info, ok := fenceLine(ctx.partial)
	if !ok {
		return false, false
	}
	char := strings.TrimLeft(ctx.partial, " ")[0]
	if r[0] == char {
		return false, false
	}
	f := ctx.fence
	wasOpen := f.open()
	if !f.step(ctx.partial) {
		return false, false
	}
	if wasOpen {
		return true, true
	}
	if strings.ContainsAny(info, " \t") || isSpace(ctx.end) {
		// The info string has words already, or the cut fell after the
		// space before one ("~~~ " + "aa ``` ~~~"): more may follow.
		return false, false
	}
	// Glued, the text makes the info string (a backtick fence's has no
	// backtick): a language's name is one word that opens with a letter.
	first, _, _ := strings.Cut(r, "\n")
	glued, ok := fenceLine(ctx.partial + first)
	return !ok || !isLetter(glued[0]) || strings.ContainsAny(glued, " \t"), true
}

// spanVote: text whose first line closes an inline span the cut line
// opened ("[`io." + "WriterTo`](…)", "*   **Security:" + "** A security
// issue…") goes on with the cut line. A span may also cross a line break,
// but a cut falls inside a line far more often than at its end. Only where
// the format has inline markup, and not in a code block, where the marks
// are text.
func spanVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.markup == nil || ctx.atLineStart || ctx.inFence || ctx.partial == "" {
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok || r == "" || isSpace(r[0]) {
		return false, false
	}
	first, _, _ := strings.Cut(r, "\n")
	return false, closesSpan(ctx.partial, strings.TrimRight(first, "\r"))
}

// closesBlock reports whether the text after a line break (r) opens with
// the line that closes the code block the document stands in, where glued
// to the cut line (a line of code) it would close nothing.
func closesBlock(r string, ctx envCtx) bool {
	if !ctx.inFence || ctx.atLineStart {
		return false
	}
	first, _, _ := strings.Cut(r, "\n")
	alone, glued := ctx.fence, ctx.fence
	return alone.step(first) && !glued.step(ctx.partial+first)
}

// indentVote: outside code, text that opens with indentation right after
// a word ("(instead of" + "  allocated zero value") starts a line: prose
// puts one space between words, a wrapped list item's line indents. Not
// where the document itself sets words apart by more inside a line.
func indentVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.inFence || ctx.atLineStart || !isLetter(ctx.end) || !ctx.docFenced {
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok {
		return false, false
	}
	lead := strings.TrimLeft(r, " \t")
	if len(r)-len(lead) < 2 && !strings.HasPrefix(r, "\t") || lead == "" || !isLetter(lead[0]) {
		return false, false
	}
	return !alignsWords(tail(ctx.doc, leadWindow)), true
}

// alignsWords reports whether w sets words apart inside a line by more
// than a space (a tab, a run of spaces: columns), as a table or a list of
// tab-separated fields does.
func alignsWords(w string) bool {
	for i := 1; i < len(w); i++ {
		if !isLetter(w[i-1]) || w[i] != '\t' && !strings.HasPrefix(w[i:], "  ") {
			continue
		}
		j := i
		for j < len(w) && (w[j] == ' ' || w[j] == '\t') {
			j++
		}
		if j < len(w) && w[j] != '\n' && w[j] != '\r' {
			return true
		}
	}
	return false
}

// itemVote: after a cut line, text that opens with the next number of
// the document's ordered list ("3. Active operations transfer" + "4. Old
// connections close") starts a line of its own: the list's next item.
func itemVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.atLineStart || ctx.end == 0 || isSpace(ctx.end) {
		// (After indentation alone, the item is the cut line's own rest.)
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok {
		return false, false
	}
	n, delim, ok := itemNumber(r)
	if !ok {
		return false, false
	}
	w := recentLines(ctx.doc, leadWindow)
	for w != "" {
		i := strings.LastIndexByte(strings.TrimSuffix(w, "\n"), '\n')
		line := w[i+1:]
		w = w[:i+1]
		if m, d, ok := itemNumber(line); ok {
			return true, m+1 == n && d == delim
		}
	}
	return false, false
}

// itemNumber reads the ordered list marker a line opens with after its
// indentation ("12. ", "3) "): its number and delimiter.
func itemNumber(line string) (n int, delim byte, ok bool) {
	n, delim, size := orderedMarker(strings.TrimLeft(line, " \t"))
	return n, delim, size > 0
}

// orderedMarker reads the ordered list marker t opens with: up to nine
// digits and '.' or ')', a space after them ("12. ", "3) "). It returns
// the number, the delimiter and the marker's length without the space; 0
// where t opens with none.
func orderedMarker(t string) (n int, delim byte, size int) {
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		n = 10*n + int(t[i]-'0')
		i++
	}
	if i == 0 || i+1 >= len(t) || t[i] != '.' && t[i] != ')' || t[i+1] != ' ' {
		return 0, 0, 0
	}
	return n, t[i], i + 1
}

// startsLikeCutLine reports whether the text after the line break (r, its
// first line first) starts like the cut line: a list item after a list
// item, a heading after a heading, both with text after the marker, is a
// line of its own. Not in diffs, whose lines all start so.
func startsLikeCutLine(r, first string, ctx envCtx) bool {
	mr, okr := lineMarker(lineLead(first))
	mp, okp := lineMarker(lineLead(ctx.partial))
	// One space before the marker where the cut line has none goes on
	// with it (" | 18 |" after "| Alan Turing").
	oneSpace := r[0] == ' ' && (len(r) < 2 || !isSpace(r[1])) && ctx.partial != "" && !isSpace(ctx.partial[0])
	return ctx.blank.leads && !oneSpace && okr && okp && mr == mp &&
		len(lineLead(first)) < len(strings.TrimRight(first, " \t\r")) && len(lineLead(ctx.partial)) < len(ctx.partial)
}

// lineMarker reads a line's lead as a block marker: a quote's '>' or a
// table row's '|' as they stand; a list item's '-', '*' or '+' and a
// heading's run of '#' only with a space after them, as Markdown reads them
// ("*bravo*" is emphasis, "#include" no heading).
func lineMarker(lead string) (byte, bool) {
	s := strings.TrimLeft(lead, " \t")
	if s == "" || strings.IndexByte("#-*+>|", s[0]) < 0 {
		return 0, false
	}
	c := s[0]
	if c == '>' || c == '|' {
		return c, true
	}
	n := 1
	for c == '#' && n < len(s) && s[n] == '#' {
		n++
	}
	return c, n < len(s) && isSpace(s[n])
}

// firstByteVote decides the line break by the byte the text after it (r)
// starts with, given the document's last: indentation starts a line; a
// capital or a line marker after a sentence's end does, unless the
// document glues the two; so does a run of marker characters after a word
// ("--", "**", a pair of backticks: a fence's or a code span's), as the format
// reads such runs.
func firstByteVote(r string, ctx envCtx) (keep, decided bool) {
	c := r[0]
	switch {
	case (c == '\t' || strings.HasPrefix(r, "  ")) && !listMarker(ctx.partial):
		// (After a list item's bare marker, spaces set its text apart:
		// "1." + "  foo".)
		return true, true
	case ctx.end == ':' && len(r) > 2 && strings.HasPrefix(r, "//") && isWordByte(r[2]):
		// A URL's scheme and host: "http:" + "//example.com" (not a
		// comment: "mind:" + "//" + "\n//  - For").
		return false, true
	case strings.IndexByte(".!?:;", ctx.end) >= 0 && !strings.HasSuffix(ctx.partial, "::") && !strings.HasSuffix(ctx.partial, "..") && (c >= 'A' && c <= 'Z' || strings.IndexByte("-+@#/*>|", c) >= 0):
		// (Not after "::", a scope's, which no sentence ends with:
		// "ThreadContext::" + "OnFinished"; nor after "..", a path's.)
		// Unless the document already glues that punctuation to a word
		// ("types." + "Signature", "::)?" + "Unlock").
		return !isWordByte(c) || !gluePlausible(tail(ctx.doc, leadWindow), r), true
	case isWordByte(ctx.end) && len(r) >= 2 && r[1] == c && strings.IndexByte("-+@#/*=`", c) >= 0:
		// In Markdown, unless the document already closes emphasis that
		// way ("foo bar" + "**"); in prose, only when the document starts
		// lines that way ("C" + "++ and Rust" goes on).
		w := tail(ctx.doc, leadWindow)
		switch ctx.blank.markers {
		case markersEmphasis:
			return !gluePlausible(w, r) && strings.Contains(w, "\n"+r[:2]), true
		case markersLineStarts:
			return strings.Contains(w, "\n"+r[:2]), true
		}
		return true, true
	}
	return false, false
}

// proseBreak reports whether a prose line cut right after a comma, a
// semicolon or a closing bracket ("your contribution," + "this simply",
// "(see <https://…>" + "or `go doc`") ends there: prose puts a space
// between such a mark and the word after it, so the text after it starts
// a line, unless the document itself glues that mark to a letter
// somewhere (code, a URL's "a,b").
func proseBreak(r string, ctx envCtx) bool {
	if strings.IndexByte(",;)>", ctx.end) < 0 || !isLetter(r[0]) || ctx.inFence || !strings.Contains(ctx.partial, " ") {
		return false
	}
	glued, _ := classJunctions([]string{tail(ctx.doc, leadWindow)}, ctx.end, 'a', 0, 1)
	return glued == 0
}

// listMarker reports whether a cut line is a list item's marker and
// nothing else: "-", "*", "+", "1." or "1)", after any indentation.
func listMarker(line string) bool {
	s := strings.TrimLeft(line, " \t")
	switch {
	case s == "-" || s == "*" || s == "+":
		return true
	case len(s) < 2 || len(s) > 10 || s[len(s)-1] != '.' && s[len(s)-1] != ')':
		return false
	}
	for i := 0; i < len(s)-1; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// muchLongerThanLines reports whether a line of n runes is longer by a
// quarter (and eight runes) than every one of the document's last lines
// and the complete lines of more (the continuation's text after the line
// in question, the document's too), of which there must be sixteen at
// least.
func muchLongerThanLines(doc, more string, n int) bool {
	w := doc[max(0, len(doc)-leadWindow):]
	i := strings.IndexByte(w, '\n')
	if i < 0 {
		w = ""
	}
	w = w[i+1:] // the first line may be cut; the last is the cut line
	lines, longest := countLines(w)
	l, m := countLines(head(more, leadWindow))
	lines, longest = lines+l, max(longest, m)
	return lines >= 16 && n > longest+longest/4+8
}

// countLines counts the complete lines of w (the text after its last line
// break is not one) and returns the length of the longest.
func countLines(w string) (lines, longest int) {
	lens := lineLengths(w)
	for _, l := range lens {
		longest = max(longest, l)
	}
	return len(lens), longest
}

// lineLengths are the lengths in runes (a width, whatever the script) of
// w's complete lines (the text after its last line break is not one),
// trailing spaces left out.
func lineLengths(w string) []int {
	var lens []int
	for {
		j := strings.IndexByte(w, '\n')
		if j < 0 {
			return lens
		}
		lens = append(lens, utf8.RuneCountInString(strings.TrimRight(w[:j], " \t\r")))
		w = w[j+1:]
	}
}

// lengthVote decides the line break between a preamble and the text after
// it, where the document was cut mid-line and wraps its lines at a width
// (most of its lines, before the cut and in the continuation, fill three
// quarters of the longest at least), by that width: text that would make
// the cut line much longer than any line starts a line of its own. It
// decides only that way: a line of usual length may go on either way.
func lengthVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.atLineStart || ctx.end == 0 || isSpace(ctx.end) {
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok || r == "" {
		return false, false
	}
	first, more, _ := strings.Cut(r, "\n")
	if w, ok := wrapsLines(ctx.doc, more); !ok || utf8.RuneCountInString(ctx.partial) > w {
		// The cut line is already longer than the width.
		return false, false
	}
	n := utf8.RuneCountInString(ctx.partial) + utf8.RuneCountInString(strings.TrimRight(first, "\r"))
	if muchLongerThanLines(ctx.doc, more, n) {
		return true, true
	}
	return false, false
}

// wrapsLines reports whether most of the document's last lines and of the
// complete lines of more (see muchLongerThanLines) that have text, of
// those inside a paragraph (another line of text follows them), fill three
// quarters of the longest at least: text wrapped at a width, which it
// returns (the longest). A paragraph's last line ends where its text does,
// whatever the width.
func wrapsLines(doc, more string) (int, bool) {
	both := [2][]int{lineLengths(tail(doc, leadWindow)), lineLengths(head(more, leadWindow))}
	longest, lines, inner, full := 0, 0, 0, 0
	for _, lens := range both {
		for _, l := range lens {
			longest = max(longest, l)
		}
	}
	for _, lens := range both {
		for k, l := range lens {
			if l == 0 {
				continue
			}
			lines++
			if k+1 < len(lens) && lens[k+1] > 0 {
				inner++
				if 4*l >= 3*longest {
					full++
				}
			}
		}
	}
	return longest, lines >= 16 && inner > 0 && 2*full >= inner
}

// junctionVote decides the line breaks between a preamble and the text
// after it by how the document itself joins the bytes on either side. The
// text starts with m line breaks, the first of which is either the
// preamble's separator or the text's own: so between the document's last
// byte before its trailing line breaks (e of them) and the text's first
// byte there are e+m-1 line breaks or e+m. Cuts fall anywhere, so the
// document's own text, before the cut and in the text after it, says how
// likely each is: the number of places where it writes the same bytes with
// that many line breaks between them (two bytes on each side, then one). It
// does not decide without evidence, on a tie, or between two letters of a
// cut line.
func junctionVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.doc == "" || ctx.end == 0 {
		return false, false
	}
	m, r := leadingBreaks(t)
	if m == 0 || r == "" {
		return false, false
	}
	body := strings.TrimRight(ctx.doc, "\r\n")
	e := strings.Count(ctx.doc[len(body):], "\n")
	if body == "" {
		return false, false
	}
	w := body[max(0, len(body)-leadWindow):]
	if e == 0 && isLetter(w[len(w)-1]) && isLetter(r[0]) {
		// Between two letters of a cut line the counts are the document's
		// spelling: a word's letters follow each other far more often than
		// a line break parts two words, wherever the cut fell ("system
		// call" + "implementations"). Whether the cut split a word is for
		// the votes that read words to tell.
		return false, false
	}
	// The text after the cut is the document's too: its junctions count
	// (none of them is this one, which stands before its first byte).
	texts := []string{w, head(r, leadWindow)}
	for _, k := range []int{2, 1} {
		if len(w) < k+1 || len(r) < k {
			continue
		}
		if cut, kept := junctions(texts, w[len(w)-k:], r[:k], e+m-1, e+m); cut != kept {
			return kept > cut, true
		}
	}
	// After punctuation, the kind of byte that follows it: "CPU," +
	// "for N=14" reads as the document's ",\nf" or as ",f", which prose
	// never writes.
	if last := w[len(w)-1]; !isWordByte(last) && !isSpace(last) {
		cut, kept := classJunctions(texts, last, byteClass(r[0]), e+m-1, e+m)
		if max(cut, kept) >= 2 && (kept > 2*cut || cut > 2*kept) {
			return kept > cut, true
		}
	}
	return false, false
}

// byteClass is a byte's kind: letters (and every byte of a multi-byte
// character) one, digits another, every other byte its own.
func byteClass(c byte) byte {
	switch {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		return 'a'
	case c >= '0' && c <= '9':
		return '0'
	}
	return c
}

// classJunctions counts the places in the texts where the byte a is
// followed by exactly n1 line breaks and then a byte of class b, and where
// by n2 (each text's last byte left out: a text the cut ends, a ends).
func classJunctions(texts []string, a, b byte, n1, n2 int) (int, int) {
	c1, c2 := 0, 0
	for _, w := range texts {
		for i := 0; i < len(w)-1; i++ {
			if w[i] != a {
				continue
			}
			n, rest := leadingBreaks(w[i+1:])
			if rest != "" && byteClass(rest[0]) == b {
				switch n {
				case n1:
					c1++
				case n2:
					c2++
				}
			}
		}
	}
	return c1, c2
}

// leadingBreaks counts the line breaks (LF or CRLF) t opens with and
// returns them with the rest of t.
func leadingBreaks(t string) (m int, rest string) {
	for {
		if strings.HasPrefix(t, "\n") {
			t = t[1:]
		} else if strings.HasPrefix(t, "\r\n") {
			t = t[2:]
		} else {
			return m, t
		}
		m++
	}
}

// junctions counts the places in the texts where a is followed by exactly
// n1 line breaks and then b, and where by n2 (each text's last byte left
// out: a text the cut ends, a ends).
func junctions(texts []string, a, b string, n1, n2 int) (int, int) {
	c1, c2 := 0, 0
	for _, w := range texts {
		for i := 0; i < len(w)-1; {
			j := strings.Index(w[i:len(w)-1], a)
			if j < 0 {
				break
			}
			n, rest := leadingBreaks(w[i+j+len(a):])
			i += j + 1
			switch {
			case n == n1 && strings.HasPrefix(rest, b):
				c1++
			case n == n2 && strings.HasPrefix(rest, b):
				c2++
			}
		}
	}
	return c1, c2
}

// gapVote decides the line breaks between a preamble and the text after it
// by the gaps the document itself leaves between lines: the text starts
// with m line breaks, of which the first is either the preamble's
// separator or the text's own, so the number of blank lines between the
// document's last line and the text's first is one of two. The document's
// recent lines vote: gaps of either size between a line like its last one
// and a line like the text's first (by their leads, then also by a
// sentence's end and a capital), most specific evidence first. It does not
// decide a text that may go on with a cut line (one line break after a
// partial line), nor without evidence.
func gapVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.doc == "" || ctx.end == 0 {
		return false, false
	}
	a, body, x, keepGap, ok := gapLines(t, ctx)
	if !ok {
		return false, false
	}
	n := countGaps(body, a, x, keepGap)
	for _, c := range n {
		if c[0] != c[1] {
			return c[0] > c[1], true
		}
	}
	return false, false
}

// blockVote decides the line breaks between a preamble and the text
// after it where the format's block structure says how many blank lines
// stand between the document's last line (a) and the text's first (x):
// one after a heading and before one, none between a heading's text and
// its "=====" underline, one between a list item and a paragraph that is
// not the item's (unindented, no list marker: without the blank line
// Markdown would read it as the item's lazy continuation), and none
// inside a paragraph (see goesOnParagraph). It decides
// only where one reading gives that number; not inside a code block, nor
// where the format has no headings.
func blockVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.heading == nil || ctx.doc == "" || ctx.end == 0 || ctx.inFence {
		return false, false
	}
	a, body, x, keepGap, ok := gapLines(t, ctx)
	if !ok {
		return false, false
	}
	if f := ctx.fence; f.step(a) || f.open() {
		// a opens a code block (or stands in one): x is code.
		return false, false
	}
	above := lineAbove(body)
	want := -1
	switch {
	case ctx.heading("", x) == 0 && ctx.heading(a, x) == 1:
		// x underlines a ("=====": a rule of dashes after a blank line
		// is a thematic break).
		want = 0
	case (ctx.heading(above, a) > 0 || ctx.heading("", x) > 0) && headingsSetApart(ctx.doc, ctx.heading):
		want = 1
	case listMarkerLen(strings.TrimLeft(a, " \t")) > 0 && !isSpace(x[0]) && (ctx.syntax == nil || !ctx.syntax(x)) && startsCapital(x):
		// a opens a list item ("- x", "2. y").
		want = 1
	case ctx.heading(above, a) == 0 && goesOnParagraph(a, x, ctx.syntax):
		want = 0
	}
	return wantGap(want, keepGap)
}

// wantGap reads the number of blank lines a vote wants between the
// document's last line and the text's first (-1: none in particular) as
// the line break after a preamble, where keeping it gives keepGap: kept
// where that gives the number, removed where one fewer does.
func wantGap(want, keepGap int) (keep, decided bool) {
	switch want {
	case keepGap:
		return true, true
	case keepGap - 1:
		return false, true
	}
	return false, false
}

// goesOnParagraph reports whether x goes on with the paragraph a ends: a
// line of prose that ends without a sentence's end, followed by a line that
// opens with a lower-case word ("then an import to the _time_ package" +
// "is added even if it is not needed."). Not after a table row, a list
// item (text after one may be a paragraph of its own) or a line of one
// word (goldmark's "aaa" + "bbb" examples set such lines apart), nor
// (blockVote's test) after a heading.
func goesOnParagraph(a, x string, syntax func(string) bool) bool {
	lead := strings.TrimLeft(a, " \t")
	if !strings.Contains(lead, " ") || sentenceEnd(a) || lead[0] == '|' || listMarkerLen(lead) > 0 || syntax != nil && syntax(x) {
		return false
	}
	xl := strings.TrimLeft(x, " \t")
	return xl != "" && xl[0] >= 'a' && xl[0] <= 'z'
}

// openerVote: in a code block, the line after one that ends by opening a
// bracket ("import (", "func main() {") follows it with no blank line
// between: the bracket's first item.
func openerVote(t string, ctx envCtx) (keep, decided bool) {
	if !ctx.inFence || ctx.doc == "" || ctx.end == 0 {
		return false, false
	}
	a, _, _, keepGap, ok := gapLines(t, ctx)
	if !ok {
		return false, false
	}
	if f := ctx.fence; f.step(a) {
		return false, false
	}
	end := strings.TrimRight(a, " \t\r")
	if end == "" || strings.IndexByte("({[", end[len(end)-1]) < 0 {
		return false, false
	}
	return wantGap(0, keepGap)
}

// lineAbove returns the last line of body, which ends with its line break
// (gapLines' document before the line it weighs): the line above that one.
func lineAbove(body string) string {
	b := strings.TrimSuffix(body, "\n")
	return strings.TrimRight(b[strings.LastIndexByte(b, '\n')+1:], "\r")
}

// headingsSetApart reports whether the document's recent headings, one
// at least with a line after it, all stand apart, a blank line (or the
// document's start) before each and a blank line after: where one touches
// a line of text, the document does not set its headings apart, and a
// heading is no evidence of a blank line (goldmark's "# foo" + "## foo").
func headingsSetApart(doc string, heading func(above, line string) int) bool {
	lines := strings.Split(recentLines(doc, leadWindow), "\n")
	seen := 0 // headings with a line after them
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		above := ""
		if i > 0 {
			above = strings.TrimRight(lines[i-1], "\r")
		}
		if strings.TrimSpace(l) == "" || heading(above, l) == 0 {
			continue
		}
		if heading("", l) == 0 {
			// A setext underline: the heading is the line above it.
			if i > 1 && strings.TrimSpace(lines[i-2]) != "" {
				return false
			}
		} else if strings.TrimSpace(above) != "" {
			return false
		}
		if i+1 < len(lines)-1 {
			if strings.TrimSpace(lines[i+1]) != "" {
				return false
			}
			seen++
		}
	}
	return seen > 0
}

// gapLines reads the two lines whose gap the votes weigh: the document's
// last line with text (a, see gapEnds) and the first line of the text
// after the preamble's line breaks (x), with the document before a and
// the gap if every line break is kept; ok false where there is no such
// pair.
func gapLines(t string, ctx envCtx) (a, body, x string, keepGap int, ok bool) {
	m, r := leadingBreaks(t)
	if m == 0 || r == "" || r[0] == '\r' {
		return "", "", "", 0, false
	}
	x, _, _ = strings.Cut(r, "\n")
	x = strings.TrimRight(x, "\r")
	if strings.TrimSpace(x) == "" {
		return "", "", "", 0, false
	}
	a, body, keepGap = gapEnds(ctx.site, m)
	return a, body, x, keepGap, a != ""
}

// gapEnds returns the document's last line with text (a; "" when gapVote
// has none to weigh), the document before that line (body) and the number
// of blank lines between a and the text's first line if all of the text's
// m leading line breaks are kept: the document's own blank lines after a,
// plus m. A cut line ends with the text's first line break, so after one
// that break does not count, and a text with fewer than two is not weighed.
func gapEnds(ctx site, m int) (a, body string, keepGap int) {
	body = ctx.doc
	e := 0
	if ctx.end == '\n' {
		for {
			body = strings.TrimSuffix(strings.TrimSuffix(body, "\n"), "\r")
			i := strings.LastIndexByte(body, '\n')
			if body[i+1:] != "" || i < 0 {
				a, body = body[i+1:], body[:i+1]
				break
			}
			e++
			body = body[:i+1]
		}
	} else {
		if m < 2 {
			return "", "", 0
		}
		// A cut line ends with the text's first line break.
		a, body = ctx.partial, body[:len(body)-len(ctx.partial)]
		m--
	}
	return a, body, e + m
}

// countGaps counts, over body's recent lines, the gaps of keepGap blank
// lines (n[k][0]) and of one fewer (n[k][1]) after a line that leads like
// a: n[3] all of them, n[2] those before a line that leads like x, n[1]
// those of n[2] whose lines also agree with a and x on ending a sentence
// and starting with a capital, and n[0] those of n[1] whose first line
// also agrees with a on leaving room for the next line's first word, in a
// document that wraps its lines at a width: a wrapped paragraph's line
// ends short only where the paragraph does.
func countGaps(body, a, x string, keepGap int) (n [4][2]int) {
	cutGap := keepGap - 1
	la, lx := voteLead(a), voteLead(x)
	sa, cx := sentenceEnd(a), startsCapital(x)
	width, wraps := wrapsLines(body, "")
	fa := roomFor(a, x, width)
	prev, gap, have := "", 0, false
	for rest := body[max(0, len(body)-leadWindow):]; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			gap++
			continue
		}
		if have && (gap == keepGap || gap == cutGap) {
			k := 0
			if gap == cutGap {
				k = 1
			}
			if voteLead(prev) == la {
				n[3][k]++
				if voteLead(line) == lx {
					n[2][k]++
					if sentenceEnd(prev) == sa && startsCapital(line) == cx {
						n[1][k]++
						if wraps && roomFor(prev, line, width) == fa {
							n[0][k]++
						}
					}
				}
			}
		}
		prev, gap, have = line, 0, true
	}
	return n
}

// roomFor reports whether line a leaves room, within width, for the first
// word of line x.
func roomFor(a, x string, width int) bool {
	w, _, _ := strings.Cut(strings.TrimLeft(x, " \t"), " ")
	return utf8.RuneCountInString(strings.TrimRight(a, " \t\r"))+1+utf8.RuneCountInString(w) <= width
}

// voteLead is lineLead with an ordered list item's number read as its
// marker ("2.  What" and "3. Why" lead alike), for the votes on gaps.
func voteLead(line string) string {
	t := strings.TrimLeft(line, " \t")
	if _, d, size := orderedMarker(t); size > 0 {
		return line[:len(line)-len(t)] + "1" + string(d) + " "
	}
	return lineLead(line)
}

// sentenceEnd reports whether a line ends like a sentence or a clause.
func sentenceEnd(line string) bool {
	l := strings.TrimRight(line, " \t\r")
	return l != "" && strings.IndexByte(".!?:;", l[len(l)-1]) >= 0
}

// startsCapital reports whether a line's text starts with a capital.
func startsCapital(line string) bool {
	l := strings.TrimLeft(line, " \t")
	return l != "" && l[0] >= 'A' && l[0] <= 'Z'
}

// blankUsuallyFollows reports whether, in the document's recent lines, a
// line that starts the way its last line does (as the gap votes read leads:
// "1.  What" and "2.  Where" alike) is more often followed by a blank line
// than by another line.
func blankUsuallyFollows(doc string) bool {
	body := strings.TrimSuffix(doc, "\n")
	i := strings.LastIndexByte(body, '\n')
	last := body[i+1:]
	if strings.TrimSpace(last) == "" {
		return false
	}
	lead := voteLead(last)
	blank, other := 0, 0
	rest := body[max(0, i+1-leadWindow) : i+1]
	prevLead, havePrev := "", false
	for rest != "" {
		line := rest
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			rest = ""
		}
		if havePrev && prevLead == lead {
			if strings.TrimSpace(line) == "" {
				blank++
			} else {
				other++
			}
		}
		havePrev = strings.TrimSpace(line) != ""
		if havePrev {
			prevLead = voteLead(line)
		}
	}
	return blank > other
}

// fenceCloseVote decides the line breaks between a preamble and a fence
// line that closes the fence the document ends in, by how the document
// closes its own fences: right after the last line of code, or after a
// blank line. It does not decide elsewhere, nor without evidence.
func fenceCloseVote(t string, ctx envCtx) (keep, decided bool) {
	if !ctx.inFence || ctx.doc == "" {
		return false, false
	}
	m, r := leadingBreaks(t)
	first, _, _ := strings.Cut(r, "\n")
	if info, ok := fenceLine(strings.TrimRight(first, "\r")); m == 0 || !ok || info != "" {
		return false, false
	}
	// The blank lines before the fence under each reading: the document's
	// own (after a complete line) plus the text's.
	e := 0
	if ctx.atLineStart {
		e = len(ctx.doc) - len(strings.TrimRight(ctx.doc, "\n")) - 1
	}
	keepGap, cutGap := e+m-1, e+m-2
	if ctx.atLineStart {
		keepGap, cutGap = e+m, e+m-1
	}
	tight, loose := fenceCloseGaps(ctx.doc[max(0, len(ctx.doc)-leadWindow):])
	if cutGap != 0 || keepGap != 1 || tight == loose {
		return false, false
	}
	return loose > tight, true
}

// fenceCloseGaps counts the document's closed fences by whether a blank
// line stands before the closing fence line.
func fenceCloseGaps(w string) (tight, loose int) {
	var open fenceOpen
	blank := false
	for w != "" {
		line, rest, _ := strings.Cut(w, "\n")
		w = rest
		line = strings.TrimRight(line, "\r")
		if was := open.open(); open.step(line) && was {
			if blank {
				loose++
			} else {
				tight++
			}
		}
		blank = strings.TrimSpace(line) == ""
	}
	return tight, loose
}

// languageVote decides the line break after a preamble by the document's
// own language (see readLanguage): the document going on with that line
// break, or with the text after it, whichever its text makes much more
// likely. It does not decide a close call, nor a document too short to
// have a language. A short document's language is read from the
// continuation's text too, when that has enough to have one.
func languageVote(t string, ctx envCtx) (keep, decided bool) {
	r, ok := cutLineBreak(t)
	if !ok || r == "" || ctx.doc == "" {
		return false, false
	}
	// The model learns langWindow bytes of the document's text: before
	// the cut, and where that is shorter, the continuation's after the
	// bytes it scores, when it has enough to have a language of its own.
	w, x := tail(ctx.doc, langWindow), head(r, langJunction)
	more := head(r[len(x):], langWindow-len(w))
	if len(more) < langMin {
		more = ""
	}
	if len(w)+len(more) < langMin {
		return false, false
	}
	m := newLangModel(w)
	m.learn(more)
	keepLP := m.logProb(ctx.doc, "\n"+x)
	if last := ctx.doc[len(ctx.doc)-1]; isWordByte(last) && isWordByte(x[0]) {
		// Where the document wraps its lines, a line break between two
		// words stands for a space: how likely it is there is how likely a
		// space is, times the document's share of line breaks among the
		// gaps between its words (the model alone, which reads the line
		// break after these very bytes, has seldom seen one there). Only
		// between two words: before a bracket or after one, a space is
		// code's ("func (f"), no stand-in for a line break
		// ("findXCOFFSymbol" + "(f *xcoff.File").
		if share := wrapShare(w); share > 0 {
			keepLP = max(keepLP, m.logProb(ctx.doc, " "+x)+math.Log(share))
		}
	}
	d := keepLP - m.logProb(ctx.doc, x)
	switch {
	case d >= langDecides:
		return true, true
	case d <= -langDecides:
		return false, true
	}
	return false, false
}

// langDecides is the log likelihood ratio from which the document's
// language decides a line break (nats).
const langDecides = 3

// wrapShare is the share of line breaks among the single gaps between two
// words in w (word bytes on both sides, as where languageVote asks): a
// line break or a space alone between them. In wrapped prose about one
// gap in ten; in text whose line breaks end statements or records, a
// space seldom stands where they do.
func wrapShare(w string) float64 {
	breaks, spaces := 0, 0
	for i := 1; i+1 < len(w); i++ {
		if c := w[i]; (c == '\n' || c == ' ') && isWordByte(w[i-1]) && isWordByte(w[i+1]) {
			if c == '\n' {
				breaks++
			} else {
				spaces++
			}
		}
	}
	if breaks == 0 {
		return 0
	}
	return float64(breaks) / float64(breaks+spaces)
}

// wordVote decides the line break between a preamble and the text after
// it, where the document was cut after a letter and the text starts with
// one, by the words the document writes (before the cut and in the
// continuation, the junction's own words left out): the cut line's last
// letters and the text's first read as one word the document writes where
// either alone is no word of it (a word cut in two: "The" + "ory"). It
// decides only that way: two words the document writes may also be one it
// has not written yet ("in" + "to").
func wordVote(t string, ctx envCtx) (keep, decided bool) {
	if ctx.atLineStart || !isLetter(ctx.end) {
		return false, false
	}
	r, ok := cutLineBreak(t)
	if !ok || r == "" || !isLetter(r[0]) {
		return false, false
	}
	before := tail(ctx.doc, leadWindow)
	i := len(before)
	for i > 0 && isLetter(before[i-1]) {
		i--
	}
	j := 0
	for j < len(r) && isLetter(r[j]) {
		j++
	}
	a, b := before[i:], r[:j]
	words := [2]string{before[:i], head(r[j:], leadWindow)}
	glued, first, second := wholeWords(words, a+b), wholeWords(words, a), wholeWords(words, b)
	if glued > 0 && (first == 0 || second == 0) {
		return false, true
	}
	return false, false
}

// wholeWords counts where the texts write w as a whole word: not between
// letters.
func wholeWords(texts [2]string, w string) int {
	n := 0
	for _, s := range texts {
		for k := 0; ; {
			q := strings.Index(s[k:], w)
			if q < 0 {
				break
			}
			at := k + q
			if (at == 0 || !isLetter(s[at-1])) && (at+len(w) == len(s) || !isLetter(s[at+len(w)])) {
				n++
			}
			k = at + 1
		}
	}
	return n
}

// isLetter reports whether c is an ASCII letter or a byte of a multi-byte
// character.
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 }
