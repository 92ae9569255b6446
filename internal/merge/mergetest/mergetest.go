// Package mergetest makes synthetic documents for the merge benchmarks (the
// package's own and cmd/mergebench's), so both measure the same texts.
package mergetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var words = strings.Fields("the merge is what users judge the product by a continued document with a doubled header or a table cut in half makes the whole job worthless so every join is verified against the format before anything is cut")

// Document writes a deterministic document of about size bytes in the format
// (csv, json, jsonl, markdown, code, diff, anything else: prose), varied
// enough that overlaps are not trivially periodic.
func Document(format string, size int) string {
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
