// Package bench measures the whole pipeline against the physical limits of
// its design, in one run on the same Redis and Postgres, because these
// machines are noisy: only ratios within a run mean anything.
package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/worker"
)

var dbURL string

// pollInterval is asynq's TaskCheckInterval for all three runs: the worker's
// default. asynq's own 1s default stalls chained tasks and would make every
// figure meaningless.
const pollInterval = 50 * time.Millisecond

// TestMain makes a database only when benchmarks run: make test runs this
// package too, with nothing to do.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, &dbURL)
}

const (
	concurrency = 32  // asynq workers, the same for all three
	chains      = 64  // jobs (or hop chains) in flight at once
	hopsEach    = 200 // hops per baseline chain: long enough to swamp setup and noise
	chunksEach  = 40  // chunks per pipeline job
)

// BenchmarkPipeline prints chunks/s through the whole pipeline (zero-latency
// simulator) beside raw asynq chained no-op hops/s and a minimal durable hop
// (the same plus one committed Postgres insert per task), and the ratios.
func BenchmarkPipeline(b *testing.B) {
	ctx := context.Background()
	switch os.Getenv("CARRYOVER_BENCH_ONLY") { // for profiling one run alone
	case "pipeline":
		fmt.Printf("pipeline chunks/s: %.0f\n", pipeline(ctx, b))
		return
	case "durable":
		fmt.Printf("durable hops/s: %.0f\n", chainedHops(ctx, b, hopInsert))
		return
	case "raw":
		fmt.Printf("raw hops/s: %.0f\n", chainedHops(ctx, b, hopNoop))
		return
	case "call":
		fmt.Printf("model-call hops/s: %.0f\n", chainedHops(ctx, b, hopCall))
		return
	}
	raw := chainedHops(ctx, b, hopNoop)
	durable := chainedHops(ctx, b, hopInsert)
	called := chainedHops(ctx, b, hopCall)
	pipe := pipeline(ctx, b)
	fmt.Printf("\n%-52s %12s\n", "run (same Redis + Postgres, this run)", "per second")
	fmt.Printf("%-52s %12.0f\n", "raw asynq chained no-op hops", raw)
	fmt.Printf("%-52s %12.0f\n", "minimal durable hops (+1 committed insert)", durable)
	fmt.Printf("%-52s %12.0f\n", "reference: hops + 1 model call, no Postgres", called)
	fmt.Printf("%-52s %12.0f\n", "pipeline chunks (zero-latency simulator)", pipe)
	fmt.Printf("pipeline / raw hop          = %.2f\n", pipe/raw)
	fmt.Printf("pipeline / durable hop      = %.2f   (target >= 0.70)\n", pipe/durable)
	fmt.Printf("model-call hop / durable hop = %.2f   (the call alone, before any persistence)\n\n", called/durable)
	b.ReportMetric(raw, "raw_hops/s")
	b.ReportMetric(durable, "durable_hops/s")
	b.ReportMetric(pipe, "pipeline_chunks/s")
	b.ReportMetric(called, "call_hops/s")
	b.ReportMetric(pipe/durable, "pipeline/durable")
}

func redisClient(b *testing.B) *redis.Client {
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		b.Fatal(err)
	}
	opt.PoolSize = concurrency + 16
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

type hop struct {
	Chain int `json:"chain"`
	N     int `json:"n"`
}

// hopWork is what each baseline hop does besides enqueueing the next one.
type hopWork int

const (
	hopNoop   hopWork = iota // nothing: raw asynq
	hopInsert                // one committed Postgres insert: the minimal durable hop
	hopCall                  // one model call through the worker's provider, no Postgres
)

