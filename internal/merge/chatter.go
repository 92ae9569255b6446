package merge

import (
	"strings"
)

// Overlap markers of the overlap continuation prompt: the model is shown the
// document's tail and asked to echo it between these lines before continuing.
const (
	beginOverlap = "---BEGIN_OVERLAP---"
	endOverlap   = "---END_OVERLAP---"
)

// preambleStarts are how models open a reply that talks about the document
// instead of continuing it. A first line only counts as chatter when it is
// short, ends like a sentence introducing something and starts with one of
// these, so a document line such as "Here is the list of ..." inside a
// paragraph is never taken for one.
var preambleStarts = []string{
	"sure", "certainly", "of course", "okay", "ok,", "ok.", "alright", "absolutely",
	"here is", "here's", "here are", "below is", "continuing", "continued", "(continued",
	"[continued", "continuation", "i'll continue", "i will continue", "let me continue",
	"let's continue", "picking up", "resuming", "as requested", "great", "got it",
}

// trailerStarts are how models close a reply with a remark about the document.
var trailerStarts = []string{
	"let me know", "i hope", "hope this", "feel free", "(continued", "[continued",
	"to be continued", "(to be continued", "continued in", "this completes", "that completes",
	"this concludes", "that concludes", "shall i continue", "would you like", "do you want me",
	"i can continue", "if you need", "if you'd like", "(end of", "[end of", "end of continuation",
	"i'll continue", "i will continue", "the document continues", "(output truncated", "[output truncated",
}

