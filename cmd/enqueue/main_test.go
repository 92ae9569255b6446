package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/worker"
)

var dbURL string

// TestMain runs the command itself when execCLI asks it to, and the tests
// otherwise.
func TestMain(m *testing.M) { testenv.MainOrCommand(m, &dbURL, main) }

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
		{[]string{"--max-attempts", "51", "write it"}, "continuation.max_attempts"},
		{[]string{"--on-failure", "maybe", "write it"}, "continuation.on_failure"},
		{[]string{"--format", "xml", "write it"}, "format"},
		{[]string{"--max-output-tokens", "3", "write it"}, "max_output_tokens"},
		{[]string{"--metadata", "{nope", "write it"}, "metadata"},
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

// A numeric flag given as 0 where its field's range excludes 0 is refused,
// naming the field and the flag, and nothing is enqueued; left out, the
// flag's field takes its default. Resume's flags likewise.
func TestExplicitZeroFlagsRefused(t *testing.T) {
	q := testenv.Queue(t)
	tests := []struct {
		args   []string
		fields []string
	}{
		{[]string{"--max-output-tokens", "0", "write it"}, []string{"max_output_tokens"}},
		{[]string{"--max-attempts", "0", "write it"}, []string{"continuation.max_attempts"}},
		{[]string{"--max-total-output-tokens", "0", "write it"}, []string{"continuation.max_total_output_tokens"}},
		{[]string{"--max-cost-usd", "0.0", "write it"}, []string{"continuation.max_cost_usd"}},
		{[]string{"--time-limit-seconds", "0", "write it"}, []string{"continuation.time_limit_seconds"}},
		{[]string{"--max-records", "0", "write it"}, []string{"continuation.max_records"}},
		{[]string{"--overlap-lines", "0", "--strategy", "overlap", "write it"}, []string{"continuation.overlap_lines"}},
		{[]string{"--max-output-tokens-ceiling", "0", "write it"}, []string{"continuation.max_output_tokens_ceiling"}},
		{[]string{"--error-policy", "retry_all(0)", "write it"}, []string{"max_retries"}},
		{[]string{"--error-policy", "model=retry:0", "write it"}, []string{"rules.model.max_consecutive_retries"}},
		// With another bad field, both are named.
		{[]string{"--max-attempts", "0", "--format", "xml", "write it"}, []string{"continuation.max_attempts", "format"}},
		{[]string{"resume", "6f1f7c0e-0000-4000-8000-000000000000", "--max-attempts", "0"}, []string{"max_attempts"}},
		{[]string{"resume", "6f1f7c0e-0000-4000-8000-000000000000", "--max-cost-usd", "0"}, []string{"max_cost_usd"}},
		{[]string{"resume", "6f1f7c0e-0000-4000-8000-000000000000", "--max-records", "0", "--time-limit-seconds", "0"},
			[]string{"max_records", "time_limit_seconds"}},
	}
	for _, tt := range tests {
		var says []string
		for _, f := range tt.fields {
			says = append(says, f+": ")
		}
		checkRefused(t, q, tt.args, append(says, "got 0")...)
	}
	// Left out, or given a value in range, the same flags are accepted.
	out, _, err := runCLI(t, q, "--max-attempts", "3", "--max-records", "5", "--error-policy", "retry_all", "write it")
	if err != nil || len(strings.TrimSpace(out)) != 36 {
		t.Fatalf("flags in range: %q %v", out, err)
	}
	id := strings.TrimSpace(out)
	if out, _, err = runCLI(t, q, "status", id, "--max-attempts", "0"); err != nil || !strings.Contains(out, "queued") {
		t.Fatalf("status ignores resume's flags: %q %v", out, err)
	}
}

