package main

import (
	"math/rand/v2"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/carryover/carryover/internal/merge"
)

// A behavior rewrites a continuation the way a model misbehaves at a
// continuation boundary: the table's rows before issue 12. prev is the document up to the cut, cont the exact
// text that should follow it (up to the next cut), last whether this is the
// final chunk. It reports false when the behavior does not apply at this cut
// (the continuation is then left clean).
type behavior struct {
	name    string
	formats string // space-separated formats it applies to; "" for all
	kind    string // required document kind, if any
	apply   func(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool)
}

// legacyBehaviors is the fidelity benchmark's list of behaviors as it stood
// at ed831b8, frozen with its fixed wordings: with legacyCases it
// reproduces that benchmark's cases byte for byte, for mergebench compare.
// Change nothing here; the live benchmark is habits().
func legacyBehaviors() []behavior {
	return []behavior{
		{name: "clean", apply: func(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) { return cont, true }},
		{name: "repeat-chars", apply: repeatWords},
		{name: "restart-record", apply: restartRecord},
		{name: "repeat-lines", apply: repeatLines},
		{name: "repeat-structure", formats: "csv json markdown diff", apply: repeatStructure},
		{name: "repeat-whitespace", formats: "text markdown code", apply: repeatWhitespace},
		{name: "preamble", apply: legacyPreamble},
		{name: "code-fences", apply: legacyFences},
		{name: "overlap-markers", apply: markers},
		{name: "trailing-remark", apply: legacyTrailer},
		{name: "raw-in-string", formats: "json", kind: "diffs", apply: rawInString},
		{name: "renumbered", formats: "json jsonl", kind: "numbered", apply: renumbered},
		// Last, so that the random cuts of the others stay what they were.
		{name: "repeat-tail", apply: repeatTail},
	}
}

var legacyPreambles = []string{
	"Sure, here is the continuation:",
	"Certainly! Continuing from where I left off:",
	"Here's the rest of the document:",
	"Continuing:",
	"Of course. Picking up exactly where the text stopped:",
}

func legacyPreamble(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	sep := "\n\n"
	if r.IntN(2) == 0 {
		sep = "\n"
	}
	return legacyPreambles[r.IntN(len(legacyPreambles))] + sep + cont, true
}

var legacyLangs = map[string]string{"csv": "csv", "json": "json", "jsonl": "jsonl", "markdown": "markdown", "code": "go", "diff": "diff", "text": "text"}

// legacyFences wraps the continuation in a code fence the document does not have;
// a chunk cut by the length limit never got to close it.
func legacyFences(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	if d.format == "text" {
		return cont, false
	}
	lang := legacyLangs[d.format]
	if r.IntN(3) == 0 && d.format != "markdown" {
		lang = ""
	}
	out := "```" + lang + "\n" + cont
	if last {
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "```\n"
	}
	return out, true
}

var legacyRemarks = []string{
	"Let me know if you need anything else.",
	"I hope this helps!",
	"This completes the document.",
	"Feel free to ask for more.",
}

// legacyTrailer adds a closing remark after the final chunk.
func legacyTrailer(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	if !last {
		return cont, false
	}
	if !strings.HasSuffix(cont, "\n") {
		cont += "\n"
	}
	return cont + "\n" + legacyRemarks[r.IntN(len(legacyRemarks))] + "\n", true
}

// legacyCase is one case of the benchmark as it stood at ed831b8.
type legacyCase struct {
	d      doc
	b      string
	trial  int
	chunks []merge.Chunk
}

// legacyCases calls yield with every case of the fidelity benchmark as it
// stood at ed831b8 (its default -trials 3 and -seed 1, the same random
// streams), over docs as loadCorpus returns them.
func legacyCases(docs []doc, yield func(legacyCase) error) error {
	const trials, seed = 3, 1
	for di, d := range docs {
		for bi, b := range legacyBehaviors() {
			if b.formats != "" && !strings.Contains(" "+b.formats+" ", " "+d.format+" ") || b.kind != "" && b.kind != d.kind {
				continue
			}
			for tr := 0; tr < trials; tr++ {
				r := rand.New(rand.NewPCG(uint64(seed), uint64(di*1000+bi*10+tr)))
				chunks, _, applied := cutAndContinue(r, d, b)
				if !applied {
					continue
				}
				if err := yield(legacyCase{d, b.name, tr, chunks}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cutAndContinue cuts the document into 2-12 chunks at random rune
// boundaries and rewrites every continuation with the behavior. It reports
// whether the behavior applied at least once.
func cutAndContinue(r *rand.Rand, d doc, b behavior) ([]merge.Chunk, []int, bool) {
	pos := cutPositions(r, d)
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

// cutPositions draws 1-11 cuts at random rune boundaries (fewer for a
// short document): the offsets of the chunks in the document, 0 first and
// its length last.
func cutPositions(r *rand.Rand, d doc) []int {
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
	return append(pos, len(d.text))
}
