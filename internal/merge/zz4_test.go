package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// For each dumped case: the continuation chunks' first lines (preambles, in
// the preamble habit) and, as negatives, the first lines of clean joins that
// have a remark's form.
func TestZZ4(t *testing.T) {
	dir := os.Getenv("DUMPDIR")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var pos, neg [][2]float64
	for fi, fn := range files {
		if !strings.Contains(filepath.Base(fn), "_preamble_") || fi%2 != 0 {
			continue
		}
		b, _ := os.ReadFile(fn)
		var chunks []Chunk
		json.Unmarshal(b, &chunks)
		doc := chunks[0].Text
		for i := 1; i < len(chunks); i++ {
			c := chunks[i].Text
			line, rest, _ := strings.Cut(c, "\n")
			_, after := leadingBreaks(rest)
			sep := rest[:len(rest)-len(after)]
			if l, ok := readLanguage(doc, line, "\n"+sep, after); ok {
				pos = append(pos, [2]float64{l.foreign, l.goesOn})
			}
			doc += after
		}
		// negatives: cuts at line starts or mid-line where the rest of the
		// line has a remark's form
		for p := 2 * langHeldOut; p < len(doc); p++ {
			if p%7 != 0 && doc[p-1] != '\n' {
				continue
			}
			e := strings.IndexByte(doc[p:], '\n')
			if e < 0 {
				break
			}
			fl := doc[p : p+e]
			if _, f := remarkForm(fl); !f || startsOver(fl, envCtx{site: site{partial: doc[strings.LastIndexByte(doc[:p], '\n')+1 : p]}}) {
				continue
			}
			if l, ok := readLanguage(doc[:p], fl, "\n", doc[p+e+1:]); ok {
				neg = append(neg, [2]float64{l.foreign, l.goesOn})
			}
		}
	}
	q := func(xs [][2]float64, k int) string {
		v := make([]float64, len(xs))
		for i, x := range xs {
			v[i] = x[k]
		}
		sort.Float64s(v)
		if len(v) == 0 {
			return "-"
		}
		return fmt.Sprintf("n=%d p10=%.2f p25=%.2f p50=%.2f p75=%.2f p90=%.2f", len(v), v[len(v)/10], v[len(v)/4], v[len(v)/2], v[3*len(v)/4], v[9*len(v)/10])
	}
	fmt.Println("preambles foreign", q(pos, 0))
	fmt.Println("preambles goesOn ", q(pos, 1))
	fmt.Println("doc lines foreign", q(neg, 0))
	fmt.Println("doc lines goesOn ", q(neg, 1))
}