// chatterLine reports whether line reads like a model talking about its
// output, given the phrases that open such remarks.
func chatterLine(line string, starts []string) bool {
	s := strings.TrimSpace(line)
	if s == "" || len(s) > 200 {
		return false
	}
	for _, p := range starts {
		// The phrases are ASCII, so a match starts with the same byte up
		// to ASCII case: comparing first bytes (case bit set) spares most
		// EqualFold calls.
		if len(s) >= len(p) && s[0]|0x20 == p[0]|0x20 && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// introduces reports whether a line ends the way a remark introducing the
// continuation does: with a colon, or as a bracketed note like "(continued)".
// A document line that merely starts with "Continued" or "Sure" does not.
func introduces(line string) bool {
	end := line[len(line)-1]
	return end == ':' || (line[0] == '(' && end == ')') || (line[0] == '[' && end == ']')
}

// fenceLine reports whether line (without its newline) opens or closes a
// Markdown code fence, returning the fence's info string.
func fenceLine(line string) (info string, ok bool) {
	if !maybeFence(line) {
		return "", false
	}
	l := strings.TrimRight(line, " \t\r")
	trimmed := strings.TrimLeft(l, " ")
	if len(l)-len(trimmed) > 3 {
		return "", false
	}
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(trimmed, f) {
			rest := strings.TrimLeft(trimmed, f[:1])
			if f[0] == '`' && strings.Contains(rest, "`") {
				return "", false
			}
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// chatterCtx tells chatter removal what the document looks like where the
// continuation attaches.
type chatterCtx struct {
	format string
	// docFenced: the document itself uses code fences (Markdown, or code the
	// model wrapped in a fence from its first chunk).
	docFenced bool
	// inFence: the document ends inside an open fence.
	inFence bool
	// atLineStart: the document ends with a newline (or is empty).
	atLineStart bool
	// wrapperOpen: an earlier continuation opened a wrapper fence that has
	// not been closed yet.
	wrapperOpen bool
	// inQuote: the document ends inside a quoted CSV value.
	inQuote bool
	// noFence: the document ends inside a value (a quoted CSV field) and
	// carries fences itself, so a fence line there is likely content.
	noFence bool
	// partial is the document's incomplete last line.
	partial string
	// end is the document's last byte, and doc the document, for
	// line-oriented formats (zero when empty or not line-oriented).
	end byte
	doc string
	// wraps: every other continuation of the job opens with a fence line,
	// so one that opens this one is the model's wrapper too.
	wraps bool
	// habit is how the model continues at the job's other joins (see
	// continuationHabit): 1 it starts its cut line over.
	habit int
	// flipBlank takes the other reading of the line break after a
	// preamble, for a join the first reading does not verify.
	flipBlank bool
}

// stripped is a continuation without its chatter.
type stripped struct {
	text  string   // what remains
	notes []string // short notes of what went
	open  bool     // a wrapper fence is left open for a later chunk to close
	// echoed: the chunk opened with the overlap prompt's markers; echo is
	// the text between them, which the join verifies against the document.
	echoed bool
	echo   string
	// open echo: the chunk ended before the end marker.
	echoCut bool
	// judged: a line break after a preamble was judged the separator's or
	// the text's (see blankLineIsNew); the other reading is the one
	// chatterCtx.flipBlank gives.
	judged bool
}

// stripChatter removes what a model adds around a continuation that is not
// part of the document: a preamble line, the overlap markers (setting the
// echoed text aside for the join to check), a code fence wrapped around the
// chunk, and a closing remark.
func stripChatter(t string, ctx chatterCtx) stripped {
	var notes []string
	var echo string
	echoed, echoCut, judged := false, false, false
	// Preamble: a chatter line of its own, then at most one blank line.
	if i := strings.IndexByte(t, '\n'); i > 0 && i <= 200 {
		first := strings.TrimRight(t[:i], "\r")
		trimmed := strings.TrimSpace(first)
		// A chunk that is nothing but such a line followed by whitespace
		// (the document's own line break or indentation, all the model had
		// left) loses the line too: it introduces nothing of the document.
		// A line that starts over the document's partial line ("Here is a
		// sample of" + "Here is a sample of ... blocks:") is the document's.
		restart := len(ctx.partial) >= 2 && strings.HasPrefix(first, ctx.partial)
		if trimmed != "" && !restart && chatterLine(first, preambleStarts) && introduces(trimmed) {
			t = t[i+1:]
			judged = strings.HasPrefix(t, "\n") || strings.HasPrefix(t, "\r\n")
			if blankLineIsNew(t, ctx) == ctx.flipBlank {
				if strings.HasPrefix(t, "\n") {
					t = t[1:]
				} else if strings.HasPrefix(t, "\r\n") {
					t = t[2:]
				}
			}
			notes = append(notes, "preamble")
		}
	}
	// Overlap markers: the echoed block is set aside; the join checks it
	// against the document's tail.
	if e, rest, complete, ok := cutMarkers(t); ok {
		t, echo, echoed, echoCut = rest, e, true, !complete
		notes = append(notes, "overlap markers")
	}
	// A stray end marker with no beginning (the model echoed only part).
	if s := strings.TrimLeft(t, " \t"); strings.HasPrefix(s, endOverlap) {
		t = strings.TrimPrefix(strings.TrimPrefix(s[len(endOverlap):], "\r"), "\n")
		notes = append(notes, "overlap marker")
	}
	// A fence wrapped around the chunk.
	opened := false
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		// Glued to a cut line, a wrapper starts the chunk's first byte; an
		// indented fence there goes on with the line.
		glued := !ctx.atLineStart && t != "" && (t[0] == ' ' || t[0] == '\t')
		p := ctx.partial
		if info, ok := fenceLine(t[:i]); ok && !glued && !restartsCutLine(t[:i], ctx) {
			wrapper := wrapperFence(info, ctx) || ctx.format != "csv" && !ctx.inFence && wrappedWhole(t, info, ctx)
			if ctx.format != "csv" {
				// Either reading sets the fences of the rest of the chunk:
				// the one that leaves fewer fence lines with an info
				// string inside an open fence (where they are text, not
				// the openers they look like) wins.
				keep := fenceAnomalies(p+t, ctx.inFence)
				cut := fenceAnomalies(p+t[i+1:], ctx.inFence)
				if keep != cut {
					wrapper = cut < keep
				}
			}
			if wrapper {
				t = t[i+1:]
				opened = true
				notes = append(notes, "code fence")
			}
		}
	}
	// The markers inside the wrapper fence.
	if !echoed {
		if e, rest, complete, ok := cutMarkers(t); ok {
			t, echo, echoed, echoCut = rest, e, true, !complete
			notes = append(notes, "overlap markers")
		}
	}
	// Closing remark, then the wrapper's closing fence.
	t, trailed := stripTrailer(t)
	if trailed {
		notes = append(notes, "closing remark")
	}
	open := opened || ctx.wrapperOpen
	if open || trailed && !ctx.docFenced {
		if u, ok := stripClosingFence(t); ok && !closesOwn(u, ctx) {
			t = u
			open = false
			if !opened {
				notes = append(notes, "code fence")
			}
		}
	}
	return stripped{text: t, notes: notes, open: open, echoed: echoed, echo: echo, echoCut: echoCut, judged: judged}
}

// cutMarkers splits a chunk that opens (after whitespace) with the overlap
// prompt's begin marker into the echoed text and what follows the end
// marker's line. A chunk cut off before the end marker is all echo
// (complete is false).
func cutMarkers(t string) (echo, rest string, complete, ok bool) {
	s := strings.TrimLeft(t, " \t\r\n")
	if !strings.HasPrefix(s, beginOverlap) {
		return "", t, false, false
	}
	s = markerLineEnd(s[len(beginOverlap):])
	j := strings.Index(s, endOverlap)
	if j < 0 {
		return s, "", false, true
	}
	return s[:j], markerLineEnd(s[j+len(endOverlap):]), true, true
}

// markerLineEnd drops the rest of a marker's line (trailing blanks and the
// line break) when the marker has a line of its own.
func markerLineEnd(s string) string {
	r := strings.TrimLeft(s, " \t")
	if strings.HasPrefix(r, "\r\n") {
		return r[2:]
	}
	if strings.HasPrefix(r, "\n") {
		return r[1:]
	}
	if r == "" {
		return r
	}
	return s
}

// echoJoins reports whether the text a model echoed between the overlap
// markers is the document's tail exactly, less at most the line break it
// put after a partial last line so that the end marker has a line of its
// own. An empty echo verifies nothing.
//
// An echo cut off by the length limit before its end marker repeats the
// start of the tail instead: it stands in the document from the start of a
// line near its end.
func echoJoins(doc, echo string, cut bool) bool {
	if echo == "" || len(echo) > len(doc)+2 {
		return false
	}
	if cut {
		w := tail(doc, overlapWindow)
		for end := len(w); ; {
			i := strings.LastIndex(w[:end], echo)
			if i < 0 {
				return false
			}
			if i == 0 && len(w) == len(doc) || i > 0 && w[i-1] == '\n' {
				return true
			}
			end = i + len(echo) - 1
		}
	}
	if strings.HasSuffix(doc, echo) {
		return true
	}
	for _, nl := range []string{"\r\n", "\n"} {
		if e, ok := strings.CutSuffix(echo, nl); ok && e != "" && strings.HasSuffix(doc, e) {
			return true
		}
	}
	return false
}

// echoText is what an echo that is not the document's tail stands for: text
// the model wrote, kept for the cascade to judge, with the line break it
// put after a partial last line for the end marker's sake taken out.
func echoText(doc, echo string) string {
	if doc == "" || strings.HasSuffix(doc, "\n") {
		return echo
	}
	if e, ok := strings.CutSuffix(echo, "\r\n"); ok {
		return e
	}
	return strings.TrimSuffix(echo, "\n")
}

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
func blankLineIsNew(t string, ctx chatterCtx) bool {
	if keep, decided := junctionVote(t, ctx); decided {
		return keep
	}
	if keep, decided := gapVote(t, ctx); decided {
		return keep
	}
	if ctx.end == '\n' {
		r := strings.TrimPrefix(strings.TrimPrefix(t, "\r"), "\n")
		return len(r) < len(t) && r != "" && r[0] != '\n' && r[0] != '\r' && blankUsuallyFollows(ctx.doc)
	}
	if ctx.atLineStart || ctx.end == 0 || isSpace(ctx.end) {
		return false
	}
	r := strings.TrimPrefix(t, "\r")
	if !strings.HasPrefix(r, "\n") {
		return false
	}
	r = r[1:]
	if r == "" {
		return false
	}
	c := r[0]
	// A line that starts like the cut one (a list item after a list
	// item, a heading after a heading; both with text after the marker)
	// is a line of its own. Not in diffs, whose lines all start so.
	first := r
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	lr := strings.TrimSpace(lineLead(first))
	lp := strings.TrimSpace(lineLead(ctx.partial))
	// One space before the marker where the cut line has none goes on
	// with it (" | 18 |" after "| Alan Turing").
	oneSpace := c == ' ' && (len(r) < 2 || !isSpace(r[1])) && ctx.partial != "" && !isSpace(ctx.partial[0])
	if ctx.format != "diff" && !oneSpace && lr != "" && lp != "" && lr[0] == lp[0] && strings.IndexByte("#-*+>|", lr[0]) >= 0 &&
		len(lineLead(first)) < len(strings.TrimRight(first, " \t\r")) && len(lineLead(ctx.partial)) < len(ctx.partial) {
		return true
	}
	switch {
	case c == '\t' || strings.HasPrefix(r, "  "):
		return true
	case strings.IndexByte(".!?:;", ctx.end) >= 0 && (c >= 'A' && c <= 'Z' || strings.IndexByte("-+@#/*>|", c) >= 0):
		// Unless the document already glues that punctuation to a word
		// ("types." + "Signature", "::)?" + "Unlock").
		return !isWordByte(c) || !gluePlausible(ctx.doc[max(0, len(ctx.doc)-leadWindow):], r)
	case isWordByte(ctx.end) && len(r) >= 2 && r[1] == c && strings.IndexByte("-+@#/*=", c) >= 0:
		// In Markdown, unless the document already closes emphasis that
		// way ("foo bar" + "**"); in prose, only when the document starts
		// lines that way ("C" + "++ and Rust" goes on).
		w := ctx.doc[max(0, len(ctx.doc)-leadWindow):]
		switch ctx.format {
		case "markdown":
			return !gluePlausible(w, r) && strings.Contains(w, "\n"+r[:2])
		case "text":
			return strings.Contains(w, "\n"+r[:2])
		}
		return true
	}
	// Text that would make the cut line much longer than any line the
	// document has written (wrapped prose) starts a line of its own.
	return muchLongerThanLines(ctx.doc, len(ctx.partial)+len(first))
}

// muchLongerThanLines reports whether a line of n bytes is longer by a
// quarter (and eight bytes) than every one of the document's last lines, of
// which there must be sixteen at least.
func muchLongerThanLines(doc string, n int) bool {
	w := doc[max(0, len(doc)-leadWindow):]
	i := strings.IndexByte(w, '\n')
	if i < 0 {
		return false
	}
	w = w[i+1:] // the first line may be cut
	lines, longest := 0, 0
	for {
		j := strings.IndexByte(w, '\n')
		if j < 0 {
			break // the partial line
		}
		longest = max(longest, len(strings.TrimRight(w[:j], " \t\r")))
		lines++
		w = w[j+1:]
	}
	return lines >= 16 && n > longest+longest/4+8
}

// junctionVote decides the line breaks between a preamble and the text
// after it by how the document itself joins the bytes on either side. The
// text starts with m line breaks, the first of which is either the
// preamble's separator or the text's own: so between the document's last
// byte before its trailing line breaks (e of them) and the text's first
// byte there are e+m-1 line breaks or e+m. Cuts fall anywhere, so the
// document's own text says how likely each is: the number of places where
// it writes the same bytes with that many line breaks between them (two
// bytes on each side, then one). It does not decide without evidence or
// on a tie.
func junctionVote(t string, ctx chatterCtx) (keep, decided bool) {
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
	for _, k := range []int{2, 1} {
		if len(w) < k+1 || len(r) < k {
			continue
		}
		cut, kept := junctions(w, w[len(w)-k:], r[:k], e+m-1, e+m)
		if cut != kept {
			return kept > cut, true
		}
	}
	return false, false
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

// junctions counts the places in w where a is followed by exactly n1 line
// breaks and then b, and where by n2 (the end of w, which a ends, left out).
func junctions(w, a, b string, n1, n2 int) (int, int) {
	c1, c2 := 0, 0
	for i := 0; ; {
		j := strings.Index(w[i:len(w)-1], a)
		if j < 0 {
			return c1, c2
		}
		p := i + j + len(a)
		i += j + 1
		n := 0
		for p < len(w) {
			if w[p] == '\n' {
				n++
				p++
			} else if w[p] == '\r' && p+1 < len(w) && w[p+1] == '\n' {
				p++
			} else {
				break
			}
		}
		if (n == n1 || n == n2) && strings.HasPrefix(w[p:], b) {
			if n == n1 {
				c1++
			} else {
				c2++
			}
		}
	}
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
func gapVote(t string, ctx chatterCtx) (keep, decided bool) {
	if ctx.doc == "" || ctx.end == 0 {
		return false, false
	}
	m, r := leadingBreaks(t)
	if m == 0 || r == "" || r[0] == '\r' {
		return false, false
	}
	x := r
	if i := strings.IndexByte(x, '\n'); i >= 0 {
		x = x[:i]
	}
	x = strings.TrimRight(x, "\r")
	if strings.TrimSpace(x) == "" {
		return false, false
	}
	// a: the document's last line with text; e: blank lines after it.
	body := ctx.doc
	var a string
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
			return false, false
		}
		// A cut line ends with the text's first line break.
		a, body = ctx.partial, body[:len(body)-len(ctx.partial)]
		m--
	}
	if a == "" {
		return false, false
	}
	keepGap, cutGap := e+m, e+m-1
	var n [3][2]int
	la, lx := voteLead(a), voteLead(x)
	sa, cx := sentenceEnd(a), startsCapital(x)
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
				n[2][k]++
				if voteLead(line) == lx {
					n[1][k]++
					if sentenceEnd(prev) == sa && startsCapital(line) == cx {
						n[0][k]++
					}
				}
			}
		}
		prev, gap, have = line, 0, true
	}
	for _, c := range n {
		if c[0] != c[1] {
			return c[0] > c[1], true
		}
	}
	return false, false
}

