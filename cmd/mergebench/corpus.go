package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// doc is one real document the benchmark cuts and continues.
type doc struct {
	name   string
	format string
	text   string
	// kind refines the behaviors that apply: "numbered" records, JSON
	// carrying "diffs".
	kind string
}

// maxDoc caps a document so the benchmark stays quick; larger sources are
// cut at a record or line boundary, which leaves a valid document.
const maxDoc = 48 << 10

func defaultCache() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return filepath.Join(os.TempDir(), "carryover-fidelity")
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "carryover-fidelity")
}

func goEnv(key string) (string, error) {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// moduleDir downloads a module through the Go module proxy and returns its
// directory in the module cache.
func moduleDir(path string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", path).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", path, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", path, err)
	}
	return m.Dir, nil
}

// debianDir fetches Debian binary packages with apt-get download and unpacks
// them under cache; it returns "" (and no error) when apt is unavailable, so
// the benchmark still runs from the Go sources alone. It works in a
// directory of its own and renames the unpacked tree into place only when
// every package unpacked, so runs started side by side (one per seed) never
// read a tree another is still writing, nor keep one that lost a package.
func debianDir(cache string, pkgs ...string) string {
	dir := filepath.Join(cache, "debian")
	root := filepath.Join(dir, "root")
	if _, err := os.Stat(root); err == nil {
		return root
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	work, err := os.MkdirTemp(dir, "fetch-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(work)
	cmd := exec.Command("apt-get", append([]string{"download"}, pkgs...)...)
	cmd.Dir = work
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "mergebench: apt-get download %v: %v (skipping Debian documents)\n", pkgs, err)
		return ""
	}
	debs, _ := filepath.Glob(filepath.Join(work, "*.deb"))
	unpacked := filepath.Join(work, "root")
	for _, d := range debs {
		if err := exec.Command("dpkg-deb", "-x", d, unpacked).Run(); err != nil {
			fmt.Fprintf(os.Stderr, "mergebench: dpkg-deb -x %s: %v (skipping Debian documents)\n", d, err)
			return ""
		}
	}
	if err := os.Rename(unpacked, root); err != nil {
		// Another run put its tree in place first: the same packages.
		if _, statErr := os.Stat(root); statErr != nil {
			fmt.Fprintf(os.Stderr, "mergebench: %v (skipping Debian documents)\n", err)
			return ""
		}
	}
	return root
}

func read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// capLines cuts s to at most max bytes at a line boundary.
func capLines(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := strings.LastIndexByte(s[:max], '\n')
	return s[:i+1]
}

