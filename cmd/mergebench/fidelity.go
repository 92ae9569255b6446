package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/merge"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// fidelityOpts are the flags of mergebench fidelity.
type fidelityOpts struct {
	cache  string
	trials int
	seed   int64
	// verbose prints the tuning half's failing cases.
	verbose bool
	// showEval prints the evaluation half's failing cases. Tuning the merge
	// must never look at them: the evaluation half measures how the merge
	// does on documents and wordings it was not tuned on, and a failure
	// read there and fixed is a failure tuned to.
	showEval bool
	only     string
	// tuningOnly merges the tuning half alone, to compare builds while
	// tuning at a fraction of the time (and out of sight of the other).
	tuningOnly bool
}

// minCell is the fewest cases a (format, habit) cell of a half should
// hold: where few documents of the format take the habit in a half, each
// gets more cuttings, so that one failure is not a drop of several
// percent.
const minCell = 80

// benchCase is one cutting of one document written with one habit.
type benchCase struct {
	half   int
	d      doc
	habit  string
	trial  int
	chunks []merge.Chunk
	pos    []int // the cut offsets in the document
}

func (c benchCase) name() string { return fmt.Sprintf("%s %s %d", c.d.name, c.habit, c.trial) }

// fidelity runs every applicable habit on every document of each half,
// with random cuts, and prints the share reconstructed exactly, the tuning
// half first.
func fidelity(o fidelityOpts) error {
	start := time.Now()
	docs, err := loadCorpus(o.cache)
	if err != nil {
		return err
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	tabs := [2]*table{newTable(), newTable()}
	err = habitCases(docs, o.trials, o.seed, o.only, func(c benchCase) error {
		if o.tuningOnly && c.half == evaluation {
			return nil
		}
		res, err := merge.Merge(merge.Options{Format: c.d.format}, c.chunks)
		if err != nil {
			return err
		}
		ok := same(md, c.d.format, c.d.text, res.Content)
		tabs[c.half].add(c.d.format, c.habit, ok, same(md, c.d.format, c.d.text, concat(c.chunks)))
		show := c.half == tuning && (o.verbose || o.only != "") || c.half == evaluation && o.showEval
		if show && !ok {
			reportFailure(c, res)
		}
		if show && o.only != "" {
			for k, j := range res.Joins {
				fmt.Printf("  join %+v\n    doc ends %q\n    chunk    %q\n", j, tailOf(c.chunks, k), head(c.chunks[k+1].Text))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	halves := splitDocs(docs)
	books := phrasebooks()
	for h := range tabs {
		if o.tuningOnly && h == evaluation {
			continue
		}
		fmt.Printf("\n== %s half: %d documents (%s)\n   phrasings: %s\n", halfNames[h], len(halves[h]), formatCounts(halves[h]), books[h].size())
		tabs[h].print()
	}
	fmt.Printf("\n%d cases in %.0fs\n", tabs[0].total().n+tabs[1].total().n, time.Since(start).Seconds())
	return nil
}

// habitCases calls yield with every case of the benchmark, the tuning half
// first: each habit that applies to a document, on trials cuttings of it —
// more where few documents of a format in the half take the habit (see
// minCell), and where the habit finds nothing to do in a cutting, another,
// up to five times as many. Each case draws from a random stream of its
// own (seed, document, habit, trial), so adding a habit changes no other.
func habitCases(docs []doc, trials int, seed int64, only string, yield func(benchCase) error) error {
	halves := splitDocs(docs)
	books := phrasebooks()
	hs := habits()
	for half, ds := range halves {
		per := map[[2]string]int{} // documents of a format a habit applies to
		for _, d := range ds {
			for _, h := range hs {
				if h.appliesTo(d) {
					per[[2]string{d.format, h.name}]++
				}
			}
		}
		for _, d := range ds {
			for _, h := range hs {
				if !h.appliesTo(d) || only != "" && !strings.Contains(d.name+" "+h.name, only) {
					continue
				}
				k := per[[2]string{d.format, h.name}]
				n := max(trials, (minCell+k-1)/k)
				for tr, done := 0, 0; done < n && tr < 5*n; tr++ {
					c, ok := buildCase(half, d, h, tr, uint64(seed), books[half])
					if !ok {
						continue
					}
					done++
					if err := yield(c); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// buildCase cuts d and continues it with habit h for trial tr, drawing
// from the case's own random stream and the half's phrasings; false when
// the habit finds nothing to do in this cutting.
func buildCase(half int, d doc, h habit, tr int, seed uint64, book *phrasebook) (benchCase, bool) {
	r := rand.New(rand.NewPCG(seed, caseStream(d.name, h.name, tr)))
	pos := []int{0, len(d.text)}
	if !h.single {
		pos = cutPositions(r, d)
	}
	texts, ok := h.build(newEnv(r, d, book), pos)
	if !ok {
		return benchCase{}, false
	}
	return benchCase{half, d, h.name, tr, asChunks(texts), pos}, true
}

// caseStream numbers a case's random stream.
func caseStream(docName, habit string, trial int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", docName, habit, trial)
	return h.Sum64()
}

// asChunks makes chunk texts an answer: every chunk but the last stopped
// by the length limit.
func asChunks(texts []string) []merge.Chunk {
	out := make([]merge.Chunk, len(texts))
	for i, t := range texts {
		out[i] = merge.Chunk{Seq: i, Text: t, FinishReason: "length"}
	}
	out[len(out)-1].FinishReason = "stop"
	return out
}

func concat(chunks []merge.Chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Text)
	}
	return b.String()
}

// reportFailure prints a failing case: where the merge departs from the
// document, the first bad join, and with MERGEBENCH_DUMP the chunks as
// JSON for a unit test or a debugger, with the document (.want) and its
// format (.format) beside them, so the case can be merged again as it is.
func reportFailure(c benchCase, res merge.Result) {
	fmt.Printf("FAIL %s %s %s trial %d: %s\n%s\n", halfNames[c.half], c.d.name, c.habit, c.trial, res.Error, firstDiff(c.d.text, res.Content))
	if dir := os.Getenv("MERGEBENCH_DUMP"); dir != "" {
		name := strings.NewReplacer("/", "_", ":", "_", "#", "_", " ", "_").Replace(c.name())
		if buf, err := json.Marshal(c.chunks); err == nil {
			os.WriteFile(filepath.Join(dir, name+".json"), buf, 0o644)
			os.WriteFile(filepath.Join(dir, name+".want"), []byte(c.d.text), 0o644)
			os.WriteFile(filepath.Join(dir, name+".format"), []byte(c.d.format), 0o644)
		}
	}
	if k, j := firstBadJoin(c.d, res, c.pos); k > 0 {
		prev := c.d.text[:c.pos[k]]
		fmt.Printf("  first bad join %d: doc ends %q\n    chunk %q\n    want  %q\n    join  %+v\n", k, prev[max(0, len(prev)-100):], head(c.chunks[k].Text), head(c.d.text[c.pos[k]:]), j)
		for _, e := range res.Envelope {
			if e.Chunk == c.chunks[k].Seq {
				fmt.Printf("    removed %q (%s; %s)\n", e.Removed, e.Why, strings.Join(e.Evidence, ", "))
			}
		}
	}
}

// firstBadJoin finds the join where the merged document first departs from
// the original byte for byte: the last join whose new text starts at or
// before the first differing byte; 0 when the merge is exact. For failure
// reports.
func firstBadJoin(d doc, res merge.Result, pos []int) (int, merge.Join) {
	i := 0
	for i < len(d.text) && i < len(res.Content) && d.text[i] == res.Content[i] {
		i++
	}
	if i == len(d.text) && i == len(res.Content) {
		return 0, merge.Join{}
	}
	k := 1
	for k+1 < len(pos)-1 && pos[k+1] <= i {
		k++
	}
	if k-1 >= len(res.Joins) {
		return 0, merge.Join{}
	}
	return k, res.Joins[k-1]
}

// same compares by what the format means: CSV records, JSON values, JSON
// Lines records, Markdown rendered to HTML, other formats byte for byte.
func same(md goldmark.Markdown, format, want, got string) bool {
	switch format {
	case "csv":
		a, errA := csvRecords(want)
		b, errB := csvRecords(got)
		return errA == nil && errB == nil && reflect.DeepEqual(a, b)
	case "json":
		var a, b any
		return json.Unmarshal([]byte(want), &a) == nil && json.Unmarshal([]byte(got), &b) == nil && reflect.DeepEqual(a, b)
	case "jsonl":
		a, errA := jsonlRecords(want)
		b, errB := jsonlRecords(got)
		return errA == nil && errB == nil && reflect.DeepEqual(a, b)
	case "markdown":
		var a, b bytes.Buffer
		return md.Convert([]byte(want), &a) == nil && md.Convert([]byte(got), &b) == nil && a.String() == b.String()
	}
	return want == got
}

func csvRecords(s string) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

func jsonlRecords(s string) ([]any, error) {
	var out []any
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("  at byte %d\n  want %q\n  got  %q", i, want[lo:min(len(want), i+80)], got[lo:min(len(got), i+80)])
}

// tailOf is the end of the text of chunks before k+1, for failure reports.
func tailOf(chunks []merge.Chunk, k int) string {
	t := chunks[k].Text
	return t[max(0, len(t)-120):]
}

func head(s string) string { return s[:min(len(s), 160)] }