// voteLead is lineLead with an ordered list item's number read as its
// marker ("2.  What" and "3. Why" lead alike), for the votes on gaps.
func voteLead(line string) string {
	t := strings.TrimLeft(line, " \t")
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' ' {
		return line[:len(line)-len(t)] + "1" + t[i:i+1] + " "
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
// line that starts the way its last line does is more often followed by a
// blank line than by another line.
func blankUsuallyFollows(doc string) bool {
	body := strings.TrimSuffix(doc, "\n")
	i := strings.LastIndexByte(body, '\n')
	last := body[i+1:]
	if strings.TrimSpace(last) == "" {
		return false
	}
	lead := lineLead(last)
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
			prevLead = lineLead(line)
		}
	}
	return blank > other
}

// closesOwn reports whether a fence line after body belongs to the
// document. A CSV document's fences live inside quoted values, so after a
// body that leaves every value closed the fence is the wrapper's.
func closesOwn(body string, ctx chatterCtx) bool {
	if ctx.format == "csv" {
		return (strings.Count(body, `"`)%2 == 1) != ctx.inQuote
	}
	if !restartsCutLine(body, ctx) {
		// The document's cut line goes on in body: a fence line it starts
		// ("```" + "sql\n", "`" + "``\n") counts.
		body = ctx.partial + body
	}
	return closesOwnFence(body, ctx.inFence)
}

