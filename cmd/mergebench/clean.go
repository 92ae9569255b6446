package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/carryover/carryover/internal/merge"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// clean merges documents the model left alone, whole and cut once, and
// reports every one the merge changed: a false reading of the envelope or
// a join on a document with nothing to take away, which is silent loss.
// The documents are Markdown files outside the fidelity benchmark's
// corpus (GOROOT's that walk does not pick, and the module cache's), so
// neither half of that benchmark is looked at.
func clean() error {
	goroot, err := goEnv("GOROOT")
	if err != nil {
		return err
	}
	files := cleanFiles(goroot)
	n, whole, cut := 0, 0, 0
	for _, f := range files {
		p := f.path
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 200 || len(b) > 200<<10 {
			continue
		}
		doc := string(b)
		n++
		res, err := merge.Merge(merge.Options{Format: "markdown"}, []merge.Chunk{{Seq: 0, Text: doc, FinishReason: "stop"}})
		if err != nil {
			return err
		}
		if res.Content != doc {
			whole++
			fmt.Printf("CHANGED whole %s: removed %q\n", p, removedText(res))
		}
		// Each file's cut depends on its name alone (under its root), not
		// on which other files the cache holds: counts of two runs compare
		// over the files both saw.
		r := rand.New(rand.NewPCG(3, fileStream(f.key)))
		k := len(doc)/4 + r.IntN(len(doc)/2)
		res, err = merge.Merge(merge.Options{Format: "markdown"}, []merge.Chunk{{Seq: 0, Text: doc[:k], FinishReason: "length"}, {Seq: 1, Text: doc[k:], FinishReason: "stop"}})
		if err != nil {
			return err
		}
		if res.Content != doc {
			cut++
			fmt.Printf("CHANGED cut at %d %s: removed %q, joins %+v\n", k, p, removedText(res), res.Joins)
		}
	}
	fmt.Printf("\n%d Markdown documents outside the corpus, left alone by the model\n", n)
	fmt.Printf("changed by the merge: %d merged whole, %d cut once (each is silent loss)\n", whole, cut)
	return nil
}

// cleanFile is a Markdown file outside the corpus: its path, and its key,
// the path under its root (GOROOT, the module cache).
type cleanFile struct{ path, key string }

// cleanFiles lists the Markdown files outside the corpus, sorted.
func cleanFiles(goroot string) []cleanFile {
	picked := map[string]bool{}
	for _, p := range walk(goroot, ".md", 40) {
		picked[p] = true
	}
	var files []cleanFile
	add := func(root string, skip func(string) bool) {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") && !skip(p) {
				rel, _ := filepath.Rel(root, p)
				files = append(files, cleanFile{p, filepath.ToSlash(rel)})
			}
			return nil
		})
	}
	add(filepath.Join(goroot, "src"), func(p string) bool { return picked[p] })
	if mod, err := goEnv("GOMODCACHE"); err == nil && mod != "" {
		add(mod, func(p string) bool { return strings.Contains(p, "goldmark") })
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

// fileStream numbers a file's random stream by its key.
func fileStream(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// removedText is what the envelope step took out of a merge, joined.
func removedText(res merge.Result) string {
	var parts []string
	for _, e := range res.Envelope {
		parts = append(parts, e.Removed)
	}
	return strings.Join(parts, " | ")
}

// cleanHabits runs the tuning half's Markdown habits (its phrasings, its
// cuttings) on the documents clean reads, one case per document and
// habit, and prints the share merged exactly per habit. The documents are
// in neither half of the fidelity benchmark: a third set to tune on, many
// times larger than the tuning half's Markdown, whose failures say how
// the merge does on documents it was not tuned on without looking at the
// evaluation half. only (comma-separated habit names) narrows the habits;
// every takes every n-th document.
func cleanHabits(only string, every int, verbose bool) error {
	goroot, err := goEnv("GOROOT")
	if err != nil {
		return err
	}
	book := phrasebooks()[tuning]
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	tab := newTable()
	for i, f := range cleanFiles(goroot) {
		if i%max(every, 1) != 0 {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil || len(b) < 200 || len(b) > 200<<10 {
			continue
		}
		d := doc{name: "clean:" + f.key, format: "markdown", text: capLines(string(b), maxDoc)}
		for _, h := range habits() {
			if !h.appliesTo(d) || only != "" && !slices.Contains(strings.Split(only, ","), h.name) {
				continue
			}
			for tr := 0; tr < 5; tr++ {
				c, ok := buildCase(tuning, d, h, tr, 3, book)
				if !ok {
					continue
				}
				res, err := merge.Merge(merge.Options{Format: d.format}, c.chunks)
				if err != nil {
					return err
				}
				ok = same(md, d.format, d.text, res.Content)
				tab.add(d.format, h.name, ok, same(md, d.format, d.text, concat(c.chunks)))
				if verbose && !ok {
					reportFailure(c, res)
				}
				break
			}
		}
	}
	fmt.Printf("\n== Markdown documents outside the corpus, the tuning half's habits and phrasings\n")
	tab.print()
	return nil
}
