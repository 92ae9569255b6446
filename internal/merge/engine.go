package merge

import (
	"fmt"
	"strings"
)

// format is what one document format adds to the join procedure every merger
// shares. The procedure calls observe after each append so that formats keep
// their state incrementally: nothing rescans the document, which keeps a merge
// linear in its size.
type format interface {
	// observe is told that doc[from:] was just appended.
	observe(doc string, from int)
	// restarts appends to out the offsets in doc where an incomplete record
	// (row, element, line) begins, outermost first; a continuation that
	// starts over from one of them repeats what follows it. (Appending lets
	// a join reuse one buffer.)
	restarts(out []int, doc string) []int
	// chatter describes the document's end for chatter removal.
	chatter(doc string) chatterCtx
	// stripStructure removes structure the continuation repeats (a header,
	// the enclosing keys of a JSON document) and names what it removed.
	stripStructure(doc, t string) (string, string)
	// adjust rewrites the new text before it is appended: escaping raw text
	// inside an open JSON string, renumbering records, separating a complete
	// row from the next. It names what it did.
	adjust(doc, rest string, last bool) (string, string)
	// verify reports whether appending rest to doc leaves the format intact
	// around the join.
	verify(doc, rest string, last bool) bool
	// point names where the document was cut, e.g. "row:250" or "line:1200".
	point(doc string) string
	// tokens reports whether token-level overlap matching suits the format.
	tokens() bool
	// finish repairs and validates the whole document once, and counts its
	// records.
	finish(res *Result)
}

// run merges chunks with the shared procedure: per continuation, remove
// chatter and repeated structure, detect the repeated overlap by the cascade,
// verify the join against the format and fall back to keeping the chunk whole
// when no candidate verifies.
func run(name string, f format, chunks []Chunk) Result {
	res := Result{Format: name, Strategy: name, Success: true, TruncationPoints: []string{}, Joins: []Join{}, Envelope: []Removal{}}
	total := 0
	for _, c := range chunks {
		total += len(c.Text)
	}
	var b strings.Builder
	b.Grow(total + 64)
	var errs []string
	wrapperOpen := false
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	ev := continuationHabit(sc, name, chunks)
	re, on, wraps := habitTotals(ev)
	// Which continuations open with a fence line, read once for all joins.
	opens := make([]bool, len(chunks))
	fenced := 0
	for i := 1; i < len(chunks); i++ {
		if opens[i] = fenceOpened(chunks[i].Text); opens[i] {
			fenced++
		}
	}
	for i, c := range chunks {
		if i == 0 {
			b.WriteString(c.Text)
			f.observe(b.String(), 0)
			continue
		}
		doc := b.String()
		last := i == len(chunks)-1
		res.TruncationPoints = append(res.TruncationPoints, f.point(doc))
		j := Join{Seq: c.Seq, Offset: len(doc)}
		if doc == "" {
			// Nothing before it to continue: the chunk is the document's
			// start and is taken whole, as a first chunk is.
			j.Method, j.Confidence, j.Stripped = methodNone, 1, []string{}
			res.Joins = append(res.Joins, j)
			b.WriteString(c.Text)
			f.observe(b.String(), 0)
			continue
		}

		sc.habit = habitAt(ev, re, on, i)
		sc.rewraps = rewrapsAt(ev, wraps, i)
		ctx := f.chatter(doc)
		ctx.wrapperOpen = wrapperOpen
		// The other continuations all open with a fence line (two at least).
		others := fenced
		if opens[i] {
			others--
		}
		ctx.wraps = others >= 2 && others == len(chunks)-2
		ctx.habit = sc.habit
		if doc != "" && (isLineFormat(name) || name == "csv") {
			ctx.end = doc[len(doc)-1]
			ctx.doc = doc
		}
		// Where the record in progress restarts: doc and the format's
		// state stay as they are until the join is written.
		sc.restarts = f.restarts(sc.restarts[:0], doc)
		var (
			t, note, rest, adj string
			notes              []string
			marked, ok         bool
			cut                int
			ov                 overlap
		)
		for attempt := 0; attempt < 2; attempt++ {
			cl := stripChatter(c.Text, ctx)
			t, notes = cl.text, cl.notes
			wrapperOpen = cl.open
			// An overlap prompt's echo that repeats the document's tail
			// places the join exactly: what follows the markers is new.
			// Any other echo is text the model wrote, judged by the
			// cascade like the rest.
			marked = cl.echoed && echoJoins(doc, cl.echo, cl.echoCut)
			if cl.echoed && !marked {
				t = echoText(doc, cl.echo) + t
			}
			note = ""
			ov = overlap{method: methodMarkers, confidence: 1}
			if !marked {
				t, note = f.stripStructure(doc, t)
				if note != "" {
					notes = append(notes, note)
				}
				ov = sc.findOverlap(doc, t, sc.restarts, f.tokens(), note != "", name)
			}
			rest, adj, cut, ok = settle(sc, f, doc, t, ov, sc.restarts, last)
			if ok || !cl.judged {
				break
			}
			// The line break after a preamble read the other way may
			// give a join the format verifies.
			ctx.flipBlank = true
		}
		if ok && adj != "" {
			notes = append(notes, adj)
		}
		switch {
		case !ok:
			j.Method, j.Confidence = methodFallback, 0
			errs = append(errs, fmt.Sprintf("chunk %d: no verified overlap at byte %d", c.Seq, len(doc)))
		case cut > 0 && cut == ov.cut:
			j.Method, j.Confidence = ov.method, ov.confidence
		case cut > 0:
			// Only the format's verification singled this repeat out.
			j.Method, j.Confidence = methodStructural, 0.8
		case marked:
			j.Method, j.Confidence = methodMarkers, 1
		case note != "":
			j.Method, j.Confidence = methodStructural, 0.9
		default:
			j.Method, j.Confidence = methodNone, 1
		}
		if ok && !marked {
			if l := keptRepeat(sc, doc, rest); l > 0 {
				// The join reads X X: the document may write it so, or the
				// model repeated X and nothing here tells which.
				j.Confidence = min(j.Confidence, 0.5)
				errs = append(errs, fmt.Sprintf("chunk %d: kept a repeat of the %d bytes before byte %d, which may be the model's", c.Seq, l, len(doc)))
			}
		}
		j.Removed = max(0, len(c.Text)-len(rest))
		j.Stripped = notes
		res.Joins = append(res.Joins, j)
		b.WriteString(rest)
		f.observe(b.String(), j.Offset)
	}
	res.Content = b.String()
	f.finish(&res)
	if res.Error != "" {
		errs = append(errs, res.Error)
	}
	if len(errs) > 0 {
		res.Success = false
		res.Error = strings.Join(errs, "; ")
	}
	return res
}

