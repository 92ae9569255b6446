package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/worker"
)

// dbURL is the binary's database; each harness has one of its own (the
// tests run in parallel, and the reconciler and retention act on every job
// of their database).
var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

// devWebhookAllow lets webhooks reach the tests' receivers on loopback over
// plain http, as a development setup would (CARRYOVER_WEBHOOK_ALLOW); the
// security tests turn it off.
const devWebhookAllow = "http,127.0.0.0/8,::1/128"

// harness is one test's world: the simulator on loopback, a database and a
// queue of its own, a client, and workers started on demand.
type harness struct {
	t      *testing.T
	sim    *simulator.Server
	simURL string
	cfg    config.Config
	client *client.Client
	store  *store.Store
	log    *slog.Logger
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, simulator.Config{})
}

// newHarnessWith is newHarness with a simulator configured as sc says.
func newHarnessWith(t *testing.T, sc simulator.Config) *harness {
	t.Helper()
	return newHarnessOn(t, sc, testenv.DB(t), testenv.RedisURL())
}

// newHarnessOn is newHarnessWith on the given Postgres database and Redis.
func newHarnessOn(t *testing.T, sc simulator.Config, db, redisURL string) *harness {
	t.Helper()
	sim := simulator.New(sc)
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	h := &harness{t: t, sim: sim, simURL: ts.URL + "/v1"}
	h.cfg = config.Config{
		DatabaseURL: db, RedisURL: redisURL, OpenAIAPIKey: "sk-test-not-a-secret",
		OpenAIBaseURL: h.simURL, Concurrency: 8, ChunkQueue: testenv.Queue(t), LogLevel: "warn",
		ReconcileInterval: time.Second, StaleAfter: 3 * time.Second, MaxRetry: 3,
		PollInterval: 50 * time.Millisecond, DelayedInterval: 100 * time.Millisecond,
		WebhookAllow: devWebhookAllow,
	}
	// The workers' log is kept (from info up) and printed if the test
	// fails, so that a failure seen once in CI can be read.
	level, kept := slog.LevelInfo, &logTail{}
	var w io.Writer = kept
	if testing.Verbose() || os.Getenv("CARRYOVER_TEST_LOGS") != "" {
		w, level = os.Stderr, slog.LevelDebug
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the workers' last log lines:\n%s", kept.String())
		}
	})
	h.log = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	ctx := context.Background()
	c, err := client.New(ctx, client.Config{DatabaseURL: db, RedisURL: redisURL, ChunkQueue: h.cfg.ChunkQueue,
		WebhookAllow: h.cfg.WebhookAllow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.client = c
	st, err := store.Open(ctx, db, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	h.store = st
	return h
}

// startWorker runs a worker in-process until the test ends; opts may adjust
// its options.
// startWorkerWithHealth starts a worker with its operator listener (health,
// readiness, metrics) on a free loopback port, and returns that address.
func (h *harness) startWorkerWithHealth() string {
	h.t.Helper()
	h.cfg.HealthAddr = "127.0.0.1:0"
	addrc := make(chan string, 1)
	h.startWorker(func(o *worker.Options) { o.OnHealthListen = func(a string) { addrc <- a } })
	select {
	case addr := <-addrc:
		return addr
	case <-time.After(10 * time.Second):
		h.t.Fatal("health listener never started")
		return ""
	}
}

func (h *harness) startWorker(opts ...func(*worker.Options)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := worker.Options{Config: h.cfg, Logger: h.log, SkipMigrate: true}
	for _, f := range opts {
		f(&o)
	}
	go func() { done <- worker.Run(ctx, o) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("worker: %v", err)
		}
	})
}

// wait waits for a job to end.
func (h *harness) wait(id string, timeout time.Duration) client.Status {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := h.client.Wait(ctx, id, nil)
	if err != nil {
		h.t.Fatalf("job %s did not finish: %v (last status %q, chunks %d)", id, err, st.Status, st.Chunks)
	}
	return st
}

// directive builds a simulator prompt with a unique tag.
func directive(t *testing.T, args string) (prompt, tag string) {
	tag = strings.ReplaceAll(testenv.RandomName("tag"), "_", "")
	return fmt.Sprintf("[[sim %s tag=%s]] Produce the document.", args, tag), tag
}

// count runs a counting query.
func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.store.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// job is a job enqueued for a simulator directive, with the document the
// model will write.
type job struct {
	id, tag, doc string
}

// enqueue submits a job whose prompt carries the directive args (plus a
// unique tag), with req's other settings; model, format, output limit and
// max attempts default to gpt-4.1-mini, text, 300 and 50.
func (h *harness) enqueue(args string, req client.Request) job {
	h.t.Helper()
	prompt, tag := directive(h.t, args)
	doc, _, ok := simulator.DocumentFor(prompt)
	if !ok {
		h.t.Fatalf("bad directive %q", args)
	}
	req.Input = client.Input{Prompt: prompt}
	if req.Model == "" {
		req.Model = "gpt-4.1-mini"
	}
	if req.Format == "" {
		req.Format = "text"
	}
	if req.MaxOutputTokens == 0 {
		req.MaxOutputTokens = 300
	}
	if req.Continuation.MaxAttempts == 0 {
		req.Continuation.MaxAttempts = 50
	}
	j, err := h.client.Enqueue(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return job{id: j.ID, tag: tag, doc: doc}
}

// logTail keeps the last logTailBytes of what is written to it.
type logTail struct {
	mu  sync.Mutex
	buf []byte
}

const logTailBytes = 64 << 10

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2*logTailBytes {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-logTailBytes:]...)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf[max(0, len(l.buf)-logTailBytes):])
}
