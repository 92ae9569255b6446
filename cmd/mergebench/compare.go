//go:build compare

package main

import (
	"fmt"

	basemerge "github.com/carryover/carryover/cmd/mergebench/basemerge"
	"github.com/carryover/carryover/internal/merge"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// outcome is what one merge gave for a case.
type outcome struct {
	content string
	success bool
	err     string
}

// mergeNew runs today's merge; a panic is an outcome too (the worker would
// crash), not the end of the comparison.
func mergeNew(format string, chunks []merge.Chunk) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Sprint("panic: ", p)}
		}
	}()
	res, err := merge.Merge(merge.Options{Format: format}, chunks)
	if err != nil {
		return outcome{err: err.Error()}
	}
	return outcome{res.Content, res.Success, res.Error}
}

// mergeOld runs the merge of the base commit, extracted into basemerge/.
func mergeOld(format string, chunks []merge.Chunk) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Sprint("panic: ", p)}
		}
	}()
	old := make([]basemerge.Chunk, len(chunks))
	for i, c := range chunks {
		old[i] = basemerge.Chunk{Seq: c.Seq, Text: c.Text, FinishReason: c.FinishReason}
	}
	res, err := basemerge.Merge(basemerge.Options{Format: format}, old)
	if err != nil {
		return outcome{err: err.Error()}
	}
	return outcome{res.Content, res.Success, res.Error}
}

// tally counts one source's cases.
type tally struct {
	cases, oldRight, newRight int
	regressions, fixed        int
	changedWrong              int // wrong before and after, and changed
	// nowExact: right before by same(), changed, and now byte for byte the
	// document. same() forgives what a reader of the format does not see
	// (JSON spacing, raw HTML in Markdown, which goldmark omits), so the
	// old document may have been right with chatter in it; a new one equal
	// to the document is no regression.
	nowExact  int
	differing int // fuzz seeds: old and new not identical
}

// change is a case whose merged document changed, for the listing.
type change struct {
	source, name string
	old, new     outcome
	newRight     bool
}

// comparer runs both merges over the cases of every source.
type comparer struct {
	md      goldmark.Markdown
	order   []string
	tallies map[string]*tally
	regs    []change
	diffs   []change // fuzz seeds whose outcome changed
}

func (c *comparer) tally(source string) *tally {
	t := c.tallies[source]
	if t == nil {
		t = &tally{}
		c.tallies[source] = t
		c.order = append(c.order, source)
	}
	return t
}

// judged compares a case whose document is known: right says whether a
// merged document counts as it.
func (c *comparer) judged(source, name, format, doc string, chunks []merge.Chunk, right func(string) bool) {
	t := c.tally(source)
	o, n := mergeOld(format, chunks), mergeNew(format, chunks)
	oldOK, newOK := right(o.content), right(n.content)
	t.cases++
	if oldOK {
		t.oldRight++
	}
	if newOK {
		t.newRight++
	}
	switch {
	case oldOK && n.content != o.content && n.content == doc:
		t.nowExact++
	case oldOK && n.content != o.content:
		t.regressions++
		c.regs = append(c.regs, change{source, name, o, n, newOK})
	case !oldOK && newOK:
		t.fixed++
	case !oldOK && n.content != o.content:
		t.changedWrong++
	}
}

// unjudged compares a case with no right answer (a fuzz seed): only
// whether old and new agree.
func (c *comparer) unjudged(source, name, format string, chunks []merge.Chunk) {
	t := c.tally(source)
	o, n := mergeOld(format, chunks), mergeNew(format, chunks)
	t.cases++
	if o.content != n.content || o.success != n.success {
		t.differing++
		c.diffs = append(c.diffs, change{source: source, name: name, old: o, new: n})
	}
}

