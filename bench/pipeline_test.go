// Package bench measures the whole pipeline against the physical limits of
// its design, in one run on the same Redis and Postgres, because these
// machines are noisy: only ratios within a run mean anything.
package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/store"
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
	concurrency = 32  // asynq workers, the same for every run
	chains      = 64  // hop chains (or jobs) in flight at once, the same for every run
	hopsEach    = 200 // timed hops per chain: long enough to swamp setup and noise
	warmEach    = 5   // untimed hops (or chunks) per chain first: connections, prepared statements, caches
	rounds      = 5   // turns of the four runs; each figure is the median of its rounds
	chunksEach  = 40  // chunks per pipeline job (max_attempts allows at most 50)
	// jobsEach jobs run back to back on each pipeline chain, so a chain makes
	// as many chunks as a baseline chain makes hops.
	jobsEach = hopsEach / chunksEach
)

// BenchmarkPipeline prints chunks/s through the whole pipeline (zero-latency
// simulator) beside raw asynq chained no-op hops/s and a minimal durable hop
// (the same plus one committed Postgres insert per task), and the ratios.
// Every run has the same concurrency, the same chains in flight, the same
// length per chain and a warm-up before the clock starts.
func BenchmarkPipeline(b *testing.B) {
	ctx := context.Background()
	switch os.Getenv("CARRYOVER_BENCH_ONLY") { // for profiling one run alone
	case "pipeline":
		printAlone("pipeline chunks/s", pipeline(ctx, b))
		return
	case "durable":
		printAlone("durable hops/s", chainedHops(ctx, b, hopInsert))
		return
	case "raw":
		printAlone("raw hops/s", chainedHops(ctx, b, hopNoop))
		return
	case "call":
		printAlone("model-call hops/s", chainedHops(ctx, b, hopCall))
		return
	}
	// The machine is shared and its load changes within seconds, so the
	// four runs take turns, rounds times (every other round in reverse
	// order, so that no run always follows the same one), and each figure
	// is the median of its rounds. A ratio is the median of the rounds'
	// ratios: the runs of one round are measured minutes closer together
	// than the medians.
	runs := []func() result{
		func() result { return chainedHops(ctx, b, hopNoop) },
		func() result { return chainedHops(ctx, b, hopInsert) },
		func() result { return chainedHops(ctx, b, hopCall) },
		func() result { return pipeline(ctx, b) },
	}
	got := make([][]float64, len(runs)) // got[run][round]
	cpu := make([][]cpuTimes, len(runs))
	for r := range rounds {
		for i := range runs {
			if r%2 == 1 {
				i = len(runs) - 1 - i
			}
			res := runs[i]()
			got[i], cpu[i] = append(got[i], res.rate), append(cpu[i], res.cpu)
		}
	}
	raws, durables, calls, pipes := got[0], got[1], got[2], got[3]
	ratio := func(num, den []float64) ([]float64, float64) {
		rs := make([]float64, len(num))
		for i := range num {
			rs[i] = num[i] / den[i]
		}
		return rs, median(rs)
	}
	pipeDurables, pipeDurable := ratio(pipes, durables)
	_, pipeRaw := ratio(pipes, raws)
	_, callDurable := ratio(calls, durables)
	fmt.Printf("\n%d workers, %d chains in flight, %d hops or chunks per chain (pipeline: %d jobs of about %d chunks), %d rounds\n",
		concurrency, chains, hopsEach, jobsEach, chunksEach, rounds)
	fmt.Printf("%-52s %12s   %s\n", "run (same Redis + Postgres, this run)", "per second", "each round")
	row := func(name string, vs []float64, prec int) {
		fmt.Printf("%-52s %12.*f  ", name, prec, median(vs))
		for _, x := range vs {
			fmt.Printf(" %6.*f", prec, x)
		}
		fmt.Println()
	}
	row("raw asynq chained no-op hops", raws, 0)
	row("minimal durable hops (+1 committed insert)", durables, 0)
	row("reference: hops + 1 model call, no Postgres", calls, 0)
	row("pipeline chunks (zero-latency simulator)", pipes, 0)
	row("pipeline / durable hop, each round", pipeDurables, 2)
	fmt.Printf("pipeline / raw hop          = %.2f\n", pipeRaw)
	fmt.Printf("pipeline / durable hop      = %.2f   (target >= 0.70)\n", pipeDurable)
	fmt.Printf("model-call hop / durable hop = %.2f   (the call alone, before any persistence)\n\n", callDurable)
	// Where the CPU goes: the machine is busy for the whole of every run, so
	// a hop's CPU time (the median round's, by process) is what its rate
	// is the inverse of.
	fmt.Printf("CPU time per hop or chunk, microseconds (median round): %10s %10s %10s %10s\n", "all", "Go process", "Postgres", "Redis")
	names := []string{"raw asynq chained no-op hops", "minimal durable hops (+1 committed insert)",
		"reference: hops + 1 model call, no Postgres", "pipeline chunks (zero-latency simulator)"}
	for i, name := range names {
		c := medianCPU(cpu[i])
		fmt.Printf("%-55s %10.0f %10.0f %10.0f %10.0f\n", name, c.total(), c.self, c.postgres, c.redis)
	}
	fmt.Println()
	raw, durable, called, pipe := median(raws), median(durables), median(calls), median(pipes)
	b.ReportMetric(medianCPU(cpu[3]).total(), "pipeline_cpu_us/chunk")
	b.ReportMetric(medianCPU(cpu[1]).total(), "durable_cpu_us/hop")
	b.ReportMetric(raw, "raw_hops/s")
	b.ReportMetric(durable, "durable_hops/s")
	b.ReportMetric(pipe, "pipeline_chunks/s")
	b.ReportMetric(called, "call_hops/s")
	b.ReportMetric(pipeDurable, "pipeline/durable")
}

