package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

// execCLI runs the enqueue command as a user does, in a process of its own,
// with the test's database and queue unless env overrides them, and
// returns its exit code and output.
func execCLI(t *testing.T, queue string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	base := []string{"DATABASE_URL=" + dbURL, "REDIS_URL=" + testenv.RedisURL(), "CARRYOVER_QUEUE=" + queue, "CARRYOVER_TENANT="}
	return testenv.Command(t, append(base, env...), args...)
}

// jobCount counts the jobs stored in the test's database.
func jobCount(t *testing.T) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A typo of a subcommand, a bare word and a stray argument are refused with
// the usage on stderr and exit code 2, and queue nothing: `enqueue help`
// and `enqueue statsu` used to queue a (paid) job whose prompt was the
// word. help and -h list the subcommands and exit 0.
func TestUsageRefusedAndNothingQueued(t *testing.T) {
	q := testenv.Queue(t)
	id := "6f1f7c0e-0000-4000-8000-000000000000"
	tests := []struct {
		args []string
		code int
		want []string // in stderr
	}{
		{[]string{"help"}, 0, []string{"usage: enqueue", "enqueue status ID", "enqueue resume ID", "--prompt"}},
		{[]string{"-h"}, 0, []string{"usage: enqueue", "enqueue remerge ID", "-tenant"}},
		{[]string{"statsu"}, 2, []string{`unknown enqueue subcommand "statsu" (did you mean "status"?)`, "usage: enqueue"}},
		{[]string{"statsu", id}, 2, []string{`(did you mean "status"?)`}},
		{[]string{"reslt", id}, 2, []string{`(did you mean "result"?)`}},
		{[]string{"hello"}, 2, []string{`unknown enqueue subcommand "hello"`, "a one-word prompt is given with --prompt"}},
		{[]string{"--format", "csv", "write"}, 2, []string{`"write" (did you mean "wait"?)`}},
		{[]string{"status"}, 2, []string{"status takes one job ID, got 0 arguments", "usage: enqueue"}},
		{[]string{"status", id, "extra"}, 2, []string{"status takes one job ID, got 2 arguments"}},
		{[]string{"result", id, id}, 2, []string{"result takes one job ID"}},
		{[]string{"cancel"}, 2, []string{"cancel takes one job ID"}},
		{[]string{"Write a CSV.", "and more"}, 2, []string{"give the prompt as one argument"}},
		{[]string{"--prompt", "write", "Write a CSV."}, 2, []string{"give one of --prompt-file, --prompt and PROMPT"}},
		{[]string{"--no-such-flag", "Write a CSV."}, 2, []string{"flag provided but not defined: -no-such-flag", "usage: enqueue"}},
		{[]string{"status", id, "--no-such-flag"}, 2, []string{"flag provided but not defined"}},
	}
	for _, tt := range tests {
		code, out, errOut := execCLI(t, q, nil, tt.args...)
		if code != tt.code || out != "" {
			t.Errorf("enqueue %q: exit %d, stdout %q; want exit %d and nothing on stdout (stderr %q)", tt.args, code, out, tt.code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("enqueue %q: stderr lacks %q:\n%s", tt.args, w, errOut)
			}
		}
	}
	if n := jobCount(t); n != 0 {
		t.Fatalf("%d jobs stored by refused command lines", n)
	}
	// A one-word prompt, given with --prompt, is a job.
	code, out, errOut := execCLI(t, q, nil, "--prompt", "write")
	if code != 0 || len(strings.TrimSpace(out)) != 36 {
		t.Fatalf("--prompt write: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A job enqueued with --tenant belongs to that tenant: an API key of it
// reads the job, a key of another tenant gets 404, and status names the
// tenant. A malformed tenant is refused with the rule and nothing stored;
// an unknown one says how a tenant is made.
func TestTenantFlag(t *testing.T) {
	q := testenv.Queue(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acme := testenv.RandomName("acme-")
	acmeKey, _, err := st.CreateAPIKey(ctx, acme)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := st.CreateAPIKey(ctx, testenv.RandomName("other-"))
	if err != nil {
		t.Fatal(err)
	}
	before := jobCount(t)
	refusals := []struct {
		args []string
		want string
	}{
		{[]string{"--tenant", "Bad Tenant!", "Write a CSV."}, `tenant: must be 1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit, got "Bad Tenant!"`},
		{[]string{"--tenant", "nosuch", "Write a CSV."}, `no tenant "nosuch" (a tenant is made with its first API key: worker apikey create --tenant nosuch)`},
	}
	for _, tt := range refusals {
		code, out, errOut := execCLI(t, q, nil, tt.args...)
		if code == 0 || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a refusal saying %q", tt.args, code, out, errOut, tt.want)
		}
	}
	if n := jobCount(t); n != before {
		t.Fatalf("refused tenants stored %d jobs", n-before)
	}
	code, out, errOut := execCLI(t, q, nil, "--tenant", acme, "Write a CSV.")
	if code != 0 {
		t.Fatalf("--tenant %s: exit %d: %s", acme, code, errOut)
	}
	id := strings.TrimSpace(out)
	// CARRYOVER_TENANT is --tenant's default.
	if code, _, errOut = execCLI(t, q, []string{"CARRYOVER_TENANT=" + acme}, "Write a CSV."); code != 0 {
		t.Fatalf("CARRYOVER_TENANT=%s: exit %d: %s", acme, code, errOut)
	}
	if _, out, _ = execCLI(t, q, nil, "status", id); !strings.Contains(out, "tenant       "+acme+"\n") {
		t.Errorf("status does not name the tenant:\n%s", out)
	}
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: q})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := httptest.NewServer(api.New(c, slog.New(slog.DiscardHandler)).Handler())
	defer srv.Close()
	for key, want := range map[string]int{acmeKey: http.StatusOK, otherKey: http.StatusNotFound} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/jobs/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET the job with a key of %s: %d, want %d", map[bool]string{true: acme, false: "another tenant"}[key == acmeKey], resp.StatusCode, want)
		}
	}
}

