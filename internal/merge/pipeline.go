package merge

import (
	"fmt"
	"strings"
)

// A merge is a pipeline of named steps, run chunk by chunk and then once on
// the whole document:
//
//	step         file                what it accepts                                          confidence
//	envelope     envelope*.go        per chunk, what the model said about the document:       (recorded in Result.Envelope)
//	                                 wrapper fences, overlap markers, preamble, trailer
//	join         join.go             the cascade below, first step with evidence wins
//	  markers    envelope_markers.go the overlap prompt's echo equals the document's tail      confCertain 1.0
//	  structure  format_*.go         a restated header or enclosing keys removed first         confStructure 0.9
//	  indentation join_restart.go    a partial line of indentation the continuation restarts   confStructure 0.9
//	  restart    join_restart.go     the record in progress started over from its start        confRestart 0.95
//	  exact      join_exact.go       an exact repeat of the document's end, significant         0.7 + 0.3·min(len,48)/48
//	                                 (token boundary, content, not the document's own doubling);
//	                                 text written before, where its next copy glues a new token confGlue 0.75
//	  whitespace join_whitespace.go  a repeat equal up to whitespace (re-wrapped, re-indented)  confWhitespace 0.9
//	  token      join_token.go       a repeat with its punctuation changed, aligned token by   share of aligned tokens ≥ 0.8
//	                                 token (prose); its words all the document's last words
//	  glue       join_glue.go        a short repeat, by the words either reading would glue    confGlue 0.75
//	  lead       join_lead.go        a bare partial line restarted, by the line starts it      confLead 0.8
//	                                 would leave
//	settle       settle.go           the first cut the format verifies (the cascade's, none,   confVerified 0.8 when only the
//	                                 every shorter repeat, every restart); none: kept whole     format singled it out; 0 fallback
//	repair       format.repair       completes what the last chunk left open (JSON)
//	validate     format.validate     checks the whole document, counts records
//
// Every step reads its input as an argument (envCtx, joinCtx); formats
// differ only through the format interface and its traits.

// mergeRun is one merge in progress: the document so far, the format's
// state, and what the chunks show of the model's habits.
type mergeRun struct {
	f      format
	tr     traits
	chunks []Chunk
	b      strings.Builder
	buf    *buffers
	habits habits
	// opens says which continuations open with a fence line, read once
	// for all joins; fenced counts them.
	opens  []bool
	fenced int
	// talkers says which continuations open with a line that reads as a
	// remark by itself (its form and words); talking counts them.
	talkers []bool
	talking int
	// alike says which continuations open with the same remark-shaped
	// line as another continuation: a model's stock phrase, which the
	// document, cut at arbitrary places, does not repeat there.
	alike []bool
	// wrapperOpen: a continuation opened a wrapper fence that no later one
	// has closed yet; whole: the answer's first chunk opened it, around
	// the whole answer.
	wrapperOpen, whole bool
	// answerFence is the fence the answer's first chunk opened (whole).
	answerFence fenceOpen
	// keepAnswerFence: a fence opening the answer is the document's own,
	// not a wrapper (see run).
	keepAnswerFence bool
	// partial: the answer is still being written (Options.Partial), so its
	// last chunk is not its end.
	partial bool
	// end is the answer's last chunk with any text: a model that had
	// nothing left to write ended the answer in the chunk before.
	end  int
	res  Result
	errs []string
}

// run merges chunks with the pipeline. newFormat returns fresh format
// state; partial: the answer is still being written.
//
// A fence that opens the answer is read as a wrapper around it, and is
// read again as a block of the document's own when that turns out wrong:
// its bare close comes before the end, with more document after it.
func run(name string, newFormat func() format, chunks []Chunk, partial bool) Result {
	buf := bufferPool.Get().(*buffers)
	defer bufferPool.Put(buf)
	m := newRun(name, newFormat(), chunks, partial, buf)
	m.merge()
	if m.whole && closedMidway(m.b.String(), m.tr.fences.inValues, m.tr.fences.wrapsAnyAnswer()) {
		m = newRun(name, newFormat(), chunks, partial, buf)
		m.keepAnswerFence = true
		m.merge()
	}
	return m.finish()
}

