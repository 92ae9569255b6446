package merge

// overlapWindow bounds how far back into the document and how far into a
// continuation the overlap search looks. A model repeats at most a few lines
// of what it already wrote, so a window of this size finds every real repeat
// while keeping each join O(window) and the whole merge linear.
const overlapWindow = 16 << 10

// strongOverlap is the length from which an exact repeat is cut even when it
// does not start at a token boundary: coincidental repeats this long do not
// happen in real text at a random cut.
const strongOverlap = 24

// minOverlap is the shortest repeat that is cut at all; shorter ones are kept,
// since a continuation may legitimately start with what the document ends with.
const minOverlap = 3

// Join methods, in cascade order. A method names the evidence that placed
// a join.
const (
	methodNone       = "none"
	methodExact      = "exact"
	methodWhitespace = "whitespace"
	// methodReproduction: the continuation reproduced the document from a
	// line start, whitespace aside, whatever its length.
	methodReproduction = "reproduction"
	methodToken        = "token"
	methodStructural   = "structural"
	methodFallback     = "fallback"
	// methodMarkers: the echo between an overlap prompt's markers repeated
	// the document's tail exactly, which placed the join.
	methodMarkers = "overlap_markers"
)

// Confidences, named for the evidence behind them. A join's confidence is
// one of these, or computed by its step from what it measured (an exact
// repeat's length, the share of aligned tokens).
const (
	// confCertain: nothing to doubt (no repeat, or the overlap prompt's
	// echo matched the document's tail exactly).
	confCertain = 1.0
	// confRestart: the continuation starts the record in progress over.
	confRestart = 0.95
	// confStructure: repeated structure (a header, enclosing keys) was
	// removed, or a partial line of indentation restarted.
	confStructure = 0.9
	// confWhitespace: a repeat equal to the document's end up to
	// whitespace, long and varied enough to be no coincidence.
	confWhitespace = 0.9
	// confVerified: only the format's verification singled the repeat out
	// among the candidates.
	confVerified = 0.8
	// confReproduction: the continuation reproduces the document from one
	// of its line starts up to the cut, equal but for whitespace, over
	// minReproduction bytes of content at least.
	confReproduction = 0.9
	// confLead: a bare partial line restarted, judged by the line starts
	// either reading would leave.
	confLead = 0.8
	// confGlue: a short repeat judged by the words it would glue.
	confGlue = 0.75
	// confLanguage: a short repeat judged by the document's own language.
	confLanguage = 0.7
	// confUnverified: the join kept a repeat that nothing could verify
	// either way.
	confUnverified = 0.5
	// confNone: no candidate verified; the chunk was kept whole.
	confNone = 0.0
)

// overlap is one candidate answer to "how much of the continuation repeats
// the document": the first cut bytes of the continuation are dropped.
type overlap struct {
	cut        int
	method     string
	confidence float64
}

// noOverlap is the answer when nothing repeats.
var noOverlap = overlap{method: methodNone, confidence: confCertain}

// joinCtx is everything a join step reads: the document, the continuation
// (after the envelope step and repeated structure), where the document's
// incomplete record restarts, how the model continues at the job's other
// joins, and the format's traits. The steps share nothing else; buf only
// lends them memory.
type joinCtx struct {
	doc, next string
	// restarts are the offsets where the document's incomplete record
	// begins, outermost first (format.restarts).
	restarts []int
	// bias: repeated structure was removed, which makes a restart likely.
	bias bool
	// habit is how the model continued at the job's other joins: 1 it
	// starts over, -1 it goes on, 0 unknown or both (see habits).
	habit int
	// rewraps: the other joins that repeat mostly re-wrap their repeat.
	rewraps bool
	// wholeLines: the other joins that repeat all start over at a line's
	// start (see habits.wholeLines).
	wholeLines bool
	tr         traits
	// longest is the longest exact repeat of the document's end that next
	// starts with, 0 when none.
	longest int
	// toldOver: the preamble removed from the continuation says that the
	// model starts over (see toldRestart).
	toldOver bool
	// afterRemark: a preamble was removed from the continuation's head, so
	// a line break the text opens with may be the preamble's separator,
	// not a line the model starts over from.
	afterRemark bool
	// repro is the reproduction step's answer, kept for the same text.
	repro reproRead
	buf   *buffers
}

// joinStep is one step of the cascade: it reports an overlap when its
// evidence holds, and false to hand the join to the next step.
type joinStep struct {
	name string
	find func(c *joinCtx) (overlap, bool)
}

// cascade is the join's steps, strongest evidence first (see the table in
// pipeline.go).
func cascade() [9]joinStep {
	return [9]joinStep{
		{"indentation", indentationStep},
		{"restart", restartStep},
		{"exact", exactStep},
		{"whitespace", whitespaceStep},
		{"reproduction", reproductionStep},
		{"token", tokenStep},
		{"glue", glueStep},
		{"language", languageStep},
		{"lead", leadStep},
	}
}

// findOverlap runs the cascade on a continuation whose envelope and
// repeated structure are already gone. Where a join cannot tell by itself,
// c.habit decides: a model that starts over has a bare partial line
// restarted and any repeat that starts at a token cut; one that goes on
// has them kept and short repeats taken for the document's own. It returns
// the first step's overlap, or noOverlap. Every step reads at most a
// bounded window, sized by the continuation where it can be.
func findOverlap(c *joinCtx) overlap {
	if c.doc == "" || c.next == "" {
		return noOverlap
	}
	// The longest exact repeat, of any length: a continuation may start
	// the document over from its first line (what borders returns is only
	// valid until the next call, which whitespaceOverlap makes).
	c.longest = c.buf.longestBorder(c.doc, c.next)
	for _, s := range cascade() {
		if ov, ok := s.find(c); ok {
			return ov
		}
	}
	return noOverlap
}
