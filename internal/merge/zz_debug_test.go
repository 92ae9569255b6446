package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZZDebugRemarks prints, for dumped failing cases, how each chunk's
// first line and last paragraph were judged.
func TestZZDebugRemarks(t *testing.T) {
	dir := os.Getenv("DUMPDIR")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, fn := range files {
		b, _ := os.ReadFile(fn)
		var chunks []Chunk
		json.Unmarshal(b, &chunks)
		format := os.Getenv("FORMAT")
		f := newFormat(format, Options{})
		doc := ""
		for i, c := range chunks {
			if i > 0 {
				s := f.site(doc)
				tr := f.traits()
				ec := envCtx{site: s, fences: tr.fences, blank: tr.blank, syntax: tr.syntax, proseAt: tr.proseAt}
				d := doc
				ec.breaks = func(line, after string, atEnd bool) bool { return f.breaks(d, line, after, atEnd) }
				line, rest, _ := strings.Cut(c.Text, "\n")
				m, after := leadingBreaks(rest)
				r, ok := judgePreamble(line, after, m > 0, ec)
				if ok && r.score < remarkSure {
					fmt.Printf("%s chunk %d: %q score %d %v\n", filepath.Base(fn), i, line, r.score, r.evidence)
				} else if !ok {
					if _, form := remarkForm(line); !form && len(line) < 80 {
						fmt.Printf("%s chunk %d: NOFORM %q\n", filepath.Base(fn), i, line)
					}
				}
			}
			if i == len(chunks)-1 {
				res, _ := Merge(Options{Format: format}, chunks)
				for _, e := range res.Envelope {
					if e.Why == WhyTrailer {
						fmt.Printf("%s TRAILER removed %q %v\n", filepath.Base(fn), e.Removed, e.Evidence)
					}
				}
				st, lines, blank, afterFence, ok := lastParagraph(c.Text)
				_ = st
				if ok {
					r, ok2 := judgeTrailer(lines, afterFence, blank, envCtx{site: f.site(doc), syntax: f.traits().syntax, breaks: func(line, after string, atEnd bool) bool { return f.breaks(doc, line, after, atEnd) }})
					fmt.Printf("%s TRAILER cand %q ok=%v score %d %v\n", filepath.Base(fn), lines, ok2, r.score, r.evidence)
				} else {
					tl := c.Text[max(0, len(c.Text)-80):]
					fmt.Printf("%s TRAILER none; ends %q\n", filepath.Base(fn), tl)
				}
			}
			res, _ := Merge(Options{Format: format}, chunks[:i+1])
			doc = res.Content
			f = newFormat(format, Options{})
			f.observe(doc, 0)
		}
	}
}
