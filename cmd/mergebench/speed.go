package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/merge"
)

// speed merges a size-byte document of each format cut into n chunks and
// compares the throughput with a plain concatenation of the same chunks.
func speed(size, n int) error {
	fmt.Printf("%-9s %10s %12s %7s %7s %10s\n", "format", "MB/s", "concat MB/s", "ratio", "exact", "heap MB")
	for _, format := range []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"} {
		doc := synth(format, size)
		chunks := cut(doc, n)
		mb := float64(len(doc)) / (1 << 20)
		var res merge.Result
		mergeT := best(3, func() {
			var err error
			res, err = merge.Merge(merge.Options{Format: format}, chunks)
			if err != nil {
				panic(err)
			}
		})
		concatT := best(3, func() {
			var b strings.Builder
			for _, c := range chunks {
				b.WriteString(c.Text)
			}
			_ = b.String()
		})
		heap := peakHeap(func() { merge.Merge(merge.Options{Format: format}, chunks) })
		fmt.Printf("%-9s %10.0f %12.0f %7.2f %7v %10.0f\n", format, mb/mergeT.Seconds(), mb/concatT.Seconds(),
			concatT.Seconds()/mergeT.Seconds(), res.Content == doc && res.Success, heap/(1<<20))
	}
	return nil
}

func best(k int, f func()) time.Duration {
	d := time.Duration(1<<63 - 1)
	for range k {
		runtime.GC()
		t := time.Now()
		f()
		d = min(d, time.Since(t))
	}
	return d
}

// peakHeap samples the heap in use while f runs, less what was in use before.
func peakHeap(f func()) float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	done := make(chan struct{})
	peak := base
	go func() {
		var s runtime.MemStats
		for {
			select {
			case <-done:
				return
			default:
			}
			runtime.ReadMemStats(&s)
			peak = max(peak, s.HeapAlloc)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	f()
	close(done)
	return float64(peak - base)
}

// cut splits doc into n chunks at random rune-safe (ASCII) points.
func cut(doc string, n int) []merge.Chunk {
	r := rand.New(rand.NewPCG(7, 7))
	pos := map[int]bool{}
	for len(pos) < n-1 {
		pos[1+r.IntN(len(doc)-1)] = true
	}
	ps := []int{0}
	for p := range pos {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	ps = append(ps, len(doc))
	var out []merge.Chunk
	for i := 0; i+1 < len(ps); i++ {
		out = append(out, merge.Chunk{Seq: i, Text: doc[ps[i]:ps[i+1]], FinishReason: "length"})
	}
	out[len(out)-1].FinishReason = "stop"
	return out
}

var words = strings.Fields("the merge is what users judge the product by a continued document with a doubled header or a table cut in half makes the whole job worthless so every join is verified against the format before anything is cut")

// synth writes a document of about size bytes in the format, varied enough
// that overlaps are not trivially periodic.
func synth(format string, size int) string {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.Grow(size + 4096)
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	switch format {
	case "json":
		b.WriteString("{\"items\": [\n")
	}
	for i := 0; b.Len() < size; i++ {
		switch format {
		case "csv":
			if i == 0 {
				b.WriteString("id,name,note,value\n")
			}
			fmt.Fprintf(&b, "%d,%s,\"%s, \"\"quoted\"\"\",%d.%02d\n", i, words[i%len(words)], sentence(8), r.IntN(1000), r.IntN(100))
		case "json":
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "  {\"id\": %d, \"name\": %q, \"text\": %q, \"ok\": %v}", i, words[i%len(words)], sentence(12), i%3 == 0)
		case "jsonl":
			fmt.Fprintf(&b, "{\"line\": %d, \"indent\": %d, \"content\": %q}\n", i+1, i%4, sentence(10))
		case "markdown":
			switch i % 5 {
			case 0:
				fmt.Fprintf(&b, "## Section %d\n\n", i)
			case 1:
				fmt.Fprintf(&b, "%s.\n\n", sentence(40))
			case 2:
				fmt.Fprintf(&b, "| a | b |\n|---|---|\n| %s | %d |\n\n", sentence(3), i)
			case 3:
				fmt.Fprintf(&b, "```go\nx := %d // %s\n```\n\n", i, sentence(5))
			default:
				fmt.Fprintf(&b, "- %s\n- %s\n\n", sentence(6), sentence(6))
			}
		case "code":
			fmt.Fprintf(&b, "// f%d %s.\nfunc f%d(x int) int {\n\tif x > %d {\n\t\treturn x - %d\n\t}\n\treturn x\n}\n\n", i, sentence(8), i, r.IntN(100), i)
		case "diff":
			fmt.Fprintf(&b, "diff --git a/f%d.go b/f%d.go\n--- a/f%d.go\n+++ b/f%d.go\n@@ -1,3 +1,3 @@\n %s\n-%s\n+%s\n", i, i, i, i, sentence(6), sentence(6), sentence(6))
		default:
			fmt.Fprintf(&b, "%s.\n", sentence(15))
			if i%6 == 5 {
				b.WriteString("\n")
			}
		}
	}
	if format == "json" {
		b.WriteString("\n]}\n")
	}
	return b.String()
}
