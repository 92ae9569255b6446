package main

import (
	"hash/fnv"
	"sort"
	"strconv"
)

// splitSeed fixes which half every document and every phrasing component
// belongs to. It is a constant, not the -seed flag: the halves must stay
// the same from run to run, or tuning on one would leak into the other.
//
// The split works at the level of components, not of finished cases: each
// document (by name, within its format), each interjection, core clause,
// bracketed form and trailer template (within its list) and each fence
// style (within its format) is dealt to the tuning half (0) or the
// evaluation half (1). A case belongs to one half: its document and every
// phrasing it uses come from that half, so the evaluation half holds
// documents and wordings that no tuning case contains. The format's nouns
// and units ("the CSV", "rows") and the sentence endings are vocabulary,
// shared by both.
const splitSeed = 20261125

// Halves of the benchmark.
const (
	tuning     = 0
	evaluation = 1
)

var halfNames = [2]string{"TUNING", "EVALUATION"}

// deal assigns each key of a group to a half: the keys are ordered by a
// hash of (splitSeed, group, key) and dealt alternately, so each half gets
// half of every group (a format's documents, one list of phrasings), in an
// order unrelated to the names.
func deal(group string, keys []string) map[string]int {
	type hk struct {
		h   uint64
		key string
	}
	hs := make([]hk, len(keys))
	for i, k := range keys {
		f := fnv.New64a()
		f.Write([]byte(strconv.Itoa(splitSeed) + "\x00" + group + "\x00" + k))
		hs[i] = hk{f.Sum64(), k}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].h < hs[j].h || hs[i].h == hs[j].h && hs[i].key < hs[j].key })
	out := make(map[string]int, len(keys))
	for i, x := range hs {
		out[x.key] = i % 2
	}
	return out
}

// dealList splits a list of components into the two halves.
func dealList[T any](group string, items []T, key func(T) string) [2][]T {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = key(it)
	}
	h := deal(group, keys)
	var out [2][]T
	for _, it := range items {
		out[h[key(it)]] = append(out[h[key(it)]], it)
	}
	return out
}

// phrasebook holds the phrasing components of one half.
type phrasebook struct {
	interjections, apologies, preambles, firsts, openers []clause
	trailers                                             []clause
	restartsTop, restartsEarlier                         []clause
	brackets, notes, marks                               []string
	fences                                               map[string][]string
}

// phrasebooks deals every phrasing component to its half.
func phrasebooks() [2]*phrasebook {
	ck := func(c clause) string { return c.text }
	sk := func(s string) string { return s }
	var b [2]*phrasebook
	for h := range b {
		b[h] = &phrasebook{fences: map[string][]string{}}
	}
	fill := func(group string, list []clause, set func(p *phrasebook, c []clause)) {
		d := dealList(group, list, ck)
		set(b[0], d[0])
		set(b[1], d[1])
	}
	fills := func(group string, list []string, set func(p *phrasebook, s []string)) {
		d := dealList(group, list, sk)
		set(b[0], d[0])
		set(b[1], d[1])
	}
	fill("interjection", interjections, func(p *phrasebook, c []clause) { p.interjections = c })
	fill("apology", apologies, func(p *phrasebook, c []clause) { p.apologies = c })
	fill("preamble", preambleClauses, func(p *phrasebook, c []clause) { p.preambles = c })
	fill("restart-top", restartTopClauses, func(p *phrasebook, c []clause) { p.restartsTop = c })
	fill("restart-earlier", restartEarlierClauses, func(p *phrasebook, c []clause) { p.restartsEarlier = c })
	fill("first", firstClauses, func(p *phrasebook, c []clause) { p.firsts = c })
	fill("opener", trailerOpeners, func(p *phrasebook, c []clause) { p.openers = c })
	fill("trailer", trailerClauses, func(p *phrasebook, c []clause) { p.trailers = c })
	fills("bracket", bracketPreambles, func(p *phrasebook, s []string) { p.brackets = s })
	fills("note", firstNotes, func(p *phrasebook, s []string) { p.notes = s })
	fills("mark", trailerMarks, func(p *phrasebook, s []string) { p.marks = s })
	for f, styles := range fenceStyles {
		fills("fence:"+f, styles, func(p *phrasebook, s []string) { p.fences[f] = s })
	}
	return b
}

// splitDocs deals the documents of each format to the halves.
func splitDocs(docs []doc) [2][]doc {
	names := map[string][]string{}
	for _, d := range docs {
		names[d.format] = append(names[d.format], d.name)
	}
	half := map[string]int{}
	for f, ns := range names {
		for n, h := range deal("doc:"+f, ns) {
			half[f+"\x00"+n] = h
		}
	}
	var out [2][]doc
	for _, d := range docs {
		h := half[d.format+"\x00"+d.name]
		out[h] = append(out[h], d)
	}
	return out
}

// size describes a phrasebook for the report.
func (p *phrasebook) size() string {
	nf := 0
	for _, s := range p.fences {
		nf += len(s)
	}
	return "interjections " + strconv.Itoa(len(p.interjections)+len(p.apologies)) +
		", preamble clauses " + strconv.Itoa(len(p.preambles)) +
		", bracketed " + strconv.Itoa(len(p.brackets)) +
		", restart clauses " + strconv.Itoa(len(p.restartsTop)+len(p.restartsEarlier)) +
		", first-line clauses " + strconv.Itoa(len(p.firsts)) +
		", notes " + strconv.Itoa(len(p.notes)) +
		", trailer openers " + strconv.Itoa(len(p.openers)) +
		", trailer clauses " + strconv.Itoa(len(p.trailers)) +
		", trailer marks " + strconv.Itoa(len(p.marks)) +
		", fence styles " + strconv.Itoa(nf)
}
