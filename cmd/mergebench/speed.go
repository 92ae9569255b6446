package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/merge/mergetest"
)

// speed merges a size-byte document of each format cut into n chunks and
// compares the throughput with a plain concatenation of the same chunks.
func speed(size, n int) error {
	fmt.Printf("%-9s %10s %12s %7s %7s %10s\n", "format", "MB/s", "concat MB/s", "ratio", "exact", "heap MB")
	for _, format := range []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"} {
		doc := mergetest.Document(format, size)
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
