package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/testenv"
)

var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

type env struct {
	c     *client.Client
	queue string
	insp  *asynq.Inspector
}

func newEnv(t *testing.T) env {
	t.Helper()
	q := testenv.Queue(t)
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	opt, _ := redis.ParseURL(testenv.RedisURL())
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return env{c: c, queue: q, insp: asynq.NewInspectorFromRedisClient(rdb)}
}

func (e env) queued(t *testing.T) int {
	t.Helper()
	// GetQueueInfo reports a queue never written to as an internal
	// not-found error, not asynq.ErrQueueNotFound: look the queue up first.
	queues, err := e.insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(queues, e.queue) {
		return 0
	}
	qi, err := e.insp.GetQueueInfo(e.queue)
	if err != nil {
		t.Fatal(err)
	}
	return qi.Pending
}

func TestInvalidRequestStoresAndEnqueuesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "p"},
		Continuation: client.Continuation{MaxAttempts: 99, OnFailure: "shrug"}, IdempotencyKey: "bad-request-key"})
	var ve *client.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 2 || ve.Fields[0].Field != "continuation.max_attempts" || ve.Fields[1].Field != "continuation.on_failure" {
		t.Fatalf("want a validation error naming both fields, got %v", err)
	}
	if n := e.queued(t); n != 0 {
		t.Fatalf("%d tasks enqueued for a refused request", n)
	}
	// The key was not used up by the refused request.
	job, err := e.c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "p"}, IdempotencyKey: "bad-request-key"})
	if err != nil || !job.Created {
		t.Fatalf("the key should still be free: %+v %v", job, err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	req := client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "once"}, IdempotencyKey: testenv.RandomName("key-")}
	first, err := e.c.Enqueue(ctx, req)
	if err != nil || !first.Created || first.Status != "queued" {
		t.Fatalf("%+v %v", first, err)
	}
	second, err := e.c.Enqueue(ctx, req)
	if err != nil || second.Created || second.ID != first.ID {
		t.Fatalf("the same key must return the same job: %+v %v", second, err)
	}
	if n := e.queued(t); n != 1 {
		t.Fatalf("%d tasks for one job", n)
	}
	req.Input.Prompt = "twice"
	_, err = e.c.Enqueue(ctx, req)
	var ve *client.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "idempotency_key" {
		t.Fatalf("a reused key with another request must be refused, got %v", err)
	}
}

func TestStatusResultCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	job, err := e.c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "p"}, Format: "csv",
		Metadata: json.RawMessage(`{"order":42}`)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.c.Status(ctx, job.ID)
	if err != nil || st.Status != "queued" || st.Chunks != 0 || st.Format != "csv" || string(st.Metadata) != `{"order": 42}` {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := e.c.Result(ctx, job.ID); !errors.Is(err, client.ErrNotReady) {
		t.Fatalf("result of a queued job: %v", err)
	}
	st, err = e.c.Cancel(ctx, job.ID)
	if err != nil || st.Status != "cancelled" || st.StopReason != "user_requested" || !st.Terminal() {
		t.Fatalf("%+v %v", st, err)
	}
	again, err := e.c.Cancel(ctx, job.ID)
	if err != nil || again.Status != "cancelled" {
		t.Fatalf("cancelling twice: %+v %v", again, err)
	}
	if _, err := e.c.Status(ctx, "6f1f7c0e-0000-4000-8000-000000000000"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

// A library logs nothing unless given a logger: with Config.Logger nil, an
// enqueue writes nothing through the process's default logger. Not
// parallel: it swaps slog.Default, which no other test may write to
// meanwhile.
func TestQuietWithoutLogger(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	e := newEnv(t)
	ctx := context.Background()
	job, err := e.c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Cancel(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("the client logged through slog.Default with no Logger configured:\n%s", buf.String())
	}
	// Given a logger, it logs there.
	var own bytes.Buffer
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: e.queue,
		Logger: slog.New(slog.NewTextHandler(&own, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "p"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(own.String(), "job enqueued") || buf.Len() != 0 {
		t.Fatalf("with a logger: its output %q, the default's %q", own.String(), buf.String())
	}
}