// newRun returns the state of one merge.
func newRun(name string, f format, chunks []Chunk, partial bool, buf *buffers) *mergeRun {
	m := &mergeRun{
		f: f, tr: f.traits(), chunks: chunks, buf: buf, partial: partial,
		res: Result{Format: name, Strategy: name, Success: true, TruncationPoints: []string{}, Joins: []Join{}, Envelope: []Removal{}},
	}
	total := 0
	for _, c := range chunks {
		total += len(c.Text)
	}
	m.b.Grow(total + 64)
	m.habits = readHabits(buf, m.tr, chunks)
	m.opens, m.talkers = make([]bool, len(chunks)), make([]bool, len(chunks))
	for i := 1; i < len(chunks); i++ {
		if m.opens[i] = fenceOpened(chunks[i].Text); m.opens[i] {
			m.fenced++
		}
		if m.talkers[i] = opensTalking(chunks[i].Text); m.talkers[i] {
			m.talking++
		}
	}
	m.alike = opensAlike(chunks)
	m.end = len(chunks) - 1
	for m.end > 0 && strings.TrimSpace(chunks[m.end].Text) == "" {
		m.end--
	}
	return m
}

// merge appends every chunk to the document.
func (m *mergeRun) merge() {
	for i := range m.chunks {
		m.add(i)
	}
}

// add appends chunk i to the document.
func (m *mergeRun) add(i int) {
	c := m.chunks[i]
	if i == 0 {
		env := m.envCtx(0, "")
		env.keepAnswerFence = m.keepAnswerFence
		if len(m.chunks) > 1 {
			env.lookahead = head(m.chunks[1].Text, leadWindow)
		}
		e := readAnswerStart(c.Text, env)
		m.wrapperOpen, m.whole, m.answerFence = e.open, e.open, e.answerFence
		m.record(c.Seq, e.removals)
		m.b.WriteString(e.text)
		m.f.observe(m.b.String(), 0)
		return
	}
	doc := m.b.String()
	m.res.TruncationPoints = append(m.res.TruncationPoints, m.f.point(doc))
	j := Join{Seq: c.Seq, Offset: len(doc)}
	if doc == "" {
		// Nothing before it to continue: the chunk is the document's start
		// and is taken whole, as a first chunk is.
		j.Method, j.Confidence, j.Stripped = methodNone, confCertain, []string{}
		m.res.Joins = append(m.res.Joins, j)
		m.b.WriteString(c.Text)
		m.f.observe(m.b.String(), 0)
		return
	}
	jd := m.join(i, doc)
	m.describe(&j, jd, doc)
	j.Removed = max(0, len(c.Text)-len(jd.rest))
	j.Stripped = jd.notes
	m.res.Joins = append(m.res.Joins, j)
	m.record(c.Seq, jd.removals)
	m.b.WriteString(jd.rest)
	m.f.observe(m.b.String(), j.Offset)
}

// record adds the envelope step's removals from chunk seq to the result.
func (m *mergeRun) record(seq int, removals []Removal) {
	for _, r := range removals {
		r.Chunk = seq
		m.res.Envelope = append(m.res.Envelope, r)
	}
}

// joined is how a continuation was joined: what is appended, and the
// evidence for the join's description.
type joined struct {
	ctx      joinCtx
	rest     string // what is appended to the document
	notes    []string
	removals []Removal
	ov       overlap // the cascade's answer
	cut      int     // the cut settle chose
	ok       bool    // a cut verified
	marked   bool    // the overlap prompt's echo placed the join
	note     string  // the repeated structure removed, if any
	adj      string  // what the format's adjust did
	open     bool    // the reading leaves a wrapper fence open
	opened   bool    // the chunk opened a wrapper fence of its own
}

// join reads chunk i's envelope and joins what remains to doc. Where the
// envelope step was unsure, the other reading is joined too and
// verification decides (see readings).
func (m *mergeRun) join(i int, doc string) joined {
	env := m.envCtx(i, doc)
	jc := joinCtx{doc: doc, tr: m.tr, buf: m.buf}
	jc.habit, jc.rewraps = m.habits.at(i)
	jc.wholeLines = m.habits.wholeLines(i)
	// Where the record in progress restarts: doc and the format's state
	// stay as they are until the join is written.
	m.buf.restarts = m.f.restarts(m.buf.restarts[:0], doc)
	jc.restarts = m.buf.restarts
	jd := m.readings(i, jc, env)
	m.wrapperOpen = jd.open
	if jd.opened {
		// A continuation's own wrapper is closed by its own fence.
		m.answerFence = fenceOpen{}
	}
	if jd.ok && jd.adj != "" {
		jd.notes = append(jd.notes, jd.adj)
	}
	return jd
}