// closesOwnFence reports whether a fence line after body would close a fence
// that the document opened (in before body, or inside body itself), in which
// case it belongs to the document.
func closesOwnFence(body string, inFence bool) bool {
	for len(body) > 0 {
		i := strings.IndexByte(body, '\n')
		line := body
		if i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = ""
		}
		if _, ok := fenceLine(line); ok {
			inFence = !inFence
		}
	}
	return inFence
}

// wrapperFence decides whether a fence opening a continuation was added
// around the chunk rather than being part of the document.
func wrapperFence(info string, ctx chatterCtx) bool {
	if strings.ContainsAny(info, " \t") {
		// A wrapper names a language, if anything: a fence line with words
		// after it ("```  with  the  relevant") is text.
		return false
	}
	if ctx.wraps {
		return true
	}
	if ctx.noFence {
		// Inside a value of a document that carries fences, only a fence
		// naming the document's own format is a wrapper, or one glued to
		// text of the value's line (a fence starts its line, after at most
		// some indentation).
		if strings.EqualFold(info, ctx.format) {
			return true
		}
		p := ctx.partial
		if i := strings.LastIndexByte(p, '"'); i >= 0 {
			p = p[i+1:]
		}
		p = strings.TrimLeft(p, " ")
		return !ctx.atLineStart && p != "" && strings.Trim(p, "`") != "" && strings.Trim(p, "~") != ""
	}
	if !ctx.atLineStart {
		// A fence must start a line; one glued to a cut line is a wrapper,
		// unless the cut line is itself the start of a fence, and even then
		// when it names the document's format: "`" + "```markdown" would be
		// a four-backtick fence for Markdown inside Markdown.
		p := strings.TrimLeft(ctx.partial, " ")
		if ctx.format == "markdown" && p != "" && containerMarkers(p) {
			// After a block quote's or a list item's marker a fence
			// starts the container's code.
			return namesFormat(info, ctx.format)
		}
		return p == "" || strings.Trim(p, "`") != "" && strings.Trim(p, "~") != "" || namesFormat(info, ctx.format)
	}
	if ctx.inFence {
		// Opening a fence while one is open would close it; a model reopening
		// the fence it was writing in is restating its wrapper.
		return info != ""
	}
	switch ctx.format {
	case "markdown":
		l := strings.ToLower(info)
		return l == "markdown" || l == "md"
	case "text":
		return false
	}
	return !ctx.docFenced
}