// startWorker runs a worker on queue against the simulator until the test
// ends.
func startWorker(t *testing.T, queue string) {
	t.Helper()
	sim := httptest.NewServer(simulator.New(simulator.Config{}))
	t.Cleanup(sim.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{SkipMigrate: true, Logger: slog.New(slog.DiscardHandler), Config: config.Config{
			DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIAPIKey: "sk-test", OpenAIBaseURL: sim.URL + "/v1",
			Concurrency: 4, ChunkQueue: queue, LogLevel: "warn", ReconcileInterval: time.Second, StaleAfter: time.Minute,
			MaxRetry: 3, PollInterval: 50 * time.Millisecond, DelayedInterval: 100 * time.Millisecond}})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A job that used all 50 attempts resumes from the command line with
// --max-attempts up to 50 more than its chunks, and finishes the document;
// a value at or under the stored chunks is refused naming max_attempts and
// the range it takes. (Before, 100 was "must be between 1 and 50" and 30
// "must be more than the 50 chunks already stored", naming
// continuation.max_attempts.)
func TestResumePastTheAttemptCap(t *testing.T) {
	q := testenv.Queue(t)
	startWorker(t, q)
	const directive = "[[sim format=csv size=5000 seed=83]]"
	doc, _, _ := simulator.DocumentFor(directive)
	_, stderr, err := runCLI(t, q, "--format", "csv", "--max-output-tokens", "16", "--max-attempts", "50", "--timeout", "90s", "--wait", directive+" rows")
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitPartial || !strings.Contains(stderr, "50 chunks, stop_reason=steps_limit_reached") {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	id := strings.TrimPrefix(strings.SplitN(stderr, "\n", 2)[0], "job ")
	for _, tt := range []struct{ n, says string }{
		{"30", "max_attempts: must be between 51 and 100, got 30"},
		{"101", "max_attempts: must be between 51 and 100, got 101"},
	} {
		if out, _, err := runCLI(t, q, "resume", id, "--max-attempts", tt.n); err == nil || !strings.Contains(err.Error(), tt.says) || out != "" {
			t.Errorf("resume --max-attempts %s: %v %q; want it refused saying %q", tt.n, err, out, tt.says)
		}
	}
	if out, _, err := runCLI(t, q, "resume", id, "--max-attempts", "100"); err != nil || out != id+" running\n" {
		t.Fatalf("resume --max-attempts 100: %q %v", out, err)
	}
	out, stderr, err := runCLI(t, q, "wait", id, "--timeout", "90s")
	if err != nil || out != doc {
		t.Fatalf("after the resume: %v, the document equal %v\n%s", err, out == doc, stderr)
	}
}

// Every problem of the flags is named at once, before anything connects:
// an error policy that cannot be read, values out of range, explicit zeros.
func TestEveryBadFlagNamed(t *testing.T) {
	q := testenv.Queue(t)
	const job = "6f1f7c0e-0000-4000-8000-000000000000"
	tests := []struct {
		args   []string
		fields []string
	}{
		{[]string{"--error-policy", "model=retry:2,retry_all", "--format", "xml", "--max-attempts", "60", "--max-records", "0", "write a table"},
			[]string{"format: ", "continuation.max_attempts: must be between 1 and 50, got 60", "continuation.max_records: ", "continuation.error_policy: --error-policy"}},
		{[]string{"--error-policy", "retry_all(30),model=skip", "write a table"},
			[]string{"continuation.error_policy.max_retries: ", "continuation.error_policy.rules.model.action: "}},
		{[]string{"resume", job, "--max-attempts", "-1", "--max-cost-usd", "0", "--error-policy", "model=skip"},
			[]string{"max_attempts: must be positive", "max_cost_usd: ", "error_policy.rules.model.action: "}},
	}
	for _, tt := range tests {
		checkRefused(t, q, tt.args, tt.fields...)
	}
}

// checkRefused runs the CLI with args and checks it refused them, printing
// no job ID, with an error holding each of says.
func checkRefused(t *testing.T, queue string, args []string, says ...string) {
	t.Helper()
	out, _, err := runCLI(t, queue, args...)
	if err == nil || out != "" {
		t.Errorf("%v: err %v, stdout %q; want it refused", args, err, out)
		return
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v: %v; want it to say %q", args, err, s)
		}
	}
}
