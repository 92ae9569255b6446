package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
)

// inflightCase is one run of BenchmarkInflight.
type inflightCase struct {
	name        string
	jobs        int
	chunks      int // chunks per job the documents are sized for
	latency     time.Duration
	background  bool
	concurrency int // 0: the worker's default
}

// inflightResult is what one run measured.
type inflightResult struct {
	makespan, ideal   time.Duration
	chunks, created   int
	gets              int
	peakRSS           int64 // bytes (VmHWM)
	maxConns          int
	failed, different int
	breakdown         string
	timeline          string
}

// BenchmarkInflight measures how many chunks one worker process keeps in
// flight when calls take as long as real ones do: CARRYOVER_INFLIGHT_JOBS
// jobs (default 10,000) of three chunks each against the simulator with a
// CARRYOVER_INFLIGHT_LATENCY call latency (default 20s), one worker process
// at its default concurrency with background mode on. It prints the
// makespan beside the ideal (three calls back to back), the polls per
// chunk, the model calls created per chunk (1.00: none paid twice), the
// worker's peak RSS and the most Postgres connections it held. The same
// measure with background mode off follows, at CARRYOVER_INFLIGHT_OFF_JOBS
// jobs (default 1,000) and a concurrency of as many (every call holds a
// slot there, so the slots needed are the calls in flight).
func BenchmarkInflight(b *testing.B) {
	ctx := context.Background()
	latency := envDuration(b, "CARRYOVER_INFLIGHT_LATENCY", 20*time.Second)
	jobs := envInt(b, "CARRYOVER_INFLIGHT_JOBS", 10000)
	offJobs := envInt(b, "CARRYOVER_INFLIGHT_OFF_JOBS", 1000)
	bin := testenv.BuildWorker(b)
	seeds := seedsOfChunks(ctx, b, 3, max(jobs, offJobs))
	cases := []inflightCase{
		{name: "background", jobs: jobs, chunks: 3, latency: latency, background: true},
		{name: "synchronous", jobs: offJobs, chunks: 3, latency: latency, concurrency: offJobs},
	}
	fmt.Printf("in-flight: jobs of 3 chunks, %s per model call, one worker process\n", latency)
	fmt.Printf("%-12s %6s %11s %9s %7s %6s %11s %11s %9s %12s\n", "mode", "jobs", "concurrency", "makespan", "ideal",
		"ratio", "polls/chunk", "calls/chunk", "peak RSS", "max PG conns")
	for _, c := range cases {
		r := inflightRun(ctx, b, bin, c, seeds)
		conc := "32 (default)"
		if c.concurrency > 0 {
			conc = strconv.Itoa(c.concurrency)
		}
		polls := "-"
		if c.background {
			polls = fmt.Sprintf("%.2f", float64(r.gets)/float64(r.chunks))
		}
		fmt.Printf("%-12s %6d %11s %8.1fs %6.0fs %6.2f %11s %11.2f %6.0f MiB %12d\n", c.name, c.jobs, conc,
			r.makespan.Seconds(), r.ideal.Seconds(), r.makespan.Seconds()/r.ideal.Seconds(), polls,
			float64(r.created)/float64(r.chunks), float64(r.peakRSS)/(1<<20), r.maxConns)
		fmt.Printf("%-12s where the time went, mean per job: %s\n", "", r.breakdown)
		fmt.Printf("%-12s timeline, from the first enqueue: %s\n", "", r.timeline)
		if r.different > 0 {
			// The merge's fidelity is make bench-fidelity's to measure; a
			// difference here is printed, not hidden.
			fmt.Printf("%-12s %d merged documents differ from the simulator's\n", "", r.different)
		}
		if r.failed > 0 {
			b.Fatalf("%s: %d jobs did not succeed", c.name, r.failed)
		}
	}
}

