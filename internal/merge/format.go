package merge

// format is what one document format adds to the pipeline every merge
// shares. The pipeline calls observe after each append so that formats keep
// their state incrementally: nothing rescans the document, which keeps a
// merge linear in its size.
//
// Every difference between formats goes through this interface and the
// traits it returns: the steps of the pipeline never test a format's name.
type format interface {
	// traits are the format's fixed properties the steps read.
	traits() traits
	// observe is told that doc[from:] was just appended.
	observe(doc string, from int)
	// restarts appends to out the offsets in doc where an incomplete record
	// (row, element, line) begins, outermost first; a continuation that
	// starts over from one of them repeats what follows it. (Appending lets
	// a join reuse one buffer.)
	restarts(out []int, doc string) []int
	// site describes the document's end, where the envelope step reads a
	// continuation's fences and preamble.
	site(doc string) site
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
	// breaks reports whether a line of prose (a remark of the model's)
	// appended to doc would break the format where the text after it
	// would not: evidence for the envelope step that the line is not the
	// document's.
	breaks(doc, line, after string) bool
	// lineBreak reads the line break between a preamble and the text t
	// after it (which starts with it) by the format's own structure: keep
	// reports whether the break is the text's, where exactly one of the
	// two readings holds; decided is false where the structure does not
	// tell. last: t ends the document.
	lineBreak(doc, t string, last bool) (keep, decided bool)
	// endBreaks reports whether a line of prose after the document's end
	// would break it; body is the last chunk's text before the line, so
	// doc + body is the document the line would end.
	endBreaks(doc, body, line string) bool
	// point names where the document was cut, e.g. "row:250" or "line:1200".
	point(doc string) string
	// repair completes what the last chunk left unfinished (a JSON document
	// cut short), once, on the whole document.
	repair(res *Result)
	// validate checks the whole document once and counts its records.
	validate(res *Result)
}

// blankLineOwer is implemented by a format whose document can end with a
// line written as a blank line (a diff's empty context line): a closing
// remark after it takes no blank line of the document's with it.
type blankLineOwer interface {
	// owesBlankLine reports whether doc, followed by the answer's last
	// text body (complete lines), is exactly one blank line short of
	// complete.
	owesBlankLine(doc, body string) bool
}

// traits are a format's fixed properties. They replace tests of the
// format's name in the shared steps.
type traits struct {
	// lines: the document is merged line by line (text, Markdown, code,
	// diffs): a bare partial line that a continuation starts with may be
	// its restart, and the weakest join steps judge line starts.
	lines bool
	// glue: a short repeat may be judged by the words it would glue at the
	// join (line formats, and CSV, whose field counts cannot tell inside a
	// quoted value).
	glue bool
	// tokens: token-level alignment of a near repeat suits the format.
	// Code, diffs and Markdown (examples, tables, lists of links) repeat
	// their own token sequences too often for a fuzzy match to be evidence.
	tokens bool
	// indentRestart: a partial line of indentation that the continuation
	// starts with is judged by the indentation the line before calls for
	// (code).
	indentRestart bool
	// blankIndentRestart: the same, for a partial line of indentation alone
	// before the cascade runs (JSON, pretty-printed).
	blankIndentRestart bool
	// fences is how a code fence line at a continuation's start is read.
	fences fenceRules
	// blank is how the line break after a preamble is read.
	blank blankRules
	// lead judges a bare partial line of markers the continuation may
	// start over ("+" + "++ b/x"); nil for formats without such lines.
	lead leadRule
	// doubledLetters: a word the document has not used that would start
	// with a doubled letter is no word of it (prose, Markdown, diffs; code
	// has "ssa", "llvm").
	doubledLetters bool
	// syntax reports whether a line has the format's own syntax (a
	// Markdown block marker, a code statement or comment, a diff's hunk
	// line): such a line is the document's, never a remark; nil when any
	// line may read as prose.
	syntax func(line string) bool
	// markup reports whether a line has the format's inline markup (a
	// Markdown link or code span), which a closing remark does not write;
	// nil when the format has none.
	markup func(line string) bool
	// proseAt reports whether a cut line opens a place where the format
	// writes prose (a code comment): a line that goes on with it there is
	// the document's. nil where prose stands anywhere, or nowhere.
	proseAt func(partial string) bool
	// heading returns the level of a line that heads a section of the
	// document (read with the line above it, for an underline), 0 for
	// other lines: the paragraph under a heading is its section's text.
	// nil where the format has no headings.
	heading func(above, line string) int
	// endBlanks: the format's documents may end with blank lines of their
	// own (prose, Markdown); others end with their last line's break.
	endBlanks bool
	// keepsHeader reports whether a partial line at lineStart, kept, makes
	// the header line the line before calls for; nil when the format has
	// none.
	keepsHeader func(doc string, lineStart int, next string) bool
}

// leadRule decides a restart of a bare partial line of markers by the
// format's own structure, reporting whether it decided.
type leadRule func(doc string, lineStart int, partial, first, next string) (restart, decided bool)

// site is what the envelope step knows of the document's end where a
// continuation attaches.
type site struct {
	// docFenced: the document itself uses code fences (Markdown, or code the
	// model wrapped in a fence from its first chunk).
	docFenced bool
	// inFence: the document ends inside an open fence; fence is that
	// fence (in CSV, one the quoted value it ends in opened).
	inFence bool
	fence   fenceOpen
	// atLineStart: the document ends with a newline (or is empty).
	atLineStart bool
	// inQuote: the document ends inside a quoted CSV value.
	inQuote bool
	// noFence: the document ends inside a value (a quoted CSV field) and
	// carries fences itself, so a fence line there is likely content.
	noFence bool
	// partial is the document's incomplete last line.
	partial string
	// end is the document's last byte, and doc the document, where the
	// format reads a line break after a preamble by the document's own
	// text (zero and "" where it does not).
	end byte
	doc string
}

// unfinished is a format whose document is still being written: its last
// chunk is not the document's last (a record may still be open after it),
// and the document is neither repaired nor validated.
type unfinished struct{ format }

func (u unfinished) adjust(doc, rest string, _ bool) (string, string) {
	return u.format.adjust(doc, rest, false)
}
func (u unfinished) verify(doc, rest string, _ bool) bool { return u.format.verify(doc, rest, false) }
func (u unfinished) lineBreak(doc, t string, _ bool) (bool, bool) {
	return u.format.lineBreak(doc, t, false)
}
func (unfinished) repair(*Result)   {}
func (unfinished) validate(*Result) {}
