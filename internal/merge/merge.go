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
}

// Join describes how one continuation chunk was attached to the document so far.
type Join struct {
	Seq        int     `json:"seq"`        // the chunk attached (1..n-1)
	Method     string  `json:"method"`     // exact, whitespace, token, structural, none, fallback
	Confidence float64 `json:"confidence"` // 0..1
	Removed    int     `json:"removed"`    // bytes of the chunk dropped as repeated overlap or chatter
	Offset     int     `json:"offset"`     // byte offset in Content where the chunk's new text begins
}

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
	Content          string     `json:"-"`
	Format           string     `json:"format"`
	Strategy         string     `json:"merge_strategy_used"`
	Success          bool       `json:"merge_success"`
	Error            string     `json:"merge_error,omitempty"`
	RecordCount      int        `json:"final_record_count"`
	TruncationPoints []string   `json:"truncation_points"`
	Joins            []Join     `json:"joins"`
	Detection        *Detection `json:"detection,omitempty"`
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
	return textMerger{format: opts.Format}, nil
}

// Merge is New followed by Merger.Merge.
func Merge(opts Options, chunks []Chunk) (Result, error) {
	m, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	return m.Merge(chunks), nil
}

// textMerger joins chunks, removing a continuation's exact repeat of the
// document's tail when the repeat is long enough to be deliberate.
type textMerger struct{ format string }

// minOverlap is the shortest repeated tail that is cut; shorter coincidences stay.
const minOverlap = 16

func (m textMerger) Merge(chunks []Chunk) Result {
	var b strings.Builder
	res := Result{Format: m.format, Strategy: "text", Success: true, TruncationPoints: []string{}, Joins: []Join{}}
	for i, c := range chunks {
		text := c.Text
		if i > 0 {
			res.TruncationPoints = append(res.TruncationPoints, fmt.Sprintf("byte:%d", b.Len()))
			j := Join{Seq: c.Seq, Method: "none", Confidence: 1}
			if n := tailOverlap(b.String(), text); n >= minOverlap {
				text = text[n:]
				j.Method, j.Removed = "exact", n
			}
			j.Offset = b.Len()
			res.Joins = append(res.Joins, j)
		}
		b.WriteString(text)
	}
	res.Content = b.String()
	res.RecordCount = strings.Count(res.Content, "\n")
	if res.Content != "" && !strings.HasSuffix(res.Content, "\n") {
		res.RecordCount++
	}
	return res
}

// tailOverlap returns the length of the longest prefix of next that is also a
// suffix of doc.
func tailOverlap(doc, next string) int {
	max := min(len(doc), len(next))
	for n := max; n > 0; n-- {
		if strings.HasSuffix(doc, next[:n]) {
			return n
		}
	}
	return 0
}