// readings joins the envelope step's reading of chunk i and, where it was
// unsure, the other one. A preamble's line break read one way may leave a
// join no format verifies; it is then read the other way. An uncertain
// remark kept is removed when the join verifies only without it (or finds
// the document's repeat only without it: the line stood between the two);
// a remark removed is kept when the join verifies only with it.
func (m *mergeRun) readings(i int, jc joinCtx, env envCtx) joined {
	text, last := m.chunks[i].Text, i == len(m.chunks)-1
	read := func(env envCtx) (envelope, joined) {
		e := readEnvelope(text, env)
		return e, m.joinReading(jc, e, last)
	}
	e, jd := read(env)
	if e.judged {
		// The other reading of the line break is taken when the first
		// leaves a join no format verifies, when only it finds the
		// document's repeat (the line break stood between the two), or
		// when only it joins without a repair (a line break kept inside
		// an open JSON string must be escaped: the model wrote it as the
		// preamble's separator, not as the string's text).
		flip := env
		flip.flipBlank = true
		fe, fjd := read(flip)
		if !jd.ok || fjd.repeats() && !jd.repeats() || fjd.ok && jd.repaired() && !fjd.repaired() {
			e, jd, env = fe, fjd, flip
		}
	}
	for _, alt := range alternatives(e, env) {
		ae, ajd := read(alt.env)
		if alt.better(jd, ajd) {
			if alt.evidence != "" {
				ajd.evidenced(alt.why, alt.evidence)
			}
			e, jd = ae, ajd
		}
	}
	return jd
}

// alternative is another reading of a chunk's envelope and when it wins.
type alternative struct {
	env envCtx
	// better reports whether the alternative's join (b) wins over the
	// first reading's (a).
	better func(a, b joined) bool
	// why and evidence name the removal the alternative makes and the
	// evidence its verification adds.
	why, evidence string
}

// alternatives lists the other readings of envelope e worth joining.
func alternatives(e envelope, env envCtx) []alternative {
	var out []alternative
	verifiedOnly := func(a, b joined) bool { return b.ok && !a.ok }
	removeWins := func(a, b joined) bool {
		return b.ok && (!a.ok || b.repeats() && !a.repeats() || a.repaired() && !b.repaired())
	}
	if p := e.preamble; !p.removed && p.uncertain() {
		alt := env
		alt.preamble = removeMaybe
		out = append(out, alternative{alt, removeWins, WhyPreamble, "joins only without it (or without a repair)"})
	} else if p.removed {
		alt := env
		alt.preamble = keepRemark
		out = append(out, alternative{alt, verifiedOnly, "", ""})
	}
	if t := e.trailer; !t.removed && t.uncertain() {
		alt := env
		alt.trailer = removeMaybe
		out = append(out, alternative{alt, verifiedOnly, WhyTrailer, "joins only without it"})
	} else if t.removed {
		alt := env
		alt.trailer = keepRemark
		out = append(out, alternative{alt, verifiedOnly, "", ""})
	}
	return out
}

// repeats reports whether the join verified a repeat of the document (a
// cut, or the overlap prompt's echo).
func (jd joined) repeats() bool { return jd.ok && (jd.marked || jd.cut > 0) }

// repaired reports whether the join verified only by repairing the text:
// raw text escaped into the string it went on with.
func (jd joined) repaired() bool { return jd.ok && strings.Contains(jd.adj, noteRawEscaped) }

// evidenced adds evidence to the join's removal of the given kind.
func (jd *joined) evidenced(why, evidence string) {
	for k := range jd.removals {
		if jd.removals[k].Why == why {
			jd.removals[k].Evidence = append(jd.removals[k].Evidence, evidence)
		}
	}
}

// envCtx is the envelope step's context for chunk i of a document doc.
func (m *mergeRun) envCtx(i int, doc string) envCtx {
	c := envCtx{site: m.f.site(doc), fences: m.tr.fences, blank: m.tr.blank, wrapperOpen: m.wrapperOpen, whole: m.whole, answerFence: m.answerFence}
	c.last = i == m.end && !m.partial
	c.syntax, c.markup, c.proseAt, c.endBlanks = m.tr.syntax, m.tr.markup, m.tr.proseAt, m.tr.endBlanks
	c.heading = m.tr.heading
	c.breaks = func(line, after string) bool { return m.f.breaks(doc, line, after) }
	c.endBreaks = func(body, line string) bool { return m.f.endBreaks(doc, body, line) }
	last := c.last
	c.lineBreak = func(t string) (bool, bool) { return m.f.lineBreak(doc, t, last) }
	if o, ok := m.f.(blankLineOwer); ok {
		c.owesBlankLine = func(body string) bool { return o.owesBlankLine(doc, body) }
	}
	// The other continuations all open with a fence line (two at least).
	others := m.fenced
	if m.opens[i] {
		others--
	}
	c.wraps = others >= 2 && others == len(m.chunks)-2
	c.habit, _ = m.habits.at(i)
	// Most other continuations open with a remark (two at least): a model
	// that talks before it goes on does so at every cut.
	talkers := m.talking
	if m.talkers[i] {
		talkers--
	}
	c.talks = talkers >= 2 && 2*talkers >= len(m.chunks)-2
	c.alike = m.alike[i]
	return c
}

