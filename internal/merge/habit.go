package merge

import "strings"

// habits is what the chunks show of how the model continues a cut line,
// join by join (see readHabits). A model continues the same way from one
// boundary to the next (same model, same prompt), so the other joins decide
// the ones that cannot tell by themselves: a partial line of indentation or
// markers that the continuation also starts with, a repeated line that the
// document may have written twice.
type habits struct {
	// ev[i] is what join i (chunk i's) shows, 0 when nothing.
	ev []int8
	// re, on and wraps are habitTotals of ev.
	re, on, wraps int
	// mid[i]: join i's repeat starts inside a line (or its start is not
	// known: a re-wrapped one); mids counts them, lineReps the repeats
	// that start at a line's start.
	mid            []bool
	mids, lineReps int
}

// wholeLines reports whether the joins other than join i that repeat, two
// at least, all start over at a line's start (a model that restarts
// lines), so that their habit says nothing of a short repeat from inside
// a line.
func (h habits) wholeLines(i int) bool {
	mids, lines := h.mids, h.lineReps
	switch {
	case h.mid[i]:
		mids--
	case h.ev[i] == 1:
		lines--
	}
	return mids == 0 && lines >= 2
}

// at is the habit the joins other than join i show, and whether they
// re-wrap what they repeat.
func (h habits) at(i int) (habit int, rewraps bool) {
	return habitAt(h.ev, h.re, h.on, i), rewrapsAt(h.ev, h.wraps, i)
}

// readHabits reads, from the chunks alone (less their envelope), how the
// model continues a cut line where that is plain to see: where the previous
// chunk ends with a partial line, a continuation that starts with that line
// (two letters or digits of it), with a longer repeat of the chunk's end,
// with a line of it or with a re-wrapped repeat starts over (1); one that
// shares at most two bytes with the end goes on (-1). It reads a bounded
// window per join.
func readHabits(buf *buffers, tr traits, chunks []Chunk) habits {
	ev, mid := make([]int8, len(chunks)), make([]bool, len(chunks))
	if len(chunks) < 2 {
		return habits{ev: ev, mid: mid}
	}
	// prev stands for the end of the document so far: the chunks' text,
	// each less the repeat it was seen to start with (the last habitWindow
	// bytes of it, kept in one buffer).
	const habitWindow = 4 << 10
	win := buf.win[:0]
	if cap(win) < 2*habitWindow {
		win = make([]byte, 0, 2*habitWindow)
	}
	win = append(win, tail(chunks[0].Text, habitWindow)...)
	for i := 1; i < len(chunks); i++ {
		prev := bytesView(win)
		p := prev[strings.LastIndexByte(prev, '\n')+1:]
		// What the model wrote around the text goes first, as the merge
		// takes it away.
		// (The fences the window shows open, for a format whose site
		// reports them, as the merge's does.)
		var fence fenceOpen
		if tr.fences.tracked {
			fence.stepLines(prev[:len(prev)-len(p)])
		}
		e := readEnvelope(chunks[i].Text, envCtx{site: site{partial: p, inFence: fence.open(), fence: fence}, fences: tr.fences, blank: tr.blank})
		t := e.text
		var cut int
		ev[i], cut = joinHabit(buf, prev, p, t, chunks[i].Text)
		if e.echoed {
			// The overlap prompt's markers announced the repeat: the join
			// shows nothing of what the model does unannounced.
			ev[i] = 0
		}
		switch start := len(prev) - cut; {
		case ev[i] == 1:
			mid[i] = cut > 0 && !lineStartAt(prev, start)
		case ev[i] == rewrapped || ev[i] == weakRepeat:
			mid[i] = true
		}
		add := tail(t[cut:], habitWindow)
		if keep := habitWindow - len(add); len(win) > keep {
			// Keep the window's last bytes at its front (prev, a view of
			// it, is not used after this).
			n := copy(win, win[len(win)-max(keep, 0):])
			win = win[:n]
		}
		win = append(win, add...)
	}
	buf.win = win
	h := habits{ev: ev, mid: mid}
	h.re, h.on, h.wraps = habitTotals(ev)
	for i, m := range mid {
		switch {
		case m:
			h.mids++
		case ev[i] == 1:
			h.lineReps++
		}
	}
	return h
}

