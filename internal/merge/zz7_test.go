package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Score distributions of judgePreamble on true preambles and on document
// lines in a remark's form at cuts, over dumped tuning cases.
func TestZZ7(t *testing.T) {
	dir := os.Getenv("DUMPDIR")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	posH, negH := map[int]int{}, map[int]int{}
	var negEx []string
	for fi, fn := range files {
		if !strings.Contains(filepath.Base(fn), "_preamble_") || fi%2 != 0 {
			continue
		}
		format := formatOf(fn)
		b, _ := os.ReadFile(fn)
		var chunks []Chunk
		json.Unmarshal(b, &chunks)
		doc := chunks[0].Text
		judge := func(doc, line, rest string) (remark, bool) {
			f := newFormat(format, Options{})
			f.observe(doc, 0)
			tr := f.traits()
			c := envCtx{site: f.site(doc), fences: tr.fences, blank: tr.blank, syntax: tr.syntax, proseAt: tr.proseAt}
			c.breaks = func(line, after string, atEnd bool) bool { return f.breaks(doc, line, after, atEnd) }
			m, after := leadingBreaks(rest)
			return judgePreamble(line, after, m > 0, c)
		}
		for i := 1; i < len(chunks); i++ {
			line, rest, _ := strings.Cut(chunks[i].Text, "\n")
			if r, ok := judge(doc, line, rest); ok {
				posH[r.score]++
			} else {
				posH[-99]++
			}
			_, after := leadingBreaks(rest)
			doc += after
		}
		for p := 256; p < len(doc); p++ {
			if p%5 != 0 && doc[p-1] != '\n' {
				continue
			}
			e := strings.IndexByte(doc[p:], '\n')
			if e < 0 {
				break
			}
			if r, ok := judge(doc[:p], doc[p:p+e], doc[p+e+1:]); ok {
				negH[r.score]++
				if r.score >= 5 && len(negEx) < 30 {
					negEx = append(negEx, fmt.Sprintf("%d %q %v", r.score, doc[p:p+e], r.evidence))
				}
			}
		}
	}
	for s := -3; s <= 12; s++ {
		fmt.Printf("score %3d  preambles %4d  doc lines %4d\n", s, posH[s], negH[s])
	}
	fmt.Println("preambles not judged:", posH[-99])
	for _, e := range negEx {
		fmt.Println(e)
	}
}

func formatOf(fn string) string {
	b := filepath.Base(fn)
	switch {
	case strings.Contains(b, ".csv"):
		return "csv"
	case strings.HasPrefix(b, "test2json") || strings.Contains(b, "numbered") && strings.Contains(b, "jsonl"):
		return "jsonl"
	case strings.Contains(b, ".json") || strings.HasPrefix(b, "diffs_") || strings.HasPrefix(b, "numbered"):
		return "json"
	case strings.HasPrefix(b, "patch_"):
		return "diff"
	case strings.Contains(b, ".md") || strings.Contains(b, "spec-examples") || strings.Contains(b, "README"):
		return "markdown"
	case strings.HasPrefix(b, "book"):
		return "text"
	}
	return "code"
}