// isLineFormat reports whether the named format is merged line by line.
func isLineFormat(name string) bool {
	return name == "text" || name == "markdown" || name == "code" || name == "diff"
}

// settle picks the cut the format verifies: the cascade's answer first, then
// no cut, then every shorter exact repeat and every restart (of the format's
// restarts in doc). When none verifies, the chunk (less its chatter) is kept
// whole, so no text is ever lost.
func settle(sc *scratch, f format, doc, t string, ov overlap, restarts []int, last bool) (string, string, int, bool) {
	try := func(cut int) (string, string, bool) {
		rest, note := f.adjust(doc, t[cut:], last)
		return rest, note, f.verify(doc, rest, last)
	}
	if rest, note, ok := try(ov.cut); ok {
		if strings.Contains(note, noteRawEscaped) {
			// Raw text in a string is a repair: a long exact repeat of the
			// document's end that joins without it is the simpler reading.
			if bs := sc.borders(doc, t, overlapWindow); len(bs) > 0 && bs[0] >= strongOverlap && bs[0] != ov.cut {
				if r, n, ok := try(bs[0]); ok && !strings.Contains(n, noteRawEscaped) {
					return r, n, bs[0], true
				}
			}
		}
		return rest, note, ov.cut, true
	}
	if ov.cut != 0 {
		if rest, note, ok := try(0); ok {
			return rest, note, 0, true
		}
	}
	cands := sc.borders(doc, t, overlapWindow)
	for _, r := range restarts {
		if p := doc[r:]; r < len(doc) && strings.HasPrefix(t, p) {
			cands = append(cands, len(p))
		}
	}
	for _, l := range cands {
		if l == ov.cut {
			continue
		}
		if rest, note, ok := try(l); ok {
			return rest, note, l, true
		}
	}
	return t, "", 0, false
}

// keptRepeat returns the length of a repeat that the text appended at a
// join starts with and that the join kept: an exact copy of the document's
// last strongOverlap bytes or more, of content spanning a separator. Unless
// the job's other joins show a model that goes on (sc.habit < 0) or the
// document shows it writes the text twice (it did before, or the repeat
// makes its last line a copy of the line before: a record written twice),
// such a join cannot be verified either way, and the merge reports it. 0
// when there is none.
func keptRepeat(sc *scratch, doc, rest string) int {
	if sc.habit < 0 {
		return 0
	}
	bs := sc.borders(doc, rest, overlapWindow)
	if len(bs) == 0 || bs[0] < strongOverlap {
		return 0
	}
	l := bs[0]
	rep := doc[len(doc)-l:]
	if !substantive(rep) || !strings.ContainsAny(strings.TrimSpace(rep), " \t\n") || doubledBefore(doc, rep) || completesRepeatedLine(doc, rep) {
		return 0
	}
	return l
}
