package merge

import "strings"

// fenceRules are how a format reads a code fence line around an answer or a
// continuation.
type fenceRules struct {
	// names are the info strings that name the format ("csv"; "markdown",
	// "md").
	names []string
	// tracked: the format follows the document's own fences (Markdown,
	// code), which its site reports.
	tracked bool
	// inValues: the document's own fences live inside quoted values (CSV),
	// so a fence line between values is the model's.
	inValues bool
	// lineStart is how a fence opening a continuation at a line start,
	// outside any fence, is read.
	lineStart wrapRule
	// answer is how a fence opening the whole answer is read.
	answer wrapRule
}

// wrapRule reads a fence line opening a continuation at a line start.
type wrapRule int

const (
	// wrapUnlessFenced: a wrapper unless the document uses fences itself.
	wrapUnlessFenced wrapRule = iota
	// wrapNamed: a wrapper only when it names the format (Markdown, whose
	// code blocks open with fences of their own).
	wrapNamed
	// wrapNever: never a wrapper (prose, where any line may be text).
	wrapNever
	// wrapAny: always a wrapper (a typed format, whose document never
	// opens with a fence).
	wrapAny
)

// wraps reports whether a fence of the given info string opening the whole
// answer is a wrapper under this rule.
func (r wrapRule) wraps(info string, f fenceRules) bool {
	switch r {
	case wrapAny:
		return true
	case wrapNamed:
		return f.named(info)
	}
	return false
}

// wrapsAnyAnswer reports whether a fence around any answer is the model's:
// the format's documents never open with one (every format but Markdown
// and prose), so what stands around it is never the document's either.
func (r fenceRules) wrapsAnyAnswer() bool { return r.answer == wrapAny }