// compare runs the merge at the base commit (basemerge/) and today's over
// the benchmark of ed831b8, today's habit benchmark (both halves), the
// fuzzers' seeds and the e2e conversations, and prints what changed. It
// returns the number of regressions: cases the old merge got right whose
// document is no longer byte for byte the same (and not the document
// itself now either).
func compare(cache, repo string) (int, error) {
	docs, err := loadCorpus(cache)
	if err != nil {
		return 0, err
	}
	c := &comparer{md: goldmark.New(goldmark.WithExtensions(extension.GFM)), tallies: map[string]*tally{}}
	err = legacyCases(docs, func(lc legacyCase) error {
		c.judged("corpus (ed831b8 benchmark)", fmt.Sprintf("%s %s %d", lc.d.name, lc.b, lc.trial), lc.d.format, lc.d.text, lc.chunks,
			func(got string) bool { return same(c.md, lc.d.format, lc.d.text, got) })
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = habitCases(docs, 3, 1, "", func(bc benchCase) error {
		c.judged("habits, "+halfNames[bc.half]+" half", bc.name(), bc.d.format, bc.d.text, bc.chunks,
			func(got string) bool { return same(c.md, bc.d.format, bc.d.text, got) })
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := fuzzSeeds(repo, func(s fuzzSeed, format string) {
		c.unjudged("fuzz seeds", s.name+" as "+format, format, chunksOf(splitAt(s.doc, s.cuts)))
	}); err != nil {
		return 0, err
	}
	if err := conversations(func(name, format, doc string, chunks []merge.Chunk) {
		c.judged("e2e conversations", name, format, doc, chunks, func(got string) bool { return got == doc })
	}); err != nil {
		return 0, err
	}
	c.print()
	return len(c.regs), nil
}

// print writes the tallies and lists the first regressions and changed
// fuzz seeds.
func (c *comparer) print() {
	fmt.Printf("%-32s %6s %9s %9s %11s %6s %13s %9s\n", "source", "cases", "old right", "new right", "regressions", "fixed", "changed-wrong", "now-exact")
	for _, s := range c.order {
		t := c.tallies[s]
		if s == "fuzz seeds" {
			fmt.Printf("%-32s %6d   identical %d, differing %d (no truth: old vs new only)\n", s, t.cases, t.cases-t.differing, t.differing)
			continue
		}
		fmt.Printf("%-32s %6d %9d %9d %11d %6d %13d %9d\n", s, t.cases, t.oldRight, t.newRight, t.regressions, t.fixed, t.changedWrong, t.nowExact)
	}
	fmt.Print("  regressions: right before (by same()), now different, and not the document byte for byte\n",
		"  fixed: wrong before, right now; changed-wrong: wrong before and after, and changed\n",
		"  now-exact: right before, changed, and now the document byte for byte\n")
	if len(c.regs) > 0 {
		fmt.Printf("\nregressions (%d; up to 20, the first of each source first):\n", len(c.regs))
	}
	for _, r := range spread(c.regs, 20) {
		fmt.Printf("  %s: %s (new still right by same(): %v; new success %v %s)\n%s\n", r.source, r.name, r.newRight, r.new.success, r.new.err, diffAt(r.old.content, r.new.content))
	}
	if len(c.diffs) > 0 {
		fmt.Printf("\nfuzz seeds whose outcome changed (%d; the first 10):\n", len(c.diffs))
	}
	for _, r := range c.diffs[:min(10, len(c.diffs))] {
		fmt.Printf("  %s: success %v -> %v\n%s\n", r.name, r.old.success, r.new.success, diffAt(r.old.content, r.new.content))
	}
}

// spread picks up to n changes, taking the sources in turn so that one
// source's many do not hide another's few; in their order within a source.
func spread(cs []change, n int) []change {
	var sources []string
	by := map[string][]change{}
	for _, c := range cs {
		if by[c.source] == nil {
			sources = append(sources, c.source)
		}
		by[c.source] = append(by[c.source], c)
	}
	var out []change
	for i := 0; len(out) < min(n, len(cs)); i++ {
		for _, s := range sources {
			if i < len(by[s]) && len(out) < n {
				out = append(out, by[s][i])
			}
		}
	}
	return out
}

// diffAt shows where old and new first differ.
func diffAt(old, new string) string {
	i := 0
	for i < len(old) && i < len(new) && old[i] == new[i] {
		i++
	}
	lo := max(0, i-60)
	return fmt.Sprintf("    first differing byte %d\n    old %q\n    new %q", i, old[lo:min(len(old), i+60)], new[lo:min(len(new), i+60)])
}
