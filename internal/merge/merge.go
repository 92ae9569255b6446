// Package merge reassembles the chunks of a continued model answer into one
// document. It owns every format-specific merger, overlap detection and
// content-type detection. It imports nothing else of this module, so the
// worker's merge task and the offline `worker merge` command run exactly the
// same code.
package merge

import (
	"fmt"
	"sort"
	"strings"
)

// Chunk is the visible text of one model response, in sequence order.
type Chunk struct {
	Seq          int    `json:"seq"`
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason,omitempty"` // normalized: stop, length, ...
}

// Options select and tune a merger.
type Options struct {
	// Format is one of Formats(); "auto" detects it from Hint and the content.
	Format string
	// Hint is the request text (instructions and prompt), used by auto detection.
	Hint string
	// Delimiter is the CSV field separator; 0 detects it from the first line.
	Delimiter byte
	// Partial says the answer is still being written (the transcript a
	// continuation is asked from): the chunks are joined as usual but the
	// document is not finished — no end-of-document repair or validation,
	// which would close a JSON document the model has yet to continue.
	Partial bool
}

// Join describes how one continuation chunk was attached to the document so far.
type Join struct {
	Seq        int     `json:"seq"`        // the chunk attached (1..n-1)
	Method     string  `json:"method"`     // exact, whitespace, reproduction, token, structural, overlap_markers, none, fallback
	Confidence float64 `json:"confidence"` // 0..1
	Removed    int     `json:"removed"`    // bytes of the chunk dropped as repeated overlap or chatter
	Offset     int     `json:"offset"`     // byte offset in Content where the chunk's new text begins
	// Stripped names what was removed besides the overlap: "preamble",
	// "code fence", "overlap markers", "csv header", ...
	Stripped []string `json:"stripped,omitempty"`
}

// Removal is one piece of a chunk that the envelope step took for what the
// model said about the document rather than the document: a fence wrapped
// around the answer, the overlap prompt's markers, a preamble, a trailer.
// Every byte the merge drops that is not a verified repeat is one of these,
// so an operator can see it.
type Removal struct {
	Chunk   int    `json:"chunk"`   // the chunk's Seq
	Removed string `json:"removed"` // the bytes removed, as the model wrote them
	Why     string `json:"why"`     // one of the Why* constants
	// Evidence names what told the removal apart from the document, e.g.
	// "first line of a continuation", "joins only without it".
	Evidence []string `json:"evidence,omitempty"`
}

// Why a removal was made.
const (
	// WhyUnwrappedFence: a code fence around the whole answer of a typed
	// format (its opening line, or its closing one).
	WhyUnwrappedFence = "unwrapped_fence"
	// WhyWrapperFence: a fence a continuation opened (or closed) around
	// itself, inside an answer that was not fenced as a whole.
	WhyWrapperFence = "wrapper_fence"
	// WhyOverlapMarkers: the overlap prompt's markers around an echo.
	WhyOverlapMarkers = "overlap_markers"
	// WhyPreamble: a remark introducing the answer or a continuation.
	WhyPreamble = "preamble"
	// WhyTrailer: a closing remark after the document.
	WhyTrailer = "trailer"
)

// Detection records what auto detection chose and how sure it was.
type Detection struct {
	Format     string  `json:"format"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason,omitempty"`
}

// Result is a merged document with the facts the job metadata reports.
// A merge never loses text: when a join cannot be verified the chunk is kept
// whole, Success is false and Error says where.
type Result struct {
	Content          string   `json:"-"`
	Format           string   `json:"format"`
	Strategy         string   `json:"merge_strategy_used"`
	Success          bool     `json:"merge_success"`
	Error            string   `json:"merge_error,omitempty"`
	RecordCount      int      `json:"final_record_count"`
	TruncationPoints []string `json:"truncation_points"`
	Joins            []Join   `json:"joins"`
	// Envelope lists what the envelope step removed, chunk by chunk.
	Envelope  []Removal  `json:"envelope"`
	Detection *Detection `json:"detection,omitempty"`
}

// Merger merges the chunks of one document of its format.
type Merger interface {
	Merge(chunks []Chunk) Result
}

// Formats lists the formats New accepts.
func Formats() []string {
	return []string{"auto", "code", "csv", "diff", "json", "jsonl", "markdown", "text"}
}

// ValidFormat reports whether f names a format New accepts.
func ValidFormat(f string) bool {
	i := sort.SearchStrings(Formats(), f)
	return i < len(Formats()) && Formats()[i] == f
}

// New returns the merger for opts.Format.
func New(opts Options) (Merger, error) {
	if !ValidFormat(opts.Format) {
		return nil, fmt.Errorf("merge: unknown format %q (want one of %s)", opts.Format, strings.Join(Formats(), ", "))
	}
	return merger{opts: opts}, nil
}

// Merge is New followed by Merger.Merge.
func Merge(opts Options, chunks []Chunk) (Result, error) {
	m, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	return m.Merge(chunks), nil
}

// merger holds only options: every Merge call builds fresh format state, so
// one Merger may serve concurrent merges.
type merger struct{ opts Options }

func (m merger) Merge(chunks []Chunk) Result {
	name := m.opts.Format
	var det *Detection
	if name == "auto" {
		d := Detect(m.opts.Hint, chunks)
		det = &d
		name = d.Format
	}
	fresh := func() format {
		f := newFormat(name, m.opts)
		if m.opts.Partial {
			f = unfinished{f}
		}
		return f
	}
	res := run(name, fresh, chunks, m.opts.Partial)
	res.Detection = det
	return res
}

// newFormat returns fresh state for one merge of the named format.
func newFormat(name string, opts Options) format {
	switch name {
	case "csv":
		return &csvFormat{delim: opts.Delimiter, lastID: -1}
	case "json":
		return newJSONFormat()
	case "jsonl":
		return &jsonlFormat{}
	case "markdown":
		return &markdownFormat{}
	case "code":
		return &codeFormat{}
	case "diff":
		return newDiffFormat()
	}
	return &textFormat{}
}