// emptyDatabase creates a database with no tables, dropped when the test ends.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.AdminDatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := testenv.RandomName("empty_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), testenv.AdminDatabaseURL()); err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(testenv.AdminDatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Against an un-migrated database every command says to run `worker
// migrate` (it said `relation "jobs" does not exist`); with Redis down the
// real error comes alone, without go-redis's pool lines, and status and
// result, which only read Postgres, still answer.
func TestServicesMissing(t *testing.T) {
	q := testenv.Queue(t)
	empty := emptyDatabase(t)
	id := "6f1f7c0e-0000-4000-8000-000000000000"
	for _, args := range [][]string{{"status", id}, {"result", id}, {"Write a CSV."}} {
		code, _, errOut := execCLI(t, q, []string{"DATABASE_URL=" + empty}, args...)
		if code != 1 || !strings.Contains(errOut, "run `worker migrate`") || strings.Contains(errOut, "relation") {
			t.Errorf("%q on an un-migrated database: exit %d, stderr %q; want the hint to run worker migrate", args, code, errOut)
		}
	}
	_, out, _ := execCLI(t, q, nil, "Write a CSV.")
	id = strings.TrimSpace(out)
	down := []string{"REDIS_URL=redis://127.0.0.1:1/0"}
	code, out, errOut := execCLI(t, q, down, "Write a CSV.")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "enqueue: ") || !strings.Contains(errOut, "connection refused") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("enqueue with Redis down: exit %d, stderr %q; want the dial error alone, on one line", code, errOut)
	}
	if code, out, errOut = execCLI(t, q, down, "status", id); code != 0 || !strings.Contains(out, "queued") {
		t.Errorf("status with Redis down: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut = execCLI(t, q, down, "result", id); code != 1 || !strings.Contains(errOut, "no result yet") ||
		!strings.Contains(errOut, "enqueue wait "+id) {
		t.Errorf("result with Redis down: exit %d, stderr %q; want no result yet, and how to wait", code, errOut)
	}
}

// --wait on a queue no worker takes tasks from says so after a while,
// instead of silence until the timeout; with a worker on the queue, it
// says nothing of the kind.
func TestWaitWithoutWorker(t *testing.T) {
	q := testenv.Queue(t)
	code, _, errOut := execCLI(t, q, nil, "--wait", "--timeout", "7s", "Write a CSV.")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("no worker takes tasks from queue %q", q)) {
		t.Fatalf("--wait with no worker: exit %d, stderr:\n%s", code, errOut)
	}
	// An asynq server on the queue (one that runs nothing) is a consumer.
	busy := testenv.Queue(t)
	opt, err := asynq.ParseRedisURI(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	srv := asynq.NewServer(opt, asynq.Config{Queues: map[string]int{busy: 1},
		Logger: quietAsynq{}, ShutdownTimeout: time.Second})
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return errors.New("not now") })); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	a := app{stdin: strings.NewReader(""), stdout: io.Discard, idleHint: 200 * time.Millisecond}
	var errb bytes.Buffer
	a.stderr = &errb
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("REDIS_URL", testenv.RedisURL())
	t.Setenv("CARRYOVER_QUEUE", busy)
	t.Setenv("CARRYOVER_CHUNK_LANES", "1")
	time.Sleep(time.Second) // the server's first heartbeat
	if err := a.run(context.Background(), []string{"--wait", "--timeout", "2s", "Write a CSV."}); err == nil {
		t.Fatal("a job nobody runs finished")
	}
	if strings.Contains(errb.String(), "no worker") {
		t.Fatalf("hint with a worker on the queue:\n%s", errb.String())
	}
}

