//go:build compare

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carryover/carryover/internal/merge"
)

// fuzzSeed is one seed input of internal/merge's fuzzers.
type fuzzSeed struct {
	fuzzer, name string
	doc          string
	cuts         []byte
}

// fuzzFormats are the formats each fuzzer merges its input as.
var fuzzFormats = map[string][]string{
	"FuzzMergeText":       {"text", "markdown", "code", "diff"},
	"FuzzMergeStructured": {"csv", "json", "jsonl", "auto"},
}

// addedSeeds are the f.Add seeds of internal/merge/fuzz_test.go, copied.
// fuzzSeeds also reads that file's f.Add calls and adds any seed this copy
// lacks, so a seed added there is compared too.
var addedSeeds = []fuzzSeed{
	{"FuzzMergeText", "", "The quick brown fox jumps over the lazy dog.\nSecond line.\n", []byte{13, 20}},
	{"FuzzMergeText", "", "```go\nfunc a() {}\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n", []byte{7, 9, 11}},
	{"FuzzMergeText", "", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", []byte{30, 5}},
	{"FuzzMergeText", "", "我们今天去公园散步，然后回家吃饭。", []byte{9}},
	{"FuzzMergeText", "", "Sure, here is the continuation:\n\nabc", []byte{1}},
	{"FuzzMergeText", "", "one\ntwo\n---BEGIN_OVERLAP---\ntwo\n---END_OVERLAP---\nthree\n", []byte{8, 40}},
	{"FuzzMergeStructured", "", "id,name\n1,\"a, b\"\n2,\"c\"\"d\"\n", []byte{10, 8}},
	{"FuzzMergeStructured", "", `{"data": {"items": [{"line": 1}, {"line": 2}]}}`, []byte{20, 10}},
	{"FuzzMergeStructured", "", "{\"a\":1}\n{\"b\":\"x\\ny\"}\n", []byte{12}},
	{"FuzzMergeStructured", "", `[1, 2, "\u00e9\\", {"k": [true, null]}]`, []byte{3, 3, 3}},
	{"FuzzMergeStructured", "", "id,n\n1,\"a\nb\"\n---BEGIN_OVERLAP---\n1,\"a\nb\"\n---END_OVERLAP---\n2,c\n", []byte{12, 40}},
}

// fuzzSeeds calls each with every seed and every format its fuzzer merges
// it as: the f.Add seeds, then the corpus files under testdata/fuzz.
func fuzzSeeds(repo string, each func(s fuzzSeed, format string)) error {
	seeds := append([]fuzzSeed(nil), addedSeeds...)
	parsed, err := parsedSeeds(filepath.Join(repo, "internal/merge/fuzz_test.go"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "mergebench: reading f.Add seeds: %v (using the copy)\n", err)
	}
	for _, p := range parsed {
		if !hasSeed(seeds, p) {
			seeds = append(seeds, p)
		}
	}
	for i := range seeds {
		seeds[i].name = fmt.Sprintf("%s f.Add #%d", seeds[i].fuzzer, i)
	}
	for fuzzer := range fuzzFormats {
		files, _ := filepath.Glob(filepath.Join(repo, "internal/merge/testdata/fuzz", fuzzer, "*"))
		sort.Strings(files)
		for _, f := range files {
			s, err := readSeedFile(f)
			if err != nil {
				return err
			}
			s.fuzzer, s.name = fuzzer, fuzzer+"/"+filepath.Base(f)
			seeds = append(seeds, s)
		}
	}
	for _, s := range seeds {
		for _, format := range fuzzFormats[s.fuzzer] {
			each(s, format)
		}
	}
	return nil
}

func hasSeed(seeds []fuzzSeed, s fuzzSeed) bool {
	for _, x := range seeds {
		if x.fuzzer == s.fuzzer && x.doc == s.doc && string(x.cuts) == string(s.cuts) {
			return true
		}
	}
	return false
}

// readSeedFile reads a "go test fuzz v1" file of a (string, []byte) fuzzer.
func readSeedFile(path string) (fuzzSeed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return fuzzSeed{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != "go test fuzz v1" {
		return fuzzSeed{}, fmt.Errorf("%s: not a go test fuzz v1 file of two values", path)
	}
	arg := func(l, typ string) (string, error) {
		q, ok := strings.CutPrefix(l, typ+"(")
		if !ok || !strings.HasSuffix(q, ")") {
			return "", fmt.Errorf("%s: want %s(...), have %q", path, typ, l)
		}
		return strconv.Unquote(strings.TrimSuffix(q, ")"))
	}
	doc, err := arg(lines[1], "string")
	if err != nil {
		return fuzzSeed{}, err
	}
	cuts, err := arg(lines[2], "[]byte")
	return fuzzSeed{doc: doc, cuts: []byte(cuts)}, err
}

// parsedSeeds reads the f.Add(string, []byte{...}) calls of fuzz_test.go,
// by the fuzz function they are in.
func parsedSeeds(path string) ([]fuzzSeed, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []fuzzSeed
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fuzzFormats[fn.Name.Name] == nil {
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			if s, ok := addCall(n); ok {
				s.fuzzer = fn.Name.Name
				out = append(out, s)
			}
			return true
		})
	}
	return out, nil
}

// addCall reads f.Add("...", []byte{...}) with literal arguments.
func addCall(n ast.Node) (fuzzSeed, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return fuzzSeed{}, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Add" {
		return fuzzSeed{}, false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	cl, ok2 := call.Args[1].(*ast.CompositeLit)
	if !ok || !ok2 || lit.Kind != token.STRING {
		return fuzzSeed{}, false
	}
	doc, err := strconv.Unquote(lit.Value)
	if err != nil {
		return fuzzSeed{}, false
	}
	var cuts []byte
	for _, e := range cl.Elts {
		b, ok := e.(*ast.BasicLit)
		if !ok {
			return fuzzSeed{}, false
		}
		v, err := strconv.ParseUint(b.Value, 0, 8)
		if err != nil {
			return fuzzSeed{}, false
		}
		cuts = append(cuts, byte(v))
	}
	return fuzzSeed{doc: doc, cuts: cuts}, true
}

// splitAt is fuzz_test.go's: it cuts doc at the given fractions (bytes of
// a fuzz input, at most 12, as the fuzzers use them) into chunks.
func splitAt(doc string, cuts []byte) []string {
	if len(cuts) > 12 {
		cuts = cuts[:12]
	}
	doc = strings.ToValidUTF8(doc, "\uFFFD")
	var out []string
	prev := 0
	for _, c := range cuts {
		p := prev + int(c)%(len(doc)-prev+1)
		for p > prev && p < len(doc) && !utf8.RuneStart(doc[p]) {
			p--
		}
		out = append(out, doc[prev:p])
		prev = p
	}
	return append(out, doc[prev:])
}

// chunksOf is merge_test.go's: the parts as an answer that stopped at the
// end.
func chunksOf(parts []string) []merge.Chunk {
	return asChunks(parts)
}
