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
