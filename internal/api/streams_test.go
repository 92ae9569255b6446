package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/testenv"
)

// streamEnv serves the API over a client with a pool of maxConns
// connections (its own application_name, so its backends can be counted)
// and the given stream limits; no worker, so a job stays queued.
func streamEnv(t *testing.T, maxConns int32, lim api.StreamLimits) (env, string, *api.Server) {
	t.Helper()
	e := newEnv(t, false) // for its store and tenant alpha's key
	app := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL + sep + "application_name=" + app, RedisURL: testenv.RedisURL(),
		ChunkQueue: testenv.Queue(t), Logger: log, MaxConns: maxConns, AcquireTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	a := api.New(c, log, api.WithStreamLimits(lim))
	srv := httptest.NewServer(conform(t, a.Handler()))
	t.Cleanup(srv.Close)
	e.url, e.c = srv.URL, c
	return e, app, a
}

// job submits a job for tenant alpha and returns its path.
func (e env) job() string {
	e.t.Helper()
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"go","max_output_tokens":100}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		e.t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	return acc.Links.Self
}

// openStream opens a job's stream with a key and waits at most wait for the
// answer's headers; cancel closes the stream. resp is nil if no answer came.
func (e env) openStream(path, key string, wait time.Duration, header ...string) (resp *http.Response, cancel func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+path+"/stream", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	got := make(chan *http.Response, 1)
	go func() {
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- nil
			return
		}
		got <- r
	}()
	select {
	case resp = <-got:
	case <-time.After(wait):
	}
	if resp != nil {
		e.t.Cleanup(func() { _ = resp.Body.Close() })
	}
	return resp, cancel
}