// chainedHops runs chains × hopsEach tasks where each task enqueues the next
// (with a TaskID, as the pipeline does) and returns hops per second.
func chainedHops(ctx context.Context, b *testing.B, work hopWork) float64 {
	rdb := redisClient(b)
	queue := testenv.Queue(b)
	aq := asynq.NewClientFromRedisClient(rdb)
	var pool *pgxpool.Pool
	var provider continuation.Provider
	if work == hopCall {
		sim := httptest.NewServer(simulator.New(simulator.Config{}))
		defer sim.Close()
		provider = continuation.NewResponsesProvider(continuation.ProviderConfig{BaseURL: sim.URL + "/v1", APIKey: "sk-bench",
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * concurrency}}})
	}
	if work == hopInsert {
		var err error
		cfg, _ := pgxpool.ParseConfig(dbURL)
		cfg.MaxConns = concurrency + 4
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_hops (chain int, n int, at timestamptz DEFAULT now(), PRIMARY KEY (chain, n))`); err != nil {
			b.Fatal(err)
		}
		_, _ = pool.Exec(ctx, `TRUNCATE bench_hops`)
	}
	total := int64(chains * hopsEach)
	var done atomic.Int64
	finished := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench:hop", func(ctx context.Context, t *asynq.Task) error {
		var h hop
		if err := json.Unmarshal(t.Payload(), &h); err != nil {
			return err
		}
		switch work {
		case hopInsert:
			if _, err := pool.Exec(ctx, `INSERT INTO bench_hops (chain, n) VALUES ($1, $2) ON CONFLICT DO NOTHING`, h.Chain, h.N); err != nil {
				return err
			}
		case hopCall:
			if _, err := provider.Call(ctx, continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64,
				Input: continuation.Input{Prompt: fmt.Sprintf("[[sim format=text size=200 seed=%d]] Write.", h.Chain)}}); err != nil {
				return err
			}
		}
		if h.N+1 < hopsEach {
			next, _ := json.Marshal(hop{h.Chain, h.N + 1})
			if _, err := aq.EnqueueContext(ctx, asynq.NewTask("bench:hop", next), asynq.Queue(queue),
				asynq.TaskID(fmt.Sprintf("hop:%d:%d", h.Chain, h.N+1))); err != nil {
				return err
			}
		}
		if done.Add(1) == total {
			close(finished)
		}
		return nil
	})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: concurrency, Queues: map[string]int{queue: 1}, TaskCheckInterval: pollInterval,
		LogLevel: asynq.ErrorLevel})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	start := time.Now()
	for c := range chains {
		first, _ := json.Marshal(hop{c, 0})
		if _, err := aq.Enqueue(asynq.NewTask("bench:hop", first), asynq.Queue(queue), asynq.TaskID(fmt.Sprintf("hop:%d:0", c))); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d hops ran", done.Load(), total)
	}
	return float64(total) / time.Since(start).Seconds()
}

// pipeline runs chains jobs of chunksEach chunks each through the real worker
// against a zero-latency simulator and returns chunks per second (time from
// the first enqueue until every job is merged).
func pipeline(ctx context.Context, b *testing.B) float64 {
	sim := httptest.NewServer(simulator.New(simulator.Config{}))
	defer sim.Close()
	queue := testenv.Queue(b)
	cfg := config.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIAPIKey: "sk-bench", OpenAIBaseURL: sim.URL + "/v1",
		Concurrency: concurrency, ChunkQueue: queue, LogLevel: "warn",
		ReconcileInterval: time.Minute, StaleAfter: 5 * time.Minute, MaxRetry: 3, PollInterval: pollInterval, DelayedInterval: 250 * time.Millisecond}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("CARRYOVER_BENCH_LOGS") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	wctx, stop := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(wctx, worker.Options{Config: cfg, Logger: logger, SkipMigrate: true}) }()
	defer func() { stop(); <-wdone }()
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: cfg.RedisURL, ChunkQueue: queue, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const maxTokens = 64
	// Each job's document is just longer than chunksEach-1 full chunks, so it takes about chunksEach chunks.
	size := (chunksEach-1)*maxTokens*4 + 100
	ids := make([]string, chains)
	start := time.Now()
	for i := range chains {
		job, err := c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Format: "text", MaxOutputTokens: maxTokens,
			Input:        client.Input{Prompt: fmt.Sprintf("[[sim format=text size=%d seed=%d]] Write.", size, i+1)},
			Continuation: client.Continuation{MaxAttempts: 50}})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = job.ID
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	deadline := time.Now().Add(5 * time.Minute)
	var chunks int
	for {
		var live int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1::uuid[]) AND status IN ('queued','running','merging')`,
			ids).Scan(&live); err != nil {
			b.Fatal(err)
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs still live after 5 minutes", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[])`, ids).Scan(&chunks); err != nil {
		b.Fatal(err)
	}
	var bad int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1::uuid[]) AND status <> 'succeeded'`, ids).Scan(&bad)
	// The simulator's document sizes are approximate: count the chunks made.
	if bad > 0 || chunks < chains*(chunksEach-2) {
		b.Fatalf("%d jobs did not succeed; %d chunks for about %d expected", bad, chunks, chains*chunksEach)
	}
	return float64(chunks) / elapsed.Seconds()
}