type quietAsynq struct{}

func (quietAsynq) Debug(...any) {}
func (quietAsynq) Info(...any)  {}
func (quietAsynq) Warn(...any)  {}
func (quietAsynq) Error(...any) {}
func (quietAsynq) Fatal(...any) {}

// What a job that ended short of success can do next names the commands
// that exist: resume (with the flag that raises the limit it hit) for a
// partial job, remerge for a cancelled one with chunks.
func TestNextStep(t *testing.T) {
	t.Parallel()
	id := "6f1f7c0e-0000-4000-8000-000000000000"
	tests := []struct {
		st   client.Status
		want []string
	}{
		{client.Status{ID: id, Status: "partial", StopReason: "steps_limit_reached", Chunks: 10}, []string{"enqueue resume " + id + " --max-attempts N"}},
		{client.Status{ID: id, Status: "partial", StopReason: "cost_limit_reached"}, []string{"enqueue resume " + id + " --max-cost-usd X"}},
		{client.Status{ID: id, Status: "partial", StopReason: "retry_limit_reached"}, []string{"enqueue resume " + id}},
		{client.Status{ID: id, Status: "cancelled", StopReason: "user_requested", Chunks: 3}, []string{"merge its 3 stored chunks: enqueue remerge " + id, "enqueue resume " + id}},
		{client.Status{ID: id, Status: "cancelled", StopReason: "user_requested"}, []string{"before any chunk", "enqueue resume " + id}},
		{client.Status{ID: id, Status: "running"}, []string{"enqueue wait " + id}},
		{client.Status{ID: id, Status: "succeeded", StopReason: "completed"}, nil},
	}
	for _, tt := range tests {
		got := nextStep(tt.st)
		if tt.want == nil && got != "" {
			t.Errorf("%s: %q, want nothing", tt.st.Status, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s: %q lacks %q", tt.st.Status, tt.st.StopReason, got, w)
			}
		}
	}
}

// A cancelled job's result says to remerge it (with chunks) or resume it.
func TestResultOfCancelledJobSuggestsNextStep(t *testing.T) {
	q := testenv.Queue(t)
	_, out, _ := execCLI(t, q, nil, "Write a CSV.")
	id := strings.TrimSpace(out)
	if code, out, errOut := execCLI(t, q, nil, "cancel", id); code != 0 {
		t.Fatalf("cancel: %d %q %q", code, out, errOut)
	}
	code, _, errOut := execCLI(t, q, nil, "result", id)
	if code != 1 || !strings.Contains(errOut, "cancelled before any chunk") || !strings.Contains(errOut, "enqueue resume "+id) {
		t.Fatalf("result of a cancelled job: exit %d, stderr %q", code, errOut)
	}
}