// promptly does a request bounded by a few seconds, so that a server that
// hangs fails the test rather than hanging it; it returns 0 for no answer.
func (e env) promptly(method, path, key string) int {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Stream exhaustion: a stream used to hold a pooled Postgres connection for
// its whole life, so as many open streams as the pool had connections hung
// every other request of the API, a wrong key included. Now three times as
// many streams as connections are open, and the API still answers at once;
// the process LISTENs on one connection, outside the pool.
func TestSecurityStreamExhaustion(t *testing.T) {
	const conns, streams = 4, 12
	e, app, _ := streamEnv(t, conns, api.StreamLimits{PerTenant: 100, Total: 100})
	job := e.job()
	var wg sync.WaitGroup
	answers := make([]*http.Response, streams)
	for i := range answers {
		wg.Go(func() { answers[i], _ = e.openStream(job, e.key, 10*time.Second) })
	}
	wg.Wait()
	open := 0
	for _, r := range answers {
		if r != nil && r.StatusCode == http.StatusOK {
			open++
		}
	}
	if open != streams {
		t.Errorf("%d of %d streams opened (a pool of %d connections)", open, streams, conns)
	}
	if code := e.promptly("GET", job, e.key); code != http.StatusOK {
		t.Errorf("GET %s with %d streams open: %d (0: no answer within 5 s)", job, streams, code)
	}
	if code := e.promptly("GET", job, "co_wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET %s with a wrong key and %d streams open: %d (0: no answer within 5 s)", job, streams, code)
	}
	if code := e.promptly("GET", job+"/events", e.key); code != http.StatusOK {
		t.Errorf("GET %s/events with %d streams open: %d (0: no answer within 5 s)", job, streams, code)
	}
	var listening int
	if err := e.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND query = 'LISTEN carryover_jobs'`, app).Scan(&listening); err != nil {
		t.Fatal(err)
	}
	if listening != 1 {
		t.Errorf("%d connections LISTEN for %d streams; want 1", listening, open)
	}
}

// Stream caps: past a tenant's cap its next stream is a 429 with
// Retry-After and a problem document, and another tenant is unaffected;
// past the process's cap every tenant's next stream is a 429; a closed
// stream frees its slot.
func TestSecurityStreamCaps(t *testing.T) {
	e, _, _ := streamEnv(t, 4, api.StreamLimits{PerTenant: 2, Total: 3})
	beta, _, err := e.st.CreateAPIKey(context.Background(), "beta")
	if err != nil {
		t.Fatal(err)
	}
	alphaJob := e.job()
	betaEnv := e
	betaEnv.key = beta
	betaJob := betaEnv.job()
	want := func(what string, r *http.Response, status int) {
		t.Helper()
		if r == nil {
			t.Fatalf("%s: no answer", what)
		}
		if r.StatusCode != status {
			t.Fatalf("%s: %d, want %d", what, r.StatusCode, status)
		}
		if status != http.StatusTooManyRequests {
			return
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("%s: Retry-After %q", what, r.Header.Get("Retry-After"))
		}
		var p api.Problem
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || r.Header.Get("Content-Type") != "application/problem+json" ||
			p.Status != http.StatusTooManyRequests || p.Detail == "" {
			t.Fatalf("%s: %s problem %+v (%v)", what, r.Header.Get("Content-Type"), p, err)
		}
	}
	a1, closeA1 := e.openStream(alphaJob, e.key, 5*time.Second)
	want("alpha's first stream", a1, http.StatusOK)
	a2, _ := e.openStream(alphaJob, e.key, 5*time.Second)
	want("alpha's second stream", a2, http.StatusOK)
	a3, _ := e.openStream(alphaJob, e.key, 5*time.Second)
	want("alpha's third stream (tenant cap 2)", a3, http.StatusTooManyRequests)
	b1, _ := e.openStream(betaJob, beta, 5*time.Second)
	want("beta's first stream while alpha is at its cap", b1, http.StatusOK)
	b2, _ := e.openStream(betaJob, beta, 5*time.Second)
	want("beta's second stream (process cap 3)", b2, http.StatusTooManyRequests)
	// Other requests are not capped.
	if code := e.promptly("GET", alphaJob, e.key); code != http.StatusOK {
		t.Fatalf("GET %s at the stream caps: %d", alphaJob, code)
	}
	closeA1()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, cancel := e.openStream(alphaJob, e.key, 5*time.Second)
		if r != nil && r.StatusCode == http.StatusOK {
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream did not free its slot: %v", r)
		}
	}
}

// sse reads a stream to its end (bounded), returning its event ids and
// whether it ended with a retry hint.
func sse(t *testing.T, r *http.Response) (ids []string, statuses []string, retry bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				ids = append(ids, v)
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var st client.Status
				_ = json.Unmarshal([]byte(v), &st)
				statuses = append(statuses, st.Status)
			}
			if strings.HasPrefix(line, "retry: ") {
				retry = true
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = r.Body.Close()
		<-done
		t.Fatal("the stream did not end within 10 s")
	}
	return ids, statuses, retry
}

// Stream lifetime: a stream ends after its lifetime with a retry hint,
// however long its job lasts; the client reconnects with Last-Event-ID and
// is not sent that event again, but is sent what changed since.
func TestSecurityStreamLifetime(t *testing.T) {
	e, _, _ := streamEnv(t, 4, api.StreamLimits{Lifetime: 700 * time.Millisecond})
	job := e.job()
	start := time.Now()
	r, _ := e.openStream(job, e.key, 5*time.Second)
	if r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v", r)
	}
	ids, statuses, retry := sse(t, r)
	if len(ids) != 1 || statuses[0] != "queued" || !retry {
		t.Fatalf("first stream: ids %v statuses %v, retry hint %v", ids, statuses, retry)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a stream with a lifetime of 700ms lasted %s", took)
	}
	// Nothing changed: the reconnection sends nothing but the retry hint.
	r, _ = e.openStream(job, e.key, 5*time.Second, "Last-Event-ID", ids[0])
	if r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("reconnection: %v", r)
	}
	again, _, retry := sse(t, r)
	if len(again) != 0 || !retry {
		t.Fatalf("reconnection with Last-Event-ID %s: ids %v, retry hint %v", ids[0], again, retry)
	}
	// The job changed meanwhile: the reconnection sends the change, and ends
	// with the job.
	if resp, body := e.do("POST", job+"/cancel", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	r, _ = e.openStream(job, e.key, 5*time.Second, "Last-Event-ID", ids[0])
	if r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("reconnection after a change: %v", r)
	}
	changed, statuses, _ := sse(t, r)
	if len(changed) != 1 || changed[0] == ids[0] || statuses[0] != "cancelled" {
		t.Fatalf("reconnection after a change: ids %v statuses %v", changed, statuses)
	}
}

// A request waits a bounded time for a database connection: with the
// pool's one connection held (by a request stuck behind a table lock), the
// next request is a 503 with Retry-After after the acquire timeout, not a
// request that hangs; the stuck one completes once the lock goes.
func TestSecurityPoolAcquireBounded(t *testing.T) {
	e, app, _ := streamEnv(t, 1, api.StreamLimits{})
	job := e.job()
	ctx := context.Background()
	tx, err := e.st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	stuck := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.url+job, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			stuck <- 0
			return
		}
		_ = resp.Body.Close()
		stuck <- resp.StatusCode
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var waiting int
		if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			app).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never waited on the lock")
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", e.url+job, nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a request with the pool taken had no answer within 5 s: %v", err)
	}
	var p api.Problem
	_ = json.NewDecoder(resp.Body).Decode(&p)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || p.Status != http.StatusServiceUnavailable {
		t.Fatalf("a request with the pool taken: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), p)
	}
	t.Logf("503 after %s", time.Since(start).Round(time.Millisecond))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-stuck:
		if code != http.StatusOK {
			t.Fatalf("the request behind the lock: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request behind the lock did not complete")
	}
}

// A server shutting down ends its streams with a retry hint at once (so
// their clients reconnect to another process), rather than keeping
// Shutdown waiting on them.
func TestStreamsEndOnDrain(t *testing.T) {
	e, _, a := streamEnv(t, 4, api.StreamLimits{})
	job := e.job()
	r, _ := e.openStream(job, e.key, 5*time.Second)
	if r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v", r)
	}
	// The first event, then the drain.
	br := bufio.NewReader(r.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}
	a.Drain()
	r.Body = io.NopCloser(br)
	ids, _, retry := sse(t, r)
	if len(ids) != 0 || !retry {
		t.Fatalf("a drained stream: ids %v after the first, retry hint %v", ids, retry)
	}
}