// result is one run's rate (hops or chunks per second) and the CPU time
// each hop or chunk took.
type result struct {
	rate float64
	cpu  cpuTimes
}

// medianCPU is the CPU use of the round whose total is the median.
func medianCPU(cs []cpuTimes) cpuTimes {
	s := slices.Clone(cs)
	slices.SortFunc(s, func(a, b cpuTimes) int { return cmp.Compare(a.total(), b.total()) })
	return s[len(s)/2]
}

// modelLatency is the time the simulator takes over every model call,
// CARRYOVER_BENCH_LATENCY (a Go duration; none by default). A real model
// takes hundreds of milliseconds to seconds per chunk, and with such a
// latency the worker's own CPU per chunk shows in chunks/s only as far as it
// exceeds what the calls in flight leave idle.
func modelLatency(b *testing.B) time.Duration {
	s := os.Getenv("CARRYOVER_BENCH_LATENCY")
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		b.Fatalf("CARRYOVER_BENCH_LATENCY: %v", err)
	}
	return d
}

// printAlone prints one run made alone (CARRYOVER_BENCH_ONLY).
func printAlone(what string, r result) {
	fmt.Printf("%s: %.0f   CPU per hop (us): all %.0f, Go process %.0f, Postgres %.0f, Redis %.0f\n",
		what, r.rate, r.cpu.total(), r.cpu.self, r.cpu.postgres, r.cpu.redis)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func redisClient(b *testing.B) redis.UniversalClient {
	opt, err := redisconn.Parse(testenv.RedisURL())
	if err != nil {
		b.Fatal(err)
	}
	opt.MinPoolSize(concurrency + 16)
	rdb := opt.NewClient()
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

type hop struct {
	Run   string `json:"run"` // "warm" or "timed": the chains of each run have their own TaskIDs
	Chain int    `json:"chain"`
	N     int    `json:"n"`
	Of    int    `json:"of"`
}

// hopWork is what each baseline hop does besides enqueueing the next one.
type hopWork int

const (
	hopNoop   hopWork = iota // nothing: raw asynq
	hopInsert                // one committed Postgres insert: the minimal durable hop
	hopCall                  // one model call through the worker's provider, no Postgres
)

// chainedHops runs chains × hopsEach tasks where each task enqueues the next
// (with a TaskID, as the pipeline does) and returns hops per second. A
// warm-up of chains × warmEach hops runs first, untimed.
func chainedHops(ctx context.Context, b *testing.B, work hopWork) result {
	rdb := redisClient(b)
	queue := testenv.Queue(b)
	aq := asynq.NewClientFromRedisClient(rdb)
	var pool *pgxpool.Pool
	var model continuation.Provider
	if work == hopCall {
		sim := httptest.NewServer(simulator.New(simulator.Config{Latency: modelLatency(b)}))
		defer sim.Close()
		model = provider.NewResponses(provider.Config{BaseURL: sim.URL + "/v1", APIKey: "sk-bench",
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
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_hops (run text, chain int, n int, at timestamptz DEFAULT now(), PRIMARY KEY (run, chain, n))`); err != nil {
			b.Fatal(err)
		}
		_, _ = pool.Exec(ctx, `TRUNCATE bench_hops`)
	}
	var done atomic.Int64
	var finished atomic.Pointer[chan struct{}]
	var total atomic.Int64
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench:hop", func(ctx context.Context, t *asynq.Task) error {
		var h hop
		if err := json.Unmarshal(t.Payload(), &h); err != nil {
			return err
		}
		switch work {
		case hopInsert:
			if _, err := pool.Exec(ctx, `INSERT INTO bench_hops (run, chain, n) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, h.Run, h.Chain, h.N); err != nil {
				return err
			}
		case hopCall:
			if _, err := model.Call(ctx, continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64,
				Input: continuation.Input{Prompt: fmt.Sprintf("[[sim format=text size=200 seed=%d]] Write.", h.Chain)}}); err != nil {
				return err
			}
		}
		if h.N+1 < h.Of {
			next, _ := json.Marshal(hop{h.Run, h.Chain, h.N + 1, h.Of})
			if _, err := aq.EnqueueContext(ctx, asynq.NewTask("bench:hop", next), asynq.Queue(queue),
				asynq.TaskID(fmt.Sprintf("hop:%s:%d:%d", h.Run, h.Chain, h.N+1))); err != nil {
				return err
			}
		}
		if done.Add(1) == total.Load() {
			close(*finished.Load())
		}
		return nil
	})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: concurrency, Queues: map[string]int{queue: 1}, TaskCheckInterval: pollInterval,
		LogLevel: asynq.ErrorLevel})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	run := func(name string, each int) time.Duration {
		ch := make(chan struct{})
		finished.Store(&ch)
		done.Store(0)
		total.Store(int64(chains * each))
		start := time.Now()
		for c := range chains {
			first, _ := json.Marshal(hop{name, c, 0, each})
			if _, err := aq.Enqueue(asynq.NewTask("bench:hop", first), asynq.Queue(queue), asynq.TaskID(fmt.Sprintf("hop:%s:%d:0", name, c))); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Minute):
			b.Fatalf("%s: only %d of %d hops ran", name, done.Load(), total.Load())
		}
		return time.Since(start)
	}
	run("warm", warmEach)
	before := sampleCPU()
	elapsed := run("timed", hopsEach)
	return result{rate: float64(chains*hopsEach) / elapsed.Seconds(), cpu: sampleCPU().perHop(before, chains*hopsEach)}
}