// loadCorpus gathers the documents: the Go toolchain's own files, modules
// from the Go module proxy and Debian packages, all fetched or read now.
func loadCorpus(cache string) ([]doc, error) {
	goroot, err := goEnv("GOROOT")
	if err != nil {
		return nil, err
	}
	gm, err := moduleDir("github.com/yuin/goldmark@v1.7.8")
	if err != nil {
		return nil, err
	}
	gd, err := moduleDir("github.com/sourcegraph/go-diff@v0.7.0")
	if err != nil {
		return nil, err
	}
	deb := debianDir(cache, "distro-info-data", "iso-codes")
	src := func(p string) string { return filepath.Join(goroot, "src", p) }
	var docs []doc
	add := func(name, format, text, kind string) {
		if strings.TrimSpace(text) != "" {
			docs = append(docs, doc{name: name, format: format, text: text, kind: kind})
		}
	}

	// CSV: Debian's release tables, the Go module checksum test table, and
	// the CommonMark spec examples written out as quoted CSV (multi-line
	// fields, embedded quotes and commas).
	if deb != "" {
		for _, f := range []string{"debian.csv", "ubuntu.csv"} {
			add("debian:"+f, "csv", read(filepath.Join(deb, "usr/share/distro-info", f)), "")
		}
	}
	zs := read(src("cmd/go/internal/modfetch/zip_sum_test/testdata/zip_sums.csv"))
	for i := 0; i < 4 && len(zs) > 0; i++ {
		part := capLines(zs, 12<<10)
		add(fmt.Sprintf("goroot:zip_sums.csv#%d", i), "csv", part, "")
		zs = zs[len(part):]
	}
	var spec []struct {
		Markdown, HTML, Section string
		Example                 int
	}
	if err := json.Unmarshal([]byte(read(filepath.Join(gm, "_test/spec.json"))), &spec); err != nil {
		return nil, fmt.Errorf("goldmark spec.json: %w", err)
	}
	for g := 0; g*60 < len(spec); g++ {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Write([]string{"example", "section", "markdown", "html"})
		for _, e := range spec[g*60 : min(len(spec), g*60+60)] {
			w.Write([]string{fmt.Sprint(e.Example), e.Section, e.Markdown, e.HTML})
		}
		w.Flush()
		add(fmt.Sprintf("goldmark:spec.csv#%d", g), "csv", b.String(), "")
	}

	// JSON: ISO code tables from Debian, test vectors and configs from GOROOT,
	// the CommonMark spec, Go source as numbered line records, and patches
	// carried in JSON documents.
	if deb != "" {
		for _, f := range []string{"iso_15924.json", "iso_3166-1.json", "iso_3166-3.json", "iso_4217.json", "iso_639-2.json"} {
			add("debian:"+f, "json", read(filepath.Join(deb, "usr/share/iso-codes/json", f)), "")
		}
	}
	for _, f := range []string{"crypto/hpke/testdata/rfc9180.json", "crypto/tls/bogo_config.json", "cmd/vendor/golang.org/x/telemetry/package-lock.json"} {
		add("goroot:"+filepath.Base(f), "json", read(src(f)), "")
	}
	for g := 0; g*40 < len(spec) && g < 6; g++ {
		b, _ := json.MarshalIndent(spec[g*40:min(len(spec), g*40+40)], "", "  ")
		add(fmt.Sprintf("goldmark:spec.json#%d", g), "json", string(b), "")
	}
	gofiles := goSources(goroot)
	for i, f := range gofiles {
		if i%3 == 0 {
			add("numbered:"+filepath.Base(f), "json", numberedJSON(read(f), false), "numbered")
		}
	}
	patches := patchFiles(goroot, gd)
	for i := 0; i+1 < len(patches); i += 2 {
		add("diffs:"+filepath.Base(patches[i]), "json", diffsJSON(patches[i:i+2]), "diffs")
	}

	// JSON Lines: go test -json output from the toolchain's test2json
	// testdata, and Go source as numbered line records.
	t2j, _ := filepath.Glob(src("cmd/internal/test2json/testdata/*.json"))
	for _, f := range t2j {
		add("test2json:"+filepath.Base(f), "jsonl", capLines(read(f), maxDoc), "")
	}
	for i, f := range gofiles {
		if i%3 == 1 {
			add("numbered:"+filepath.Base(f), "jsonl", numberedJSON(read(f), true), "numbered")
		}
	}

	// Markdown: goldmark's README, the toolchain's Markdown files, and the
	// CommonMark spec examples grouped into documents.
	add("goldmark:README.md", "markdown", read(filepath.Join(gm, "README.md")), "")
	mds := walk(goroot, ".md", 40)
	for _, f := range mds {
		add("goroot:"+strings.TrimPrefix(f, goroot), "markdown", capLines(read(f), maxDoc), "")
	}
	for g := 0; g*25 < len(spec); g++ {
		var b strings.Builder
		for _, e := range spec[g*25 : min(len(spec), g*25+25)] {
			b.WriteString(e.Markdown)
			b.WriteString("\n\n")
		}
		add(fmt.Sprintf("goldmark:spec-examples#%d", g), "markdown", b.String(), "")
	}

	// Code: Go source from GOROOT.
	for i, f := range gofiles {
		if i%3 == 2 {
			add("goroot:"+filepath.Base(f), "code", capLines(read(f), maxDoc), "")
		}
	}

	// Diffs: the race detector patches in GOROOT and go-diff's test patches.
	for _, f := range patches {
		add("patch:"+filepath.Base(f), "diff", capLines(read(f), maxDoc), "")
	}

	// Text: public-domain books shipped with the Go toolchain.
	for _, f := range []string{"testdata/Isaac.Newton-Opticks.txt", "compress/testdata/gettysburg.txt"} {
		t := read(src(f))
		for i := 0; i < 12 && len(t) > 0; i++ {
			part := capLines(t, 16<<10)
			add(fmt.Sprintf("book:%s#%d", filepath.Base(f), i), "text", part, "")
			t = t[len(part):]
		}
	}
	return docs, nil
}

// walk lists up to n files under root with the suffix, in a stable order.
func walk(root, suffix string, n int) []string {
	var out []string
	filepath.WalkDir(filepath.Join(root, "src"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	if len(out) > n {
		step := len(out) / n
		var picked []string
		for i := 0; i < len(out) && len(picked) < n; i += step {
			picked = append(picked, out[i])
		}
		out = picked
	}
	return out
}

// goSources picks Go files of moderate size spread over the tree.
func goSources(goroot string) []string {
	var out []string
	for _, f := range walk(goroot, ".go", 400) {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 3<<10 && fi.Size() < 40<<10 {
			out = append(out, f)
		}
		if len(out) == 60 {
			break
		}
	}
	return out
}

func patchFiles(goroot, godiff string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(goroot, "src/runtime/race"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".patch") {
			out = append(out, p)
		}
		return nil
	})
	ds, _ := filepath.Glob(filepath.Join(godiff, "diff/testdata/*.diff"))
	for _, f := range ds {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 400 {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// numberedJSON turns source into records {"line": N, "indent": K,
// "content": "..."}, as a JSON array or as JSON Lines.
func numberedJSON(source string, lines bool) string {
	source = capLines(source, 24<<10)
	type rec struct {
		Line    int    `json:"line"`
		Indent  int    `json:"indent"`
		Content string `json:"content"`
	}
	var b strings.Builder
	if !lines {
		b.WriteString("[\n")
	}
	ls := strings.Split(strings.TrimSuffix(source, "\n"), "\n")
	for i, l := range ls {
		t := strings.TrimLeft(l, "\t ")
		r, _ := json.Marshal(rec{i + 1, len(l) - len(t), t})
		if !lines {
			b.WriteString("  ")
		}
		b.Write(r)
		if !lines && i < len(ls)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	if !lines {
		b.WriteString("]\n")
	}
	return b.String()
}

// diffsJSON carries real patches in a JSON document, as a model asked for
// "the changes as JSON" writes them.
func diffsJSON(paths []string) string {
	type file struct {
		Path string `json:"path"`
		Diff string `json:"diff"`
	}
	var v struct {
		Summary string `json:"summary"`
		Files   []file `json:"files"`
	}
	v.Summary = "patches"
	for _, p := range paths {
		v.Files = append(v.Files, file{filepath.Base(p), capLines(read(p), 12<<10)})
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