// inflightRun enqueues the case's jobs to a fresh worker process and
// measures until every one has ended.
func inflightRun(ctx context.Context, b *testing.B, bin string, c inflightCase, seeds []int) inflightResult {
	sim := simulator.New(simulator.Config{Latency: c.latency})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	queue, app := testenv.Queue(b), testenv.RandomName("inflight_")
	dsn := dbURL + sep(dbURL) + "application_name=" + app
	health := freeAddr(b)
	env := []string{"DATABASE_URL=" + dsn, "REDIS_URL=" + testenv.RedisURL(), "OPENAI_API_KEY=sk-bench",
		"OPENAI_BASE_URL=" + ts.URL + "/v1", "CARRYOVER_QUEUE=" + queue, "LOG_LEVEL=warn", "HEALTH_ADDR=" + health,
		"CARRYOVER_BACKGROUND=" + strconv.FormatBool(c.background)}
	if c.concurrency > 0 {
		env = append(env, "WORKER_CONCURRENCY="+strconv.Itoa(c.concurrency))
	}
	cmd := exec.Command(bin)
	cmd.Env, cmd.Stderr = append(os.Environ(), env...), os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer stopProcess(cmd)
	waitReady(b, "http://"+health+"/readyz")

	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var maxConns atomic.Int64
	stopSampling := sample(ctx, pool, app, &maxConns)

	cl, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: queue, MaxConns: 8,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	since, start := dbNow(ctx, b, pool), time.Now()
	ids, prompts := enqueueMany(ctx, b, cl, c, seeds)
	enqueued := time.Since(start)
	waitAll(ctx, b, pool, since, 20*c.latency+10*time.Minute)
	r := inflightResult{makespan: time.Since(start)}
	stopSampling()
	r.peakRSS = peakRSS(cmd.Process.Pid)
	r.maxConns = int(maxConns.Load())
	st := sim.BackgroundStats()
	r.gets = int(st.Polls)
	r.created = len(sim.Calls("")) // every response the simulator made (the prompts have no tag) is a billed call
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[])`, ids).Scan(&r.chunks); err != nil {
		b.Fatal(err)
	}
	r.failed, r.different = checkResults(ctx, b, pool, ids, prompts)
	r.breakdown = breakdown(ctx, b, pool, ids)
	r.timeline = fmt.Sprintf("enqueued in %.1fs; ", enqueued.Seconds()) + timeline(ctx, b, pool, ids, since)
	conc := c.concurrency
	if conc == 0 {
		conc = 32
	}
	waves := 1
	if !c.background {
		waves = (c.jobs + conc - 1) / conc
	}
	r.ideal = time.Duration(c.chunks*waves) * c.latency
	return r
}

// inflightSize is the documents' size: most take three chunks of 64
// tokens, and seedsOfChunks keeps the seeds whose document takes exactly
// that many.
const inflightSize = 500

func inflightPrompt(seed int) string {
	return fmt.Sprintf("[[sim format=text size=%d seed=%d]] Write.", inflightSize, seed)
}

// seedsOfChunks finds n seeds whose documents take exactly chunks chunks,
// asking an in-process simulator (no latency) as the worker would.
func seedsOfChunks(ctx context.Context, b *testing.B, chunks, n int) []int {
	ts := httptest.NewServer(simulator.New(simulator.Config{}))
	defer ts.Close()
	p := provider.NewResponses(provider.Config{BaseURL: ts.URL + "/v1", APIKey: "sk-bench"})
	count := func(seed int) int {
		req := continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64, Input: continuation.Input{Prompt: inflightPrompt(seed)}}
		for k := 1; ; k++ {
			r, err := p.Call(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if r.Finish != continuation.FinishLength || k > chunks {
				return k
			}
			req = continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64, PreviousID: r.ID, Prompt: continuation.ContinuePrompt("text")}
		}
	}
	var mu sync.Mutex
	var seeds []int
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				seed := int(next.Add(1))
				mu.Lock()
				enough := len(seeds) >= n
				mu.Unlock()
				if enough {
					return
				}
				if count(seed) == chunks {
					mu.Lock()
					seeds = append(seeds, seed)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return seeds[:n]
}

// enqueueMany submits the case's jobs from 16 producers at once, one per
// seed.
func enqueueMany(ctx context.Context, b *testing.B, cl *client.Client, c inflightCase, seeds []int) ([]string, []string) {
	ids, prompts := make([]string, c.jobs), make([]string, c.jobs)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < c.jobs; i = int(next.Add(1)) - 1 {
				prompts[i] = inflightPrompt(seeds[i])
				job, err := cl.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Format: "text", MaxOutputTokens: 64,
					Input: client.Input{Prompt: prompts[i]}, Continuation: client.Continuation{MaxAttempts: 10}})
				if err != nil {
					failed.Store(err)
					return
				}
				ids[i] = job.ID
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return ids, prompts
}

// waitAll waits until every job created since (Postgres's clock) has
// ended. It counts the live jobs through their partial index
// (jobs_live_idx), so a poll costs Postgres what is still live, not the
// whole run's jobs: the poll is load on the machine being measured.
func waitAll(ctx context.Context, b *testing.B, pool *pgxpool.Pool, since time.Time, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		var live int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status IN ('queued', 'running', 'merging')
			AND created_at >= $1`, since).Scan(&live); err != nil {
			b.Fatal(err)
		}
		if live == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs still live after %s", live, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// dbNow is Postgres's clock, for waitAll.
func dbNow(ctx context.Context, b *testing.B, pool *pgxpool.Pool) time.Time {
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		b.Fatal(err)
	}
	return now
}

