package merge

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// BenchmarkMergeJSON merges an 8 MB JSON document cut into 80 chunks at
// random points, as the speed benchmark of cmd/mergebench does at 50 MB.
func BenchmarkMergeJSON(b *testing.B) {
	words := strings.Fields("the merge is what users judge the product by a continued document with a doubled header or a table cut in half makes the whole job worthless so every join is verified against the format before anything is cut")
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	sb.WriteString("{\"items\": [\n")
	for i := 0; sb.Len() < 8<<20; i++ {
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, "  {\"id\": %d, \"name\": %q, \"text\": %q, \"ok\": %v}", i, words[i%len(words)], sentence(12), i%3 == 0)
	}
	sb.WriteString("\n]}\n")
	doc := sb.String()
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

// benchDoc writes a document of about size bytes in the format, varied
// enough that overlaps are not trivially periodic (as mergebench speed does).
func benchDoc(format string, size int) string {
	words := strings.Fields("the merge is what users judge the product by a continued document with a doubled header or a table cut in half makes the whole job worthless so every join is verified against the format before anything is cut")
	r := rand.New(rand.NewPCG(1, 2))
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	var sb strings.Builder
	if format == "json" {
		sb.WriteString("{\"items\": [\n")
	}
	for i := 0; sb.Len() < size; i++ {
		switch format {
		case "csv":
			if i == 0 {
				sb.WriteString("id,name,note,value\n")
			}
			fmt.Fprintf(&sb, "%d,%s,\"%s, \"\"quoted\"\"\",%d.%02d\n", i, words[i%len(words)], sentence(8), r.IntN(1000), r.IntN(100))
		case "json":
			if i > 0 {
				sb.WriteString(",\n")
			}
			fmt.Fprintf(&sb, "  {\"id\": %d, \"name\": %q, \"text\": %q, \"ok\": %v}", i, words[i%len(words)], sentence(12), i%3 == 0)
		default:
			fmt.Fprintf(&sb, "%s.\n", sentence(15))
			if i%6 == 5 {
				sb.WriteString("\n")
			}
		}
	}
	if format == "json" {
		sb.WriteString("\n]}\n")
	}
	return sb.String()
}

// evenChunks cuts doc into n chunks of (nearly) equal size.
func evenChunks(doc string, n int) []Chunk {
	var out []Chunk
	for i := 0; i < n; i++ {
		out = append(out, Chunk{Seq: i, Text: doc[i*len(doc)/n : (i+1)*len(doc)/n]})
	}
	return out
}

func benchMerge(b *testing.B, format string, chunks []Chunk) {
	var doc strings.Builder
	for _, c := range chunks {
		doc.WriteString(c.Text)
	}
	want := doc.String()
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
// must follow the chunk's size, not the document's. BenchmarkMergeLargeChunks
// is the same formats in 40 chunks of 96 KB, the throughput to compare with.
func BenchmarkMergeSmallChunks(b *testing.B) {
	for _, format := range []string{"text", "csv", "json"} {
		b.Run(format, func(b *testing.B) {
			doc := benchDoc(format, 40*256)
			benchMerge(b, format, evenChunks(doc, 40))
		})
	}
}

func BenchmarkMergeLargeChunks(b *testing.B) {
	for _, format := range []string{"text", "csv", "json"} {
		b.Run(format, func(b *testing.B) {
			doc := benchDoc(format, 40*96<<10)
			benchMerge(b, format, evenChunks(doc, 40))
		})
	}
}
