package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
)

// throttleCase is one run of BenchmarkThrottle.
type throttleCase struct {
	name     string
	env      []string // the workers' throttle settings
	rpm, tpm int      // the simulator's limits; the first set is the one measured against
}

// throttleResult is what one run measured.
type throttleResult struct {
	calls, refused int           // model calls let through, and answered 429
	tokens         int           // tokens the calls let through counted
	span           time.Duration // first to last call let through
	makespan       time.Duration
	failed         int
}

// BenchmarkThrottle shows the shared provider throttle against a provider
// that enforces a rate limit: CARRYOVER_THROTTLE_WORKERS worker processes
// (default 3, each at its default concurrency) work
// CARRYOVER_THROTTLE_JOBS jobs of three chunks (default 120) against the
// simulator limited to CARRYOVER_THROTTLE_RPM requests per minute (default
// 600), then to CARRYOVER_THROTTLE_TPM tokens per minute (default 100,000),
// each enforced over one-second windows, each call taking 200 ms. For the
// throttle off, on with the limit configured, and on with the limit
// learned from the simulator's x-ratelimit-* headers alone, it prints the
// requests made, the 429s received (count and share of all requests), and
// the calls or tokens per minute achieved between the first and the last
// call against the limit. CARRYOVER_THROTTLE_ONLY=TPM (say) runs only the
// modes whose name has it.
func BenchmarkThrottle(b *testing.B) {
	ctx := context.Background()
	workers := envInt(b, "CARRYOVER_THROTTLE_WORKERS", 3)
	jobs := envInt(b, "CARRYOVER_THROTTLE_JOBS", 120)
	rpm := envInt(b, "CARRYOVER_THROTTLE_RPM", 600)
	tpm := envInt(b, "CARRYOVER_THROTTLE_TPM", 100000)
	bin := testenv.BuildWorker(b)
	seeds := seedsOfChunks(ctx, b, 3, jobs)
	cases := []throttleCase{
		{name: "RPM, off", rpm: rpm, env: []string{"CARRYOVER_PROVIDER_THROTTLE=off"}},
		{name: "RPM, on", rpm: rpm, env: []string{"CARRYOVER_PROVIDER_RPM=" + strconv.Itoa(rpm)}},
		{name: "RPM, learned", rpm: rpm, env: nil},
		{name: "TPM, off", tpm: tpm, env: []string{"CARRYOVER_PROVIDER_THROTTLE=off"}},
		{name: "TPM, on", tpm: tpm, env: []string{"CARRYOVER_PROVIDER_TPM=" + strconv.Itoa(tpm)}},
		{name: "TPM, learned", tpm: tpm, env: nil},
	}
	fmt.Printf("throttle: %d worker processes, %d jobs of 3 chunks, the provider limited to %d RPM or %d TPM (1 s windows), 200 ms per call\n",
		workers, jobs, rpm, tpm)
	fmt.Printf("(on: the limit configured; learned: from the x-ratelimit-* headers alone; rate: calls or tokens per minute between the first and the last call)\n")
	fmt.Printf("%-13s %8s %6s %7s %9s %9s %9s %7s\n", "mode", "requests", "429s", "429 %", "rate/min", "vs limit", "makespan", "failed")
	only := os.Getenv("CARRYOVER_THROTTLE_ONLY") // runs only the modes whose name has it
	for _, c := range cases {
		if !strings.Contains(c.name, only) {
			continue
		}
		r := throttleRun(ctx, b, bin, c, workers, jobs, seeds)
		total := r.calls + r.refused
		rate, limit := 0.0, c.rpm
		if r.span > 0 {
			rate = float64(r.calls-1) / r.span.Minutes()
			if c.rpm == 0 {
				rate, limit = float64(r.tokens)*float64(r.calls-1)/float64(r.calls)/r.span.Minutes(), c.tpm
			}
		}
		fmt.Printf("%-13s %8d %6d %6.1f%% %9.0f %8.1f%% %8.1fs %7d\n", c.name, total, r.refused,
			100*float64(r.refused)/float64(total), rate, 100*rate/float64(limit), r.makespan.Seconds(), r.failed)
	}
}

// throttleRun starts the workers against a fresh rate-limited simulator,
// enqueues the jobs and measures until every one has ended.
func throttleRun(ctx context.Context, b *testing.B, bin string, c throttleCase, workers, jobs int, seeds []int) throttleResult {
	sim := simulator.New(simulator.Config{Latency: 200 * time.Millisecond,
		RateLimits: simulator.RateLimits{RPM: c.rpm, TPM: c.tpm, Window: time.Second}})
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
	since, start := dbNow(ctx, b, pool), time.Now()
	ids, prompts := enqueueMany(ctx, b, cl, inflightCase{jobs: jobs}, seeds)
	waitAll(ctx, b, pool, since, 15*time.Minute)
	r := throttleResult{makespan: time.Since(start)}
	st := sim.BackgroundStats()
	r.calls, r.refused, r.tokens = int(st.ModelCalls), int(st.RateLimited), int(st.RateTokens)
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
