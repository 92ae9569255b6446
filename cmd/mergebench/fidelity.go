package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/carryover/carryover/internal/merge"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

type cell struct {
	n, merged, concat int
}

// fidelity runs every applicable behavior on every document, trials times
// with random cuts, and prints the share reconstructed exactly.
func fidelity(cache string, trials int, seed int64, verbose bool, only string) error {
	docs, err := loadCorpus(cache)
	if err != nil {
		return err
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	cells := map[[2]string]*cell{}
	ndocs := map[string]int{}
	for di, d := range docs {
		ndocs[d.format]++
		for bi, b := range behaviors() {
			if only != "" && !strings.Contains(d.name+" "+b.name, only) {
				continue
			}
			if b.formats != "" && !strings.Contains(" "+b.formats+" ", " "+d.format+" ") || b.kind != "" && b.kind != d.kind {
				continue
			}
			key := [2]string{d.format, b.name}
			c := cells[key]
			if c == nil {
				c = &cell{}
				cells[key] = c
			}
			for tr := 0; tr < trials; tr++ {
				r := rand.New(rand.NewPCG(uint64(seed), uint64(di*1000+bi*10+tr)))
				chunks, pos, applied := cutAndContinue(r, d, b)
				if !applied {
					continue
				}
				res, err := merge.Merge(merge.Options{Format: d.format}, chunks)
				if err != nil {
					return err
				}
				var naive strings.Builder
				for _, ch := range chunks {
					naive.WriteString(ch.Text)
				}
				c.n++
				ok := same(md, d.format, d.text, res.Content)
				if ok {
					c.merged++
				} else if verbose {
					fmt.Printf("FAIL %s %s trial %d: %s\n%s\n", d.name, b.name, tr, res.Error, firstDiff(d.text, res.Content))
					if dir := os.Getenv("MERGEBENCH_DUMP"); dir != "" {
						// The chunks of a failing case, for a unit test or a debugger.
						name := strings.NewReplacer("/", "_", ":", "_", "#", "_", " ", "_").Replace(fmt.Sprintf("%s %s %d", d.name, b.name, tr))
						if buf, err := json.Marshal(chunks); err == nil {
							os.WriteFile(filepath.Join(dir, name+".json"), buf, 0o644)
						}
					}
					if k, j := firstBadJoin(d, res, pos); k > 0 {
						prev := d.text[:pos[k]]
						fmt.Printf("  first bad join %d: doc ends %q\n    chunk %q\n    want  %q\n    join  %+v\n", k, prev[max(0, len(prev)-100):], head(chunks[k].Text), head(d.text[pos[k]:]), j)
					}
					if only != "" {
						for k, j := range res.Joins {
							fmt.Printf("  join %+v\n    doc ends %q\n    chunk    %q\n", j, tailOf(chunks, k), head(chunks[k+1].Text))
						}
					}
				}
				if same(md, d.format, d.text, naive.String()) {
					c.concat++
				}
			}
		}
	}
	printTable(cells, ndocs)
	return nil
}

// cutAndContinue cuts the document into 2-12 chunks at random rune
// boundaries and rewrites every continuation with the behavior. It reports
// whether the behavior applied at least once.
func cutAndContinue(r *rand.Rand, d doc, b behavior) ([]merge.Chunk, []int, bool) {
	n := 2 + r.IntN(11)
	n = min(n, max(2, len(d.text)/64))
	cuts := map[int]bool{}
	for len(cuts) < n-1 {
		p := 1 + r.IntN(len(d.text)-1)
		for p < len(d.text) && !utf8.RuneStart(d.text[p]) {
			p++
		}
		if p < len(d.text) {
			cuts[p] = true
		}
	}
	pos := []int{0}
	for p := range cuts {
		pos = append(pos, p)
	}
	sort.Ints(pos)
	pos = append(pos, len(d.text))
	chunks := []merge.Chunk{{Seq: 0, Text: d.text[:pos[1]], FinishReason: "length"}}
	applied := false
	for i := 1; i+1 < len(pos); i++ {
		last := i+2 == len(pos)
		text, ok := b.apply(r, d, d.text[:pos[i]], d.text[pos[i]:pos[i+1]], last)
		applied = applied || ok
		fr := "length"
		if last {
			fr = "stop"
		}
		chunks = append(chunks, merge.Chunk{Seq: i, Text: text, FinishReason: fr})
	}
	return chunks, pos, applied
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

func printTable(cells map[[2]string]*cell, ndocs map[string]int) {
	var keys [][2]string
	for k := range cells {
		keys = append(keys, k)
	}
	order := map[string]int{}
	for i, b := range behaviors() {
		order[b.name] = i
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return order[keys[i][1]] < order[keys[j][1]]
	})
	fmt.Printf("%-9s %-18s %6s %9s %9s\n", "format", "behavior", "cases", "merge", "concat")
	var tot cell
	worst, worstKey := 2.0, ""
	for _, k := range keys {
		c := cells[k]
		if c.n == 0 {
			continue
		}
		tot.n += c.n
		tot.merged += c.merged
		tot.concat += c.concat
		share := float64(c.merged) / float64(c.n)
		if share < worst {
			worst, worstKey = share, k[0]+"/"+k[1]
		}
		fmt.Printf("%-9s %-18s %6d %8.1f%% %8.1f%%\n", k[0], k[1], c.n, 100*share, 100*float64(c.concat)/float64(c.n))
	}
	fmt.Printf("%-9s %-18s %6d %8.1f%% %8.1f%%\n", "overall", "", tot.n, 100*float64(tot.merged)/float64(tot.n), 100*float64(tot.concat)/float64(tot.n))
	var fs []string
	for f, n := range ndocs {
		fs = append(fs, fmt.Sprintf("%s=%d", f, n))
	}
	sort.Strings(fs)
	fmt.Printf("documents: %s; lowest cell: %s %.1f%%\n", strings.Join(fs, " "), worstKey, 100*worst)
}

// tailOf is the end of the text of chunks before k+1, for failure reports.
func tailOf(chunks []merge.Chunk, k int) string {
	t := chunks[k].Text
	return t[max(0, len(t)-120):]
}

func head(s string) string { return s[:min(len(s), 160)] }