// joinHabit is what one join shows: a continuation t (raw, before its
// envelope was read) of a document ending prev, whose partial last line is
// p. It returns the evidence and how much of t repeats prev.
func joinHabit(buf *buffers, prev, p, t, raw string) (int8, int) {
	// A continuation after a complete line (or blank indentation) shows no
	// restart and no going on, only a repeat if it has one.
	blank := strings.TrimSpace(p) == ""
	bs := buf.borders(prev, t, len(prev))
	switch {
	case t == "":
		// Nothing written.
		return 0, 0
	case !blank && strings.HasPrefix(t, p):
		var ev int8
		cut := 0
		if alnumCount(p) >= 2 {
			ev, cut = 1, len(p)
		}
		if len(bs) > 0 && bs[0] > cut && alnumCount(prev[len(prev)-bs[0]:]) >= 2 {
			ev, cut = 1, bs[0]
		}
		return ev, cut
	case len(bs) > 0 && bs[0] >= 4 && alnumCount(prev[len(prev)-bs[0]:]) >= 2 &&
		(bs[0] >= strongOverlap || wordBoundary(prev, len(prev)-bs[0])):
		// A repeat of the end that starts where a token does, or a long
		// one. A short one from inside a word is as likely the document's
		// own period: "queu|e merg" + "e merge" of "queue merge merge".
		return 1, bs[0]
	case !blank && restatesLine(prev, t):
		// Structure restated first (a header, the line before). Not after a
		// complete line, where the line may be the document's next copy of
		// it (records that share a line).
		return 1, 0
	}
	short := len(bs) > 0 && bs[0] >= 3
	// A re-wrapped repeat is evidence, a shorter one (found only with habit
	// 1) half of it. With rewraps false the two searches differ only in the
	// shortest repeat they take, so the shorter finds every repeat the
	// longer one does, at the same cut: the longer one runs only after it
	// found one.
	if n, _ := buf.whitespaceOverlap(prev, t, 1, false); n > 0 {
		if n, _ := buf.whitespaceOverlap(prev, t, 0, false); n > 0 {
			return rewrapped, n
		}
		return weakRepeat, n
	}
	if !short && !blank && !fenceFromCutLine(raw, p) {
		// A byte or two in common is coincidence.
		return -1, 0
	}
	return 0, 0
}

// fenceFromCutLine reports whether chunk opens with a fence line that
// starts with the cut line p and goes on ("```" + "```sql"): a wrapper, or
// the line started over; which one the habit is to tell, not to show.
func fenceFromCutLine(chunk, p string) bool {
	fl, _, _ := strings.Cut(chunk, "\n")
	if len(fl) <= len(p) || !strings.HasPrefix(fl, p) {
		return false
	}
	_, ok := fenceLine(fl)
	return ok
}

// habitTotals weighs the evidence of every join once, so that each join's
// habitAt and rewrapsAt only take its own out: for habitAt a join that
// starts over or goes on counts two, a weak repeat one; for rewrapsAt,
// wraps is the joins that re-wrap their repeat less those that repeat it as
// it is.
func habitTotals(ev []int8) (re, on, wraps int) {
	for _, e := range ev {
		switch e {
		case 1:
			re += 2
			wraps--
		case rewrapped:
			re += 2
			wraps++
		case weakRepeat:
			re++
			wraps++
		case -1:
			on += 2
		}
	}
	return re, on, wraps
}

// rewrapsAt reports whether the joins other than join i that repeat re-wrap
// what they repeat more often than they repeat it as it is. wraps is
// habitTotals' for all the joins.
func rewrapsAt(ev []int8, wraps, i int) bool {
	switch ev[i] {
	case rewrapped, weakRepeat:
		wraps--
	case 1:
		wraps++
	}
	return wraps > 0
}

// Evidence of a join beyond 1 (starts over, repeating what it wrote as it
// is) and -1 (goes on): rewrapped, a re-wrapped repeat; weakRepeat, a
// re-wrapped repeat too short to be certain of, which counts half.
const (
	weakRepeat = 2
	rewrapped  = 3
)

// habitAt is the habit the joins other than join i show: 1 when they start
// over (three times as often as they go on, at least), -1 when they go on
// (as much more often), 0 when they show neither or both alike. re and on
// are habitTotals of all the joins.
//
// Join i's own repeat counts half (a weak one not at all). A model may
// repeat at one cut and not at another, so one other join that goes on does
// not make a repeat that starts at a token here the document's own ("two
// holes made " + "holes made near"); two do, as a repeat here may be a
// coincidence.
func habitAt(ev []int8, re, on, i int) int {
	switch ev[i] {
	case 1, rewrapped, weakRepeat:
		re--
	case -1:
		on -= 2
	}
	// A join or two may go the other way (a boundary where there was
	// nothing to repeat yet, a coincidence): three to one decides.
	switch {
	case re >= 2 && re >= 3*on:
		return 1
	case on > 0 && on >= 3*re:
		return -1
	}
	return 0
}

// restatesLine reports whether t starts with a whole line of eight bytes or
// more, two of them letters or digits, that stands as a whole line in prev.
func restatesLine(prev, t string) bool {
	i := strings.IndexByte(t, '\n')
	if i < 8 {
		return false
	}
	l := t[:i+1]
	if alnumCount(l) < 2 {
		return false
	}
	// Only line starts can match, so only they are tried: a search for
	// the line (or its head) stops at every place its first bytes occur,
	// which in prose of a small vocabulary is most words.
	for j := 0; ; {
		if strings.HasPrefix(prev[j:], l) {
			return true
		}
		k := strings.IndexByte(prev[j:], '\n')
		if k < 0 {
			return false
		}
		j += k + 1
	}
}
