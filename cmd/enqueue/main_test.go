package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/testenv"
)

var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

func runCLI(t *testing.T, queue string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("REDIS_URL", testenv.RedisURL())
	t.Setenv("CARRYOVER_QUEUE", queue)
	var out, errb bytes.Buffer
	err = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

func TestBadInputNamesTheFieldAndEnqueuesNothing(t *testing.T) {
	q := testenv.Queue(t)
	tests := []struct {
		args  []string
		field string
	}{
		{[]string{"--max-attempts", "51", "write"}, "continuation.max_attempts"},
		{[]string{"--on-failure", "maybe", "write"}, "continuation.on_failure"},
		{[]string{"--format", "xml", "write"}, "format"},
		{[]string{"--max-output-tokens", "3", "write"}, "max_output_tokens"},
		{[]string{"--metadata", "{nope", "write"}, "metadata"},
		{[]string{}, "input"},
	}
	for _, tt := range tests {
		out, _, err := runCLI(t, q, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.field) || out != "" {
			t.Errorf("%v: err %v, stdout %q; want an error naming %s and no job ID", tt.args, err, out, tt.field)
		}
	}
	if _, _, err := runCLI(t, q, "--prompt-file", "x.txt", "and a prompt"); err == nil {
		t.Error("--prompt-file with a PROMPT accepted")
	}
}

func TestEnqueueStatusResultCancel(t *testing.T) {
	q := testenv.Queue(t)
	out, _, err := runCLI(t, q, "--format", "csv", "--max-attempts", "5", "Write a CSV.", "--idempotency-key", testenv.RandomName("k"))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	if len(id) != 36 || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout must be the job ID alone, got %q", out)
	}
	out, _, err = runCLI(t, q, "status", id, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "status", "chunks", "finish_reasons", "tokens", "cost_usd"} {
		if _, ok := st[k]; !ok {
			t.Errorf("status --json lacks %q: %s", k, out)
		}
	}
	if st["id"] != id || st["status"] != "queued" {
		t.Fatalf("%v", st)
	}
	if out, _, err = runCLI(t, q, "status", id); err != nil || !strings.Contains(out, "queued") {
		t.Fatalf("human status: %q %v", out, err)
	}
	if _, _, err = runCLI(t, q, "result", id); err == nil || !strings.Contains(err.Error(), "no result yet") {
		t.Fatalf("result before the merge: %v", err)
	}
	if out, _, err = runCLI(t, q, "cancel", id); err != nil || out != id+" cancelled\n" {
		t.Fatalf("cancel: %q %v", out, err)
	}
	if _, _, err = runCLI(t, q, "remerge", id); err == nil || !strings.Contains(err.Error(), "stored chunks") {
		t.Fatalf("remerge of a job with no chunks: %v", err)
	}
	if _, _, err = runCLI(t, q, "status", "not-a-job"); err == nil || !strings.Contains(err.Error(), "not a job ID") {
		t.Fatalf("status of a malformed ID: %v", err)
	}
}
