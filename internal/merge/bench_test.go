package merge

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/carryover/carryover/internal/merge/mergetest"
)

// BenchmarkMergeJSON merges an 8 MB JSON document cut into 80 chunks at
// random points, as the speed benchmark of cmd/mergebench does at 50 MB.
func BenchmarkMergeJSON(b *testing.B) {
	doc := mergetest.Document("json", 8<<20)
	r := rand.New(rand.NewPCG(3, 4))
	pos := map[int]bool{}
	for len(pos) < 79 {
		pos[1+r.IntN(len(doc)-1)] = true
	}
	ps := []int{0}
	for p := range pos {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	ps = append(ps, len(doc))
	var chunks []Chunk
	for i := 0; i+1 < len(ps); i++ {
		chunks = append(chunks, Chunk{Seq: i, Text: doc[ps[i]:ps[i+1]]})
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		res, _ := Merge(Options{Format: "json"}, chunks)
		if res.Content != doc {
			b.Fatal("not exact")
		}
	}
}

// evenChunks cuts doc into n chunks of (nearly) equal size.
func evenChunks(doc string, n int) []Chunk {
	var out []Chunk
	for i := 0; i < n; i++ {
		out = append(out, Chunk{Seq: i, Text: doc[i*len(doc)/n : (i+1)*len(doc)/n]})
	}
	return out
}

// benchMerge merges chunks of the format, which must come back as want.
func benchMerge(b *testing.B, format string, chunks []Chunk, want string) {
	b.SetBytes(int64(len(want)))
	b.ReportAllocs()
	for b.Loop() {
		res, _ := Merge(Options{Format: format}, chunks)
		if res.Content != want {
			b.Fatal("not exact")
		}
	}
}

// BenchmarkMergeSmallChunks merges documents of 40 chunks of 256 bytes, as
// continuations with a small output limit produce them; each join's work
// must follow the chunk's size, not the document's, and this is its fixed
// cost. Each document is also merged with every continuation repeating the
// last 24 to 64 bytes of the chunk before it, from a word's start
// ("/repeat"), as the pipeline's jobs are. BenchmarkMergeLargeChunks is
// the same formats in 40 chunks of 96 KB, the throughput to compare with.
func BenchmarkMergeSmallChunks(b *testing.B) {
	for _, format := range []string{"text", "csv", "json", "jsonl"} {
		doc := mergetest.Document(format, 40*256)
		b.Run(format, func(b *testing.B) {
			benchMerge(b, format, evenChunks(doc, 40), doc)
		})
		b.Run(format+"/repeat", func(b *testing.B) {
			benchMerge(b, format, repeatTails(evenChunks(doc, 40)), doc)
		})
	}
}

func BenchmarkMergeLargeChunks(b *testing.B) {
	for _, format := range []string{"text", "csv", "json"} {
		b.Run(format, func(b *testing.B) {
			doc := mergetest.Document(format, 40*96<<10)
			benchMerge(b, format, evenChunks(doc, 40), doc)
		})
	}
}

// repeatTails returns chunks with every continuation starting with the last
// 24 to 64 bytes of the chunk before it (from a byte after a space, so that
// the repeat starts at a token), which merging must remove.
func repeatTails(chunks []Chunk) []Chunk {
	r := rand.New(rand.NewPCG(5, 6))
	out := []Chunk{chunks[0]}
	for i := 1; i < len(chunks); i++ {
		prev := chunks[i-1].Text
		start := len(prev) - 24 - r.IntN(41)
		for start > 0 && prev[start-1] != ' ' {
			start--
		}
		out = append(out, Chunk{Seq: i, Text: prev[start:] + chunks[i].Text})
	}
	return out
}
