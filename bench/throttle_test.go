package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
)

// throttleCase is one run of BenchmarkThrottle.
type throttleCase struct {
	name string
	env  []string // the workers' throttle settings
}

// throttleResult is what one run measured.
type throttleResult struct {
	calls, refused int           // model calls let through, and answered 429
	span           time.Duration // first to last call let through
	makespan       time.Duration
	failed         int
}

// BenchmarkThrottle shows the shared provider throttle against a provider
// that enforces a requests-per-minute limit: CARRYOVER_THROTTLE_WORKERS
// worker processes (default 3, each at its default concurrency) work
// CARRYOVER_THROTTLE_JOBS jobs of three chunks (default 120) against the
// simulator limited to CARRYOVER_THROTTLE_RPM requests per minute (default
// 600, enforced over one-second windows), each call taking 200 ms. It
// prints, for the throttle off, on with the limit configured, and on with
// the limit learned from the simulator's x-ratelimit-* headers alone: the
// calls made, the 429s received (count and share of all requests), and
// the calls per minute achieved between the first and the last call
// against the limit.
func BenchmarkThrottle(b *testing.B) {
	ctx := context.Background()
	workers := envInt(b, "CARRYOVER_THROTTLE_WORKERS", 3)
	jobs := envInt(b, "CARRYOVER_THROTTLE_JOBS", 120)
	rpm := envInt(b, "CARRYOVER_THROTTLE_RPM", 600)
	bin := testenv.BuildWorker(b)
	seeds := seedsOfChunks(ctx, b, 3, jobs)
	cases := []throttleCase{
		{name: "off", env: []string{"CARRYOVER_PROVIDER_THROTTLE=off"}},
		{name: "on, configured", env: []string{"CARRYOVER_PROVIDER_THROTTLE=on", "CARRYOVER_PROVIDER_RPM=" + strconv.Itoa(rpm)}},
		{name: "on, learned", env: []string{"CARRYOVER_PROVIDER_THROTTLE=on"}},
	}
	fmt.Printf("throttle: %d worker processes, %d jobs of 3 chunks, provider limit %d RPM (1 s windows), 200 ms per call\n",
		workers, jobs, rpm)
	fmt.Printf("%-16s %8s %8s %7s %9s %10s %9s %7s\n", "mode", "requests", "429s", "429 %", "calls/min", "vs limit", "makespan", "failed")
	for _, c := range cases {
		r := throttleRun(ctx, b, bin, c, workers, jobs, rpm, seeds)
		total := r.calls + r.refused
		perMin := 0.0
		if r.span > 0 {
			perMin = float64(r.calls-1) / r.span.Minutes()
		}
		fmt.Printf("%-16s %8d %8d %6.1f%% %9.0f %9.1f%% %8.1fs %7d\n", c.name, total, r.refused,
			100*float64(r.refused)/float64(total), perMin, 100*perMin/float64(rpm), r.makespan.Seconds(), r.failed)
	}
}

// throttleRun starts the workers against a fresh rate-limited simulator,
// enqueues the jobs and measures until every one has ended.
func throttleRun(ctx context.Context, b *testing.B, bin string, c throttleCase, workers, jobs, rpm int, seeds []int) throttleResult {
	sim := simulator.New(simulator.Config{Latency: 200 * time.Millisecond,
		RateLimits: simulator.RateLimits{RPM: rpm, Window: time.Second}})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	queue := testenv.Queue(b)
	for range workers {
		health := freeAddr(b)
		env := []string{"DATABASE_URL=" + dbURL + sep(dbURL) + "application_name=throttle_bench", "REDIS_URL=" + testenv.RedisURL(),
			"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=" + ts.URL + "/v1", "CARRYOVER_QUEUE=" + queue, "LOG_LEVEL=error",
			"HEALTH_ADDR=" + health, "CARRYOVER_BACKGROUND=false", "CARRYOVER_DB_CONNS=4"}
		cmd := exec.Command(bin)
		cmd.Env, cmd.Stderr = append(append(os.Environ(), env...), c.env...), os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer stopProcess(cmd)
		waitReady(b, "http://"+health+"/readyz")
	}
	pool, err := pgxpool.New(ctx, dbURL+sep(dbURL)+"pool_max_conns=4")
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	cl, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: queue, MaxConns: 4,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	ids, prompts := enqueueMany(ctx, b, cl, inflightCase{jobs: jobs}, seeds)
	waitAll(ctx, b, pool, ids, 15*time.Minute)
	r := throttleResult{makespan: time.Since(start)}
	st := sim.BackgroundStats()
	r.calls, r.refused = int(st.ModelCalls), int(st.RateLimited)
	var first, last time.Time
	for _, call := range sim.Calls("") {
		if first.IsZero() || call.At.Before(first) {
			first = call.At
		}
		if call.At.After(last) {
			last = call.At
		}
	}
	r.span = last.Sub(first)
	r.failed, _ = checkResults(ctx, b, pool, ids, prompts)
	return r
}