// checkResults counts the jobs that did not succeed and the merged
// documents that are not exactly the simulator's.
func checkResults(ctx context.Context, b *testing.B, pool *pgxpool.Pool, ids, prompts []string) (failed, different int) {
	want := make(map[string]string, len(ids))
	for i, id := range ids {
		doc, _, ok := simulator.DocumentFor(prompts[i])
		if !ok {
			b.Fatalf("bad directive %q", prompts[i])
		}
		want[id] = doc
	}
	rows, err := pool.Query(ctx, `SELECT j.id::text, j.status, coalesce(r.content, '') FROM jobs j
		LEFT JOIN job_results r ON r.job_id = j.id WHERE j.id = ANY($1::uuid[])`, ids)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, content string
		if err := rows.Scan(&id, &status, &content); err != nil {
			b.Fatal(err)
		}
		switch {
		case status != "succeeded":
			failed++
		case content != want[id]:
			different++
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return failed, different
}

// sample records the most Postgres connections the application held, every
// 100ms until stop is called.
func sample(ctx context.Context, pool *pgxpool.Pool, app string, most *atomic.Int64) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var n int64
			if pool.QueryRow(sctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n) == nil &&
				n > most.Load() {
				most.Store(n)
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// stopProcess ends a worker with SIGTERM (SIGKILL after 30s).
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitReady waits until the worker's readiness endpoint answers 200.
func waitReady(b *testing.B, url string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("worker not ready at %s", url)
}

// freeAddr is a loopback address with a port free now.
func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

func envInt(b *testing.B, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s must be a positive integer, got %q", key, s)
	}
	return n
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		b.Fatalf("%s must be a positive duration, got %q", key, s)
	}
	return d
}

// breakdown says where a job's time went, as means over the jobs: from its
// creation to its first call, in its calls (creation to read), between a
// chunk's save and the next call, and from the last save to the end.
func breakdown(ctx context.Context, b *testing.B, pool *pgxpool.Pool, ids []string) string {
	var start, calls, gaps, merge float64
	err := pool.QueryRow(ctx, `
WITH c AS (
	SELECT job_id, seq, call_started_at, created_at, latency_ms,
	       call_started_at - lag(created_at) OVER (PARTITION BY job_id ORDER BY seq) AS gap
	FROM chunks WHERE job_id = ANY($1::uuid[])
), j AS (
	SELECT j.id, extract(epoch FROM min(c.call_started_at) - j.created_at) AS start,
	       sum(c.latency_ms) / 1000.0 AS calls, coalesce(extract(epoch FROM sum(c.gap)), 0) AS gaps,
	       extract(epoch FROM j.finished_at - max(c.created_at)) AS merge
	FROM jobs j JOIN c ON c.job_id = j.id GROUP BY j.id
)
SELECT avg(start), avg(calls), avg(gaps), avg(merge) FROM j`, ids).Scan(&start, &calls, &gaps, &merge)
	if err != nil {
		b.Fatal(err)
	}
	var bySeq string
	if err := pool.QueryRow(ctx, `SELECT string_agg(to_char(ms / 1000.0, 'FM990.0') || 's', ' / ' ORDER BY seq) FROM (
		SELECT seq, avg(latency_ms) AS ms FROM chunks WHERE job_id = ANY($1::uuid[]) GROUP BY seq) s`, ids).Scan(&bySeq); err != nil {
		b.Fatal(err)
	}
	// Reads of a background call: the polls that found it unfinished and
	// the one that found it done (none for a synchronous run).
	var reads string
	if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(to_char(r, 'FM990.00'), ' / ' ORDER BY seq), '-') FROM (
		SELECT seq, avg(polls + 1) AS r FROM background_calls WHERE job_id = ANY($1::uuid[]) GROUP BY seq) s`, ids).Scan(&reads); err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("to the first call %.1fs, in calls %.1fs (by chunk %s; reads per call %s), between calls %.1fs, last save to the end %.1fs",
		start, calls, bySeq, reads, gaps, merge)
}

// timeline says when each wave of calls ran, from since (Postgres's clock
// at the first enqueue): per chunk, the median and the last call start and
// save. The makespan is the last job's, so the spread of a wave, and how it
// grows from one wave to the next, is where a makespan above the ideal
// comes from.
func timeline(ctx context.Context, b *testing.B, pool *pgxpool.Pool, ids []string, since time.Time) string {
	var s string
	err := pool.QueryRow(ctx, `SELECT string_agg(format('chunk %s started %ss..%ss (median %ss), saved by %ss', seq,
		to_char(first, 'FM990.0'), to_char(last, 'FM990.0'), to_char(mid, 'FM990.0'), to_char(saved, 'FM990.0')), '; ' ORDER BY seq)
	FROM (SELECT seq,
		extract(epoch FROM min(call_started_at) - $2) AS first,
		extract(epoch FROM max(call_started_at) - $2) AS last,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM call_started_at - $2)) AS mid,
		extract(epoch FROM max(created_at) - $2) AS saved
		FROM chunks WHERE job_id = ANY($1::uuid[]) GROUP BY seq) w`, ids, since).Scan(&s)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
