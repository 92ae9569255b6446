package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMergeSubcommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	chunks := []string{"id,name\n1,Ada\n2,Gr", "2,Grace\n3,Alan\n", "4,Barbara\n"}
	var files []string
	for i, c := range chunks {
		f := filepath.Join(dir, "chunk"+string(rune('0'+i)))
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	meta := filepath.Join(dir, "meta.json")
	var out, errb bytes.Buffer
	args := append([]string{"merge", "--format", "csv", "--meta", meta}, files...)
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if want := "id,name\n1,Ada\n2,Grace\n3,Alan\n4,Barbara\n"; out.String() != want {
		t.Fatalf("merged %q, want %q", out.String(), want)
	}
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"merge_strategy_used", "merge_success", "final_record_count", "truncation_points", "chunk_sizes", "continuation_count", "joins"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metadata lacks %s", k)
		}
	}
	if m["final_record_count"] != float64(4) || m["continuation_count"] != float64(2) {
		t.Errorf("records %v continuations %v", m["final_record_count"], m["continuation_count"])
	}
}

func TestMergeSubcommandErrors(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if err := run([]string{"merge", "--format", "xml", "a"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Fatalf("unknown format: %v", err)
	}
	if err := run([]string{"merge", "--format", "csv"}, &out, &errb); err == nil {
		t.Fatal("no chunk files accepted")
	}
	if err := run([]string{"merge", "--format", "text", "/does/not/exist"}, &out, &errb); err == nil {
		t.Fatal("missing file accepted")
	}
}