// pipeline runs chains chains of jobsEach jobs of about chunksEach chunks
// through the real worker against a zero-latency simulator, and returns
// chunks per second from the first enqueue until every job is merged. Each
// chain enqueues its next job as soon as the previous one is merged
// (LISTEN on the job notifications, so no poll interval is measured), which
// keeps chains jobs in flight like the baselines' chains. A warm-up job of a
// few chunks per chain runs first, untimed.
func pipeline(ctx context.Context, b *testing.B) result {
	// The worker logs at its configured level (warn), as cmd/worker would; the lines go nowhere.
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if os.Getenv("CARRYOVER_BENCH_LOGS") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, pool, stop := startWorker(ctx, b, logger)
	defer stop()
	listener, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "LISTEN carryover_jobs"); err != nil {
		b.Fatal(err)
	}
	const maxTokens = 64
	seed := 0
	enqueue := func(chunks int) string {
		seed++
		// The document is just longer than chunks-1 full chunks, so it takes about chunks chunks.
		size := (chunks-1)*maxTokens*4 + 100
		job, err := c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Format: "text", MaxOutputTokens: maxTokens,
			Input:        client.Input{Prompt: fmt.Sprintf("[[sim format=text size=%d seed=%d]] Write.", size, seed)},
			Continuation: client.Continuation{MaxAttempts: 50}})
		if err != nil {
			b.Fatal(err)
		}
		return job.ID
	}
	// run keeps one job in flight per chain until each chain has run jobs
	// jobs of about chunks chunks; it returns the jobs and the time taken.
	run := func(jobs, chunks int) ([]string, time.Duration) {
		var ids []string
		chainOf := map[string]int{} // live job → its chain
		left := make([]int, chains)
		start := time.Now()
		for i := range chains {
			id := enqueue(chunks)
			ids, chainOf[id], left[i] = append(ids, id), i, jobs-1
		}
		deadline := time.Now().Add(5 * time.Minute)
		for len(chainOf) > 0 {
			if time.Now().After(deadline) {
				b.Fatalf("%d jobs still live after 5 minutes", len(chainOf))
			}
			// A notification names a job whose status changed; a quiet
			// second re-checks every live job (a safety net).
			var changed []string
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			n, err := listener.Conn().WaitForNotification(wctx)
			cancel()
			switch {
			case err == nil:
				if _, ok := chainOf[n.Payload]; ok {
					changed = []string{n.Payload}
				}
			case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
				for id := range chainOf {
					changed = append(changed, id)
				}
			default:
				b.Fatal(err)
			}
			for _, id := range changed {
				var status string
				if err := pool.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1::uuid`, id).Scan(&status); err != nil {
					b.Fatal(err)
				}
				if !store.Terminal(status) {
					continue
				}
				ch := chainOf[id]
				delete(chainOf, id)
				if left[ch] > 0 {
					left[ch]--
					next := enqueue(chunks)
					ids, chainOf[next] = append(ids, next), ch
				}
			}
		}
		return ids, time.Since(start)
	}
	run(1, warmEach)
	before := sampleCPU()
	ids, elapsed := run(jobsEach, chunksEach)
	after := sampleCPU()
	var chunks, bad int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[])`, ids).Scan(&chunks); err != nil {
		b.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1::uuid[]) AND status <> 'succeeded'`, ids).Scan(&bad); err != nil {
		b.Fatal(err) // else bad would stay 0 and the check below pass unseen
	}
	// The simulator's document sizes are approximate: count the chunks made.
	if want := len(ids) * chunksEach; bad > 0 || chunks < want*95/100 {
		b.Fatalf("%d jobs did not succeed; %d chunks for about %d expected", bad, chunks, want)
	}
	return result{rate: float64(chunks) / elapsed.Seconds(), cpu: after.perHop(before, chunks)}
}

// startWorker runs a worker against a simulator (zero-latency by default) on its own
// queue, once its asynq server has started, and returns a client for that
// queue and a pool; stop ends them all.
func startWorker(ctx context.Context, b *testing.B, logger *slog.Logger) (*client.Client, *pgxpool.Pool, func()) {
	sim := httptest.NewServer(simulator.New(simulator.Config{Latency: modelLatency(b)}))
	queue := testenv.Queue(b)
	cfg := config.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIAPIKey: "sk-bench", OpenAIBaseURL: sim.URL + "/v1",
		Concurrency: concurrency, ChunkQueue: queue, LogLevel: "warn", HealthAddr: "127.0.0.1:0",
		ReconcileInterval: time.Minute, StaleAfter: 5 * time.Minute, MaxRetry: 3, PollInterval: pollInterval, DelayedInterval: 250 * time.Millisecond,
		ChunkLanes: config.FromEnv().ChunkLanes} // CARRYOVER_CHUNK_LANES, to see what the lanes cost
	wctx, stopWorker := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		wdone <- worker.Run(wctx, worker.Options{Config: cfg, Logger: logger, SkipMigrate: true,
			OnHealthListen: func(string) { close(ready) }}) // after the asynq server started
	}()
	select {
	case <-ready:
	case err := <-wdone:
		sim.Close()
		b.Fatal("worker: ", err)
	}
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: cfg.RedisURL, ChunkQueue: queue, ChunkLanes: cfg.ChunkLanes, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	return c, pool, func() {
		pool.Close()
		c.Close()
		stopWorker()
		<-wdone
		sim.Close()
	}
}