// fenceOpened reports whether t opens with a fence line (after what a
// preamble line and blank lines put before it).
func fenceOpened(t string) bool {
	for k := 0; k < 2; k++ {
		t = strings.TrimLeft(t, "\r\n")
		i := strings.IndexByte(t, '\n')
		if i < 0 {
			return false
		}
		if _, ok := fenceLine(t[:i]); ok {
			return true
		}
		if k == 0 && !(chatterLine(t[:i], preambleStarts) && introduces(strings.TrimSpace(t[:i]))) {
			return false
		}
		t = t[i+1:]
	}
	return false
}

// containerMarkers reports whether a partial Markdown line holds only the
// markers of containers that a block may follow on the same line: block
// quotes and list items ("> ", "- ", "1. "), each followed by a space.
func containerMarkers(p string) bool {
	for p != "" {
		switch {
		case p[0] == '>':
			p = p[1:]
		case strings.IndexByte("-*+", p[0]) >= 0 && len(p) > 1 && p[1] == ' ':
			p = p[2:]
		case p[0] >= '0' && p[0] <= '9':
			i := 0
			for i < len(p) && i < 9 && p[i] >= '0' && p[i] <= '9' {
				i++
			}
			if i+1 >= len(p) || p[i] != '.' && p[i] != ')' || p[i+1] != ' ' {
				return false
			}
			p = p[i+2:]
		default:
			return false
		}
		p = strings.TrimLeft(p, " ")
	}
	return true
}

