package merge

import "strings"

// The envelope step separates what the model said about the document from
// the document, chunk by chunk, before any join: a fence wrapped around the
// answer or a continuation, the overlap prompt's markers around an echo, a
// preamble, a trailer. Each removal is recorded (Result.Envelope), so every
// byte the merge drops that is not a verified repeat can be seen.

// envCtx is what the envelope step reads a chunk by: the document's end
// (site), the format's rules, and what the other chunks show.
type envCtx struct {
	site
	fences fenceRules
	blank  blankRules
	// wrapperOpen: an earlier continuation opened a wrapper fence that has
	// not been closed yet.
	wrapperOpen bool
	// wraps: every other continuation of the job opens with a fence line,
	// so one that opens this one is the model's wrapper too.
	wraps bool
	// habit is how the model continues at the job's other joins (see
	// habits): 1 it starts its cut line over.
	habit int
	// flipBlank takes the other reading of the line break after a
	// preamble, for a join the first reading does not verify.
	flipBlank bool
}

// envelope is a chunk read by the envelope step: the document's part of it
// and what was set aside.
type envelope struct {
	text     string   // what remains: the document's part
	notes    []string // short notes of what went, for Join.Stripped
	removals []Removal
	open     bool // a wrapper fence is left open for a later chunk to close
	// echoed: the chunk opened with the overlap prompt's markers; echo is
	// the text between them, which the join verifies against the document.
	echoed bool
	echo   string
	// echoCut: the chunk ended before the end marker.
	echoCut bool
	// judged: a line break after a preamble was judged the separator's or
	// the text's (see blankLineIsNew); the other reading is the one
	// envCtx.flipBlank gives.
	judged bool
}

// remove records that removed, which the chunk held, was set aside.
func (e *envelope) remove(removed, why, note string, evidence ...string) {
	e.notes = append(e.notes, note)
	if removed != "" {
		e.removals = append(e.removals, Removal{Removed: removed, Why: why, Evidence: evidence})
	}
}

// readEnvelope removes what a model adds around a continuation that is not
// part of the document: a preamble line, the overlap markers (setting the
// echoed text aside for the join to check), a code fence wrapped around the
// chunk, and a closing remark.
func readEnvelope(t string, c envCtx) envelope {
	e := envelope{text: t}
	e.cutPreamble(c)
	e.cutMarkers()
	e.cutStrayEndMarker()
	opened := e.cutOpeningFence(c)
	if !e.echoed {
		// The markers inside the wrapper fence.
		e.cutMarkers()
	}
	trailed := e.cutTrailer()
	e.open = opened || c.wrapperOpen
	if e.open || trailed && !c.docFenced {
		e.cutClosingFence(c, opened)
	}
	return e
}

// cutPreamble removes a chatter line of its own and at most one blank line
// after it.
func (e *envelope) cutPreamble(c envCtx) {
	t := e.text
	i := strings.IndexByte(t, '\n')
	if i <= 0 || i > 200 {
		return
	}
	first := strings.TrimRight(t[:i], "\r")
	trimmed := strings.TrimSpace(first)
	// A chunk that is nothing but such a line followed by whitespace (the
	// document's own line break or indentation, all the model had left)
	// loses the line too: it introduces nothing of the document. A line
	// that starts over the document's partial line ("Here is a sample of" +
	// "Here is a sample of ... blocks:") is the document's.
	restart := len(c.partial) >= 2 && strings.HasPrefix(first, c.partial)
	if trimmed == "" || restart || !chatterLine(first, preambleStarts) || !introduces(trimmed) {
		return
	}
	t = t[i+1:]
	e.judged = strings.HasPrefix(t, "\n") || strings.HasPrefix(t, "\r\n")
	if blankLineIsNew(t, c) == c.flipBlank {
		if strings.HasPrefix(t, "\n") {
			t = t[1:]
		} else if strings.HasPrefix(t, "\r\n") {
			t = t[2:]
		}
	}
	e.remove(e.text[:len(e.text)-len(t)], WhyPreamble, "preamble")
	e.text = t
}

// cutMarkers sets aside the overlap prompt's echoed block; the join checks
// it against the document's tail.
func (e *envelope) cutMarkers() {
	echo, rest, complete, ok := cutMarkers(e.text)
	if !ok {
		return
	}
	removed := strings.Replace(e.text[:len(e.text)-len(rest)], echo, "", 1)
	e.remove(removed, WhyOverlapMarkers, "overlap markers")
	e.text, e.echo, e.echoed, e.echoCut = rest, echo, true, !complete
}

// cutStrayEndMarker removes an end marker with no beginning (the model
// echoed only part).
func (e *envelope) cutStrayEndMarker() {
	s := strings.TrimLeft(e.text, " \t")
	if !strings.HasPrefix(s, endOverlap) {
		return
	}
	t := strings.TrimPrefix(strings.TrimPrefix(s[len(endOverlap):], "\r"), "\n")
	e.remove(e.text[:len(e.text)-len(t)], WhyOverlapMarkers, "overlap marker")
	e.text = t
}

// cutOpeningFence removes a fence line opening the chunk that the model
// wrapped around it, reporting whether it did.
func (e *envelope) cutOpeningFence(c envCtx) bool {
	t := e.text
	i := strings.IndexByte(t, '\n')
	if i < 0 {
		return false
	}
	// Glued to a cut line, a wrapper starts the chunk's first byte; an
	// indented fence there goes on with the line.
	glued := !c.atLineStart && t != "" && (t[0] == ' ' || t[0] == '\t')
	info, ok := fenceLine(t[:i])
	if !ok || glued || restartsCutLine(t[:i], c) {
		return false
	}
	wrapper := wrapperFence(info, c) || !c.fences.inValues && !c.inFence && wrappedWhole(t, info, c)
	if !c.fences.inValues {
		// Either reading sets the fences of the rest of the chunk: the one
		// that leaves fewer fence lines with an info string inside an open
		// fence (where they are text, not the openers they look like) wins.
		keep := fenceAnomalies(c.partial+t, c.inFence)
		cut := fenceAnomalies(c.partial+t[i+1:], c.inFence)
		if keep != cut {
			wrapper = cut < keep
		}
	}
	if !wrapper {
		return false
	}
	e.remove(t[:i+1], WhyWrapperFence, "code fence")
	e.text = t[i+1:]
	return true
}

// cutTrailer removes a closing remark, reporting whether it did.
func (e *envelope) cutTrailer() bool {
	t, ok := stripTrailer(e.text)
	if ok {
		e.remove(e.text[len(t):], WhyTrailer, "closing remark")
		e.text = t
	}
	return ok
}

// cutClosingFence removes the wrapper's closing fence, unless it closes a
// fence of the document's own.
func (e *envelope) cutClosingFence(c envCtx, opened bool) {
	u, ok := stripClosingFence(e.text)
	if !ok || closesOwn(u, c) {
		return
	}
	note := "code fence"
	if opened {
		note = ""
	}
	e.removeNote(e.text[len(u):], WhyWrapperFence, note)
	e.text = u
	e.open = false
}

// removeNote is remove with the note left out when it is "" (the opening
// fence's note already stands for the pair).
func (e *envelope) removeNote(removed, why, note string) {
	if note != "" {
		e.notes = append(e.notes, note)
	}
	if removed != "" {
		e.removals = append(e.removals, Removal{Removed: removed, Why: why})
	}
}

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