// names reports whether a fence's info string names the format.
func (r fenceRules) named(info string) bool {
	for _, n := range r.names {
		if strings.EqualFold(info, n) {
			return true
		}
	}
	return false
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

// maybeFence reports whether line could be a fence line: at most three
// spaces, then a backtick or a tilde. It is fenceLine's quick first test.
func maybeFence(line string) bool {
	c, ok := leadByte(line)
	return ok && (c == '`' || c == '~')
}

// leadByte returns the byte a line's block starts with, after the spaces
// of its indentation (four at most: a fourth makes it no block the quick
// tests look for); false when the line holds no more.
func leadByte(line string) (byte, bool) {
	i := 0
	for i < len(line) && i < 4 && line[i] == ' ' {
		i++
	}
	if i == len(line) {
		return 0, false
	}
	return line[i], true
}

// closesOwn reports whether a fence line after body belongs to the
// document. A document whose fences live inside quoted values has them
// closed with the value, so after a body that leaves every value closed
// the fence is the wrapper's.
func closesOwn(body string, c envCtx) bool {
	if c.fences.inValues {
		// At the answer's end no value is left open: a fence line there
		// closes no value's fence, whatever the quotes before it (a
		// continuation may have started over from the top).
		return !c.last && (strings.Count(body, `"`)%2 == 1) != c.inQuote
	}
	if !restartsCutLine(body, c) {
		// The document's cut line goes on in body: a fence line it starts
		// ("```" + "sql\n", "`" + "``\n") counts.
		body = c.partial + body
	}
	return closesOwnFence(body, c.fence)
}

// fenceOfValue reports whether the fence line opening t, inside a quoted
// value of a document whose values carry fences, is the value's own: it
// closes a fence the value opened, or the value closes it before its own
// closing quote, with more text after it. A wrapper opens before
// everything the continuation writes and closes after it, the value's
// closing quote included.
func fenceOfValue(t string, c envCtx) bool {
	line, body, _ := strings.Cut(t, "\n")
	if open := c.fence; open.open() && open.step(line) && !open.open() {
		return true
	}
	var open fenceOpen
	open.step(line)
	for body != "" {
		var l string
		l, body, _ = strings.Cut(body, "\n")
		if closesValue(l) {
			return false
		}
		if open.step(l) && !open.open() {
			return strings.TrimSpace(body) != ""
		}
	}
	return false
}

// closesValue reports whether a line of a quoted value holds its closing
// quote: a quote not doubled, as quotes inside a value are.
func closesValue(line string) bool {
	for i := 0; i < len(line); i++ {
		if line[i] == '"' {
			if i+1 < len(line) && line[i+1] == '"' {
				i++
				continue
			}
			return true
		}
	}
	return false
}

// closesOwnFence reports whether a fence line after body would close a fence
// that the document opened (in before body, or inside body itself), in which
// case it belongs to the document.
func closesOwnFence(body string, open fenceOpen) bool {
	open.stepLines(body)
	return open.open()
}

// stepLines steps through each line of text (the last one too, complete
// or not).
func (f *fenceOpen) stepLines(text string) {
	for text != "" {
		line, rest, _ := strings.Cut(text, "\n")
		f.step(line)
		text = rest
	}
}

// fenceOpen is the code fence a document stands in: its character and its
// length (n 0: none). As CommonMark reads fences, only a bare fence line of
// the same character, at least as long, closes it: "~~~" inside a
// "```" block, or "```" inside a "````" one, is text. A fence may open
// inside a list item or a block quote ("1. ```", "> ```"): its lines then
// carry the container's indentation or markers, and a line that does not
// ends the container and the fence with it.
type fenceOpen struct {
	char byte
	n    int
	// quotes and indent are the container the fence opened in: its
	// block-quote markers and the column a list item's text starts at.
	quotes, indent int
}

// open reports whether a fence is open.
func (f fenceOpen) open() bool { return f.n > 0 }

// step reads one line (its line break gone), which opens or closes the
// fence when it is a fence line that can; it reports whether it did.
func (f *fenceOpen) step(line string) bool {
	line = strings.TrimRight(line, "\r")
	if f.n > 0 && (f.quotes > 0 || f.indent > 0) {
		rest, inside := f.inside(line)
		if !inside {
			// The container ended, and the fence with it.
			*f = fenceOpen{}
			return f.step(line)
		}
		line = rest
	}
	quotes, indent := 0, 0
	if f.n == 0 {
		if !maybeOpens(line) {
			return false
		}
		line, quotes, indent = container(line)
	}
	info, ok := fenceLine(line)
	if !ok {
		return false
	}
	l := strings.TrimLeft(line, " ")
	k := len(l) - len(strings.TrimLeft(l, l[:1]))
	switch {
	case f.n == 0:
		*f = fenceOpen{char: l[0], n: k, quotes: quotes, indent: indent}
	case l[0] == f.char && k >= f.n && info == "":
		*f = fenceOpen{}
	default:
		return false
	}
	return true
}

// maybeOpens reports whether line could open a fence: after at most three
// spaces, a fence's character or a container's marker. It is step's quick
// first test, for the lines of text that make up most documents.
func maybeOpens(line string) bool {
	c, ok := leadByte(line)
	return ok && (c == '`' || c == '~' || c == '>' || c == '-' || c == '*' || c == '+' || c >= '0' && c <= '9')
}

// inside reads a line of a fence opened in a container: the line less the
// container's markers and indentation, and whether it still stands in the
// container (a blank line does, in a list item).
func (f fenceOpen) inside(line string) (string, bool) {
	for q := 0; q < f.quotes; q++ {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || !strings.HasPrefix(t, ">") {
			return "", false
		}
		line = strings.TrimPrefix(t[1:], " ")
	}
	if strings.TrimSpace(line) == "" {
		return "", true
	}
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) < f.indent {
		return "", false
	}
	return line[f.indent:], true
}

// container reads the block-quote markers and list-item markers a line
// opens with, as CommonMark nests them, and returns the rest of the line,
// the number of quote markers and the column (after them) the list item's
// text starts at, 0 when the line opens no list item.
func container(line string) (rest string, quotes, indent int) {
	for {
		t := strings.TrimLeft(line, " ")
		lead := len(line) - len(t)
		if lead > 3 || t == "" {
			return line, quotes, indent
		}
		if t[0] == '>' && indent == 0 {
			quotes++
			line = strings.TrimPrefix(t[1:], " ")
			continue
		}
		m := listMarkerLen(t)
		if m == 0 {
			return line, quotes, indent
		}
		sp := len(t[m:]) - len(strings.TrimLeft(t[m:], " "))
		if sp > 4 {
			sp = 1
		}
		indent += lead + m + sp
		line = t[m+sp:]
	}
}