// namesFormat reports whether a fence's info string names the document's
// format.
func namesFormat(info, format string) bool {
	l := strings.ToLower(info)
	return l == format || format == "markdown" && l == "md"
}

// stripTrailer removes a closing remark: a last paragraph (after a blank line
// or a closing fence) of one chatter line.
func stripTrailer(t string) (string, bool) {
	s := strings.TrimRight(t, " \t\r\n")
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return t, false
	}
	last := s[i+1:]
	if !chatterLine(last, trailerStarts) {
		return t, false
	}
	before := s[:i]
	switch {
	case strings.HasSuffix(before, "\n"):
		// Blank line before the remark: the line break that made it goes
		// with the remark; the document's own line ends (and any blank
		// lines it ends with) stay.
		return before, true
	case strings.HasSuffix(before, "\r\n\r"):
		return before[:len(before)-1], true
	case strings.HasSuffix(before, "\r"):
		return strings.TrimRight(before, "\r\n") + "\n", true
	default:
		if j := strings.LastIndexByte(before, '\n'); j >= 0 {
			if _, ok := fenceLine(before[j+1:]); ok {
				return before + "\n", true
			}
		} else if _, ok := fenceLine(before); ok {
			return before + "\n", true
		}
	}
	return t, false
}

// stripClosingFence removes a fence that closes the chunk, keeping the newline
// before it (documents end with one).
func stripClosingFence(t string) (string, bool) {
	s := strings.TrimRight(t, " \t\r\n")
	i := strings.LastIndexByte(s, '\n')
	last := s[i+1:]
	if info, ok := fenceLine(last); !ok || info != "" {
		return t, false
	}
	return s[:i+1], true
}