// joinReading joins one reading of a chunk's envelope: an overlap prompt's
// echo that repeats the document's tail places the join exactly (what
// follows the markers is new); any other echo is text the model wrote,
// judged by the cascade like the rest.
func (m *mergeRun) joinReading(jc joinCtx, e envelope, last bool) joined {
	jd := joined{notes: e.notes, removals: e.removals, open: e.open, opened: e.opened}
	t := e.text
	jd.marked = e.echoed && echoJoins(jc.doc, e.echo, e.echoCut)
	if e.echoed && !jd.marked {
		t = echoText(jc.doc, e.echo) + t
	}
	jd.ov = overlap{method: methodMarkers, confidence: confCertain}
	jc.next, jc.toldOver, jc.afterRemark = t, toldOver(e.removals), e.preamble.removed
	if jc.toldOver || toldRepeat(e.removals) {
		// The model says it repeats here, or starts over, whatever it
		// does at the other joins.
		jc.habit = 1
	}
	if !jd.marked { // else the echo placed the join
		jd.ov, t = m.joinCascade(&jc, &jd, t)
	}
	jc.next = t
	jd.rest, jd.adj, jd.cut, jd.ok = settle(&jc, m.f, jd.ov, last)
	jd.ctx = jc
	return jd
}

// joinCascade joins a continuation t the echo did not place: a restart of the
// whole document as it stands, or the cascade after any restated structure
// is taken away; it returns the continuation as joined.
func (m *mergeRun) joinCascade(jc *joinCtx, jd *joined, t string) (overlap, string) {
	if ov, ok := restatedWhole(jc); ok {
		// The continuation starts the document over, structure and all:
		// no restated structure to take away first.
		return ov, t
	}
	t, jd.note = m.f.stripStructure(jc.doc, t)
	if jd.note != "" {
		jd.notes = append(jd.notes, jd.note)
	}
	jc.next, jc.bias = t, jd.note != ""
	return findOverlap(jc), t
}

// describe sets the join's method and confidence from how it was joined,
// and reports a join it could not verify.
func (m *mergeRun) describe(j *Join, jd joined, doc string) {
	switch {
	case !jd.ok:
		j.Method, j.Confidence = methodFallback, confNone
		m.errs = append(m.errs, fmt.Sprintf("chunk %d: no verified overlap at byte %d", j.Seq, len(doc)))
	case jd.cut > 0 && jd.cut == jd.ov.cut:
		j.Method, j.Confidence = jd.ov.method, jd.ov.confidence
	case jd.cut > 0:
		// Only the format's verification singled this repeat out.
		j.Method, j.Confidence = methodStructural, confVerified
	case jd.marked:
		j.Method, j.Confidence = methodMarkers, confCertain
	case jd.note != "":
		j.Method, j.Confidence = methodStructural, confStructure
	default:
		j.Method, j.Confidence = methodNone, confCertain
	}
	if jd.ok && !jd.marked {
		if l := keptRepeat(&jd.ctx, jd.rest); l > 0 {
			// The join reads X X: the document may write it so, or the
			// model repeated X and nothing here tells which.
			j.Confidence = min(j.Confidence, confUnverified)
			m.errs = append(m.errs, fmt.Sprintf("chunk %d: kept a repeat of the %d bytes before byte %d, which may be the model's", j.Seq, l, len(doc)))
		}
	}
}

// finish repairs and validates the whole document.
func (m *mergeRun) finish() Result {
	res := m.res
	res.Content = m.b.String()
	m.f.repair(&res)
	m.f.validate(&res)
	errs := m.errs
	if res.Error != "" {
		errs = append(errs, res.Error)
	}
	if len(errs) > 0 {
		res.Success = false
		res.Error = strings.Join(errs, "; ")
	}
	return res
}