// listMarkerLen is the length of the list item marker t opens with ("-",
// "*", "+", "1.", "1)"), followed by a space; 0 when it opens with none.
func listMarkerLen(t string) int {
	if _, _, size := orderedMarker(t); size > 0 {
		return size
	}
	if len(t) > 1 && strings.IndexByte("-*+", t[0]) >= 0 && t[1] == ' ' {
		return 1
	}
	return 0
}

// languageInfo reports whether a fence's info string may be a wrapper's:
// a wrapper names a language, if anything ("go", "c++", "objective-c"), so a
// fence line with words after it ("```  with  the  relevant"), a number
// ("0" + "~~~~~0") or punctuation ("```uname -a" + "```)") is text.
func languageInfo(info string) bool {
	for i := 0; i < len(info); i++ {
		c := info[i]
		if !isLetter(c) && (i == 0 || !isWordByte(c) && strings.IndexByte("+#.-", c) < 0) {
			return false
		}
	}
	return true
}

// wrapperFence decides whether a fence opening a continuation was added
// around the chunk rather than being part of the document.
func wrapperFence(info string, c envCtx) bool {
	if c.wraps {
		return true
	}
	if c.noFence {
		return wrapperInValue(info, c)
	}
	if !c.atLineStart {
		return wrapperAfterCut(info, c)
	}
	if c.inFence {
		// Opening a fence while one is open would close it; a model reopening
		// the fence it was writing in is restating its wrapper.
		return info != ""
	}
	switch c.fences.lineStart {
	case wrapNamed:
		return c.fences.named(info)
	case wrapNever:
		return false
	}
	return !c.docFenced
}

// wrapperInValue decides a fence inside a value of a document that carries
// fences: only a fence naming the document's own format is a wrapper, or
// one glued to text of the value's line (a fence starts its line, after at
// most some indentation).
func wrapperInValue(info string, c envCtx) bool {
	if c.fences.named(info) {
		return true
	}
	p := c.partial
	if i := strings.LastIndexByte(p, '"'); i >= 0 {
		p = p[i+1:]
	}
	p = strings.TrimLeft(p, " ")
	return !c.atLineStart && p != "" && strings.Trim(p, "`") != "" && strings.Trim(p, "~") != ""
}

// wrapperAfterCut decides a fence glued to a cut line. A fence must start a
// line, so one glued to a cut line is a wrapper, unless the cut line is
// itself the start of a fence, and even then when it names the document's
// format: "`" + "```markdown" would be a four-backtick fence for Markdown
// inside Markdown.
func wrapperAfterCut(info string, c envCtx) bool {
	p := strings.TrimLeft(c.partial, " \t")
	if p == "" && c.inFence && info == "" {
		// After the indentation of a document inside an open fence, a
		// bare fence closes it ("1.\n\t```\n\t" + "```").
		return false
	}
	if c.fences.lineStart == wrapNamed && p != "" && containerMarkers(p) {
		// After a block quote's or a list item's marker a fence starts the
		// container's code.
		return c.fences.named(info)
	}
	return p == "" || strings.Trim(p, "`") != "" && strings.Trim(p, "~") != "" || c.fences.named(info)
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
		if k == 0 && !looksLikeRemark(strings.TrimRight(t[:i], "\r"), false) {
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
			_, _, size := orderedMarker(p)
			if size == 0 {
				return false
			}
			p = p[size+1:]
		default:
			return false
		}
		p = strings.TrimLeft(p, " ")
	}
	return true
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
func restartsCutLine(t string, c envCtx) bool {
	p := c.partial
	return !c.atLineStart && len(p) >= 2 && strings.HasPrefix(t, p) && (strings.Trim(p, "`~ ") != "" || c.habit > 0)
}

// wrappedWhole reports whether t, which opens with a fence line of the
// given info string, is a chunk wrapped whole: a bare fence line (or one
// naming the document's format) opens it, a bare fence line closes it, and
// no fence line stands between them. A document's own code block does not
// open a continuation and end the document at once.
func wrappedWhole(t, info string, c envCtx) bool {
	if info != "" && !c.fences.named(info) {
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