// fenceAnomalies counts the complete lines of body that look like a fence
// opening with an info string ("```sql") but fall inside an open fence, read
// from the fence state inFence (a fence of three backticks): there they are
// text, which documents rarely hold, so a reading of the fences that makes
// many of them is likely wrong.
func fenceAnomalies(body string, inFence bool) int {
	n := 0
	open, char, length := inFence, byte('`'), 3
	for {
		i := strings.IndexByte(body, '\n')
		if i < 0 {
			return n
		}
		line := body[:i]
		body = body[i+1:]
		info, ok := fenceLine(line)
		if !ok {
			continue
		}
		l := strings.TrimLeft(line, " ")
		c := l[0]
		k := len(l) - len(strings.TrimLeft(l, l[:1]))
		switch {
		case !open:
			open, char, length = true, c, k
		case c == char && k >= length && info == "":
			open = false
		case info != "":
			n++
		}
	}
}

// restartsCutLine reports whether t starts over the document's cut line
// rather than going on with it: it starts with the cut line, which holds
// more than fence characters ("```js" + "```json"), or the model starts
// its cut line over at the other joins ("```" + "```json").
func restartsCutLine(t string, ctx chatterCtx) bool {
	p := ctx.partial
	return !ctx.atLineStart && len(p) >= 2 && strings.HasPrefix(t, p) && (strings.Trim(p, "`~ ") != "" || ctx.habit > 0)
}

// wrappedWhole reports whether t, which opens with a fence line of the
// given info string, is a chunk wrapped whole: a bare fence line (or one
// naming the document's format) opens it, a bare fence line closes it, and
// no fence line stands between them. A document's own code block does not
// open a continuation and end the document at once.
func wrappedWhole(t, info string, ctx chatterCtx) bool {
	if info != "" && !namesFormat(info, ctx.format) {
		return false
	}
	i := strings.IndexByte(t, '\n')
	body, ok := stripClosingFence(t[i+1:])
	if !ok {
		return false
	}
	for body != "" {
		line := body
		if j := strings.IndexByte(body, '\n'); j >= 0 {
			line, body = body[:j], body[j+1:]
		} else {
			body = ""
		}
		if _, ok := fenceLine(line); ok {
			return false
		}
	}
	return true
}
