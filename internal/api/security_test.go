package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/ratelimit"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/worker"
)

// limited serves the API with limits whose buckets live under prefix in the
// tests' Redis (two servers on one prefix share them), and with quota.
func limited(t *testing.T, prefix string, perKey *ratelimit.Rule, authFailures ratelimit.Rule, quota *client.Quota) env {
	t.Helper()
	q := testenv.Queue(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: q,
		Logger: log, MaxConns: 4, Quota: quota})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() {
		if keys, err := rdb.Keys(context.Background(), prefix+"*").Result(); err == nil && len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		_ = rdb.Close()
	})
	lim := api.Limits{Limiter: ratelimit.New(rdb, prefix), PerKey: perKey, AuthFailures: authFailures}
	srv := httptest.NewServer(conform(t, api.New(c, log, api.WithLimits(lim)).Handler()))
	t.Cleanup(srv.Close)
	st, err := store.Open(context.Background(), dbURL, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return env{t: t, url: srv.URL, c: c, st: st}
}

// generous is an auth-failure budget no test here spends by accident.
var generous = ratelimit.Rule{Rate: 100, Burst: 1000}

// tenantKey makes a tenant of its own for this test, and a key of it.
func tenantKey(t *testing.T, st *store.Store, prefix string) (tenant, key string) {
	t.Helper()
	tenant = testenv.RandomName(prefix)
	key, _, err := st.CreateAPIKey(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	return tenant, key
}

// want429 checks a 429 with a Retry-After of whole seconds (at least 1, at
// most max) and a problem document, and returns the document.
func want429(t *testing.T, what string, resp *http.Response, body []byte, maxWait int) api.Problem {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %s, want 429", what, resp.StatusCode, body)
	}
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > maxWait {
		t.Fatalf("%s: Retry-After %q, want 1..%d seconds", what, resp.Header.Get("Retry-After"), maxWait)
	}
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil || p.Status != 429 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s: not a problem document: %s %v", what, body, err)
	}
	return p
}

// One API key may make its burst of requests, then is refused with 429 and
// Retry-After — by a second API process on the same Redis too, since the
// bucket is in Redis; another key is not affected.
func TestSecurityRateLimit(t *testing.T) {
	t.Parallel()
	prefix := testenv.RandomName("test:ratelimit:") + ":"
	rule := &ratelimit.Rule{Rate: 0.1, Burst: 5} // a token every 10 s: none comes back during the test
	a := limited(t, prefix, rule, generous, nil)
	b := limited(t, prefix, rule, generous, nil)
	_, a.key = tenantKey(t, a.st, "rl")
	b.key = a.key
	path := "/v1/jobs/00000000-0000-4000-8000-000000000000" // not found: only the key's bucket matters
	for i := range rule.Burst {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		if resp, body := srv.do("GET", path, ""); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d within the burst: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := b.do("GET", path, "")
	p := want429(t, "past the burst, on the second server", resp, body, 10)
	if p.Title != "rate limit exceeded" {
		t.Fatalf("title %q", p.Title)
	}
	resp, body = a.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`)
	want429(t, "past the burst, on the first server", resp, body, 10)
	other := a
	_, other.key = tenantKey(t, a.st, "rl")
	if resp, body := other.do("GET", path, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another key: %d %s", resp.StatusCode, body)
	}
}

// Many wrong keys from one client get it refused with 429 before any key
// is looked at, its right key included; a client at another address (here
// 127.0.0.2, loopback too) still authenticates.
func TestSecurityAuthThrottle(t *testing.T) {
	t.Parallel()
	prefix := testenv.RandomName("test:authfail:") + ":"
	rule := ratelimit.Rule{Rate: 10.0 / 60, Burst: 10}
	e := limited(t, prefix, nil, rule, nil)
	_, good := tenantKey(t, e.st, "at")
	path := "/v1/jobs/00000000-0000-4000-8000-000000000000"
	wrong := e
	for i := range rule.Burst {
		wrong.key = fmt.Sprintf("co_%064d", i)
		// X-Forwarded-For is not trusted by default: a new one each time does not make a new client.
		if resp, body := wrong.do("GET", path, "", "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := wrong.do("GET", path, "")
	p := want429(t, "a wrong key past the budget", resp, body, 60)
	if p.Title != "too many failed authentications" {
		t.Fatalf("title %q", p.Title)
	}
	right := e
	right.key = good
	resp, body = right.do("GET", path, "")
	want429(t, "the right key from the throttled client", resp, body, 60)

	// Another client: the same server, dialled from 127.0.0.2.
	from2 := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	get := func(key string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := from2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, body := get(good); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the right key from another client: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("co_wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key from another client: %d %s", resp.StatusCode, body)
	}
}

// A tenant at its quota of jobs in flight is refused with 429, Retry-After
// and a problem document naming the quota, and nothing is stored; another
// tenant is not affected; an idempotent retry of an accepted job still gets
// it; a resume counts as a new job in flight; concurrent requests cannot together pass the quota; a tenant's row
// overrides the operator's quota; a daily spend cap refuses new jobs until
// the next UTC day.
func TestSecurityQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quota := &client.Quota{MaxJobsInFlight: 2}
	e := limited(t, testenv.RandomName("test:quota:")+":", nil, generous, quota)
	alpha, alphaKey := tenantKey(t, e.st, "qa")
	e.key = alphaKey
	live := func(tenant string) int {
		var n int
		if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM jobs WHERE tenant_id = $1 AND status IN ('queued','running','merging')`,
			tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 2 {
		if resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`, "Idempotency-Key", fmt.Sprint("k", i)); resp.StatusCode != 202 {
			t.Fatalf("job %d within the quota: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`)
	p := want429(t, "a job past the quota", resp, body, 60)
	if p.Quota != store.QuotaJobsInFlight || !strings.Contains(p.Detail, alpha) {
		t.Fatalf("the problem does not name the quota: %+v", p)
	}
	if n := live(alpha); n != 2 {
		t.Fatalf("%d jobs stored, want 2", n)
	}
	if resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`, "Idempotency-Key", "k0"); resp.StatusCode != 200 {
		t.Fatalf("an idempotent retry of an accepted job: %d %s", resp.StatusCode, body)
	}
	beta := e
	_, beta.key = tenantKey(t, e.st, "qb")
	if resp, body := beta.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`); resp.StatusCode != 202 {
		t.Fatalf("another tenant: %d %s", resp.StatusCode, body)
	}

	// The tenant's own row overrides the operator's quota.
	if _, err := e.st.Pool().Exec(ctx, `UPDATE tenants SET max_jobs_in_flight = 3 WHERE id = $1`, alpha); err != nil {
		t.Fatal(err)
	}
	if resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`); resp.StatusCode != 202 {
		t.Fatalf("within the tenant's own quota: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`)
	want429(t, "past the tenant's own quota", resp, body, 60)

	// A resume makes a job live again: it counts too.
	resp, body = e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`, "Idempotency-Key", "k0")
	var first api.Accepted
	if err := json.Unmarshal(body, &first); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", first.Links.Cancel, ""); resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`); resp.StatusCode != 202 {
		t.Fatalf("a job in the slot the cancel freed: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", first.Links.Resume, `{"max_attempts":20}`)
	if p := want429(t, "a resume past the quota", resp, body, 60); p.Quota != store.QuotaJobsInFlight {
		t.Fatalf("%+v", p)
	}
	if n := live(alpha); n != 3 {
		t.Fatalf("%d jobs live, want 3", n)
	}

	// Concurrent requests: exactly the quota gets in.
	gamma := e
	gammaTenant, gammaKey := tenantKey(t, e.st, "qg")
	gamma.key = gammaKey
	var wg sync.WaitGroup
	codes := make([]int, 12)
	for i := range codes {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", gamma.url+"/v1/jobs", strings.NewReader(`{"model":"m","input":"p"}`))
			req.Header.Set("Authorization", "Bearer "+gammaKey)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				codes[i] = resp.StatusCode
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	accepted := 0
	for _, c := range codes {
		switch c {
		case 202:
			accepted++
		case 429:
		default:
			t.Fatalf("concurrent requests answered %v", codes)
		}
	}
	if accepted != 2 || live(gammaTenant) != 2 {
		t.Fatalf("%d of 12 concurrent requests accepted, %d stored; want exactly the quota, 2", accepted, live(gammaTenant))
	}

	// A daily spend cap: a call that cost $0.02 today, against a cap of $0.01.
	delta := e
	deltaTenant, deltaKey := tenantKey(t, e.st, "qd")
	delta.key = deltaKey
	resp, body = delta.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		t.Fatalf("first job: %d %s", resp.StatusCode, body)
	}
	if _, err := e.st.Pool().Exec(ctx, `
WITH t AS (UPDATE tenants SET daily_spend_usd = 0.01 WHERE id = $2)
INSERT INTO call_failures (job_id, seq, status, cost_usd) VALUES ($1::uuid, 0, 'failed', 0.02)`, acc.ID, deltaTenant); err != nil {
		t.Fatal(err)
	}
	resp, body = delta.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`)
	p = want429(t, "past the daily spend", resp, body, 86400)
	if p.Quota != store.QuotaDailySpend {
		t.Fatalf("the problem does not name the spend quota: %+v", p)
	}
}

// A schema nested 1,700 deep, or holding tens of thousands of values, is
// refused at once with the field named, as json_schema.schema or as a
// tool's parameters; and a job's schema is compiled once per worker across
// its merge and two remerges.
func TestSecuritySchemaDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 1700) + `{"type":"string"}` + strings.Repeat(`}}`, 1700)
	deep = strings.ReplaceAll(deep, `{"type":"object","properties":{"a":`, `{"properties":{"a":`) // under 64 KB
	wide := `{"enum":[` + strings.TrimSuffix(strings.Repeat(`0,`, 30000), ",") + `]}`
	if len(deep) > 64<<10 || len(wide) > 64<<10 {
		t.Fatalf("schemas over the size limit: %d %d", len(deep), len(wide))
	}
	e := newEnv(t, false)
	for _, c := range []struct{ name, body, field string }{
		{"deep json_schema", `{"model":"m","input":"p","format":"json","json_schema":{"name":"x","schema":` + deep + `}}`, "json_schema.schema"},
		{"wide json_schema", `{"model":"m","input":"p","format":"json","json_schema":{"name":"x","schema":` + wide + `}}`, "json_schema.schema"},
		{"deep tool parameters", `{"model":"m","input":"p","tools":[{"type":"function","name":"ok","parameters":{"type":"object"}},` +
			`{"type":"function","name":"f","parameters":` + deep + `}]}`, "tools[1].parameters"},
		{"wide tool parameters", `{"model":"m","input":"p","tools":[{"type":"function","name":"f","parameters":` + wide + `}]}`, "tools[0].parameters"},
	} {
		resp, body := e.do("POST", "/v1/jobs", c.body)
		var p api.Problem
		_ = json.Unmarshal(body, &p)
		if resp.StatusCode != 400 || len(p.Errors) != 1 || p.Errors[0].Field != c.field {
			t.Errorf("%s: %d %.300s, want 400 naming %s", c.name, resp.StatusCode, body, c.field)
		}
	}

	// Compiled once per job: a worker whose /metrics counts compilations.
	w := newEnv(t, false)
	sim := httptest.NewServer(simulator.New(simulator.Config{}))
	t.Cleanup(sim.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	health := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := testenv.Queue(t)
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: q, Logger: log, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(conform(t, api.New(c, log).Handler()))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	go func() {
		done <- worker.Run(ctx, worker.Options{SkipMigrate: true, Logger: log, OnHealthListen: func(a string) { health <- a },
			Config: config.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIAPIKey: "sk-test", OpenAIBaseURL: sim.URL + "/v1",
				Concurrency: 2, ChunkQueue: q, LogLevel: "warn", ReconcileInterval: time.Second, StaleAfter: time.Minute, HealthAddr: "127.0.0.1:0",
				MaxRetry: 3, PollInterval: 50 * time.Millisecond, DelayedInterval: 100 * time.Millisecond, DBConns: 2}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var metricsURL string
	select {
	case a := <-health:
		metricsURL = "http://" + a + "/metrics"
	case err := <-done:
		t.Fatalf("worker: %v", err)
	}
	resp, body := w.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=json size=600 seed=5]] doc","format":"json",
		"max_output_tokens":200,"json_schema":{"name":"doc","schema":{"type":"object","properties":{"items":{"type":"array"}}}}}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	w.pollUntilTerminal(t, acc.Links.Self)
	for i := range 2 {
		if resp, body := w.do("POST", acc.Links.Remerge, ""); resp.StatusCode != 202 {
			t.Fatalf("remerge %d: %d %s", i+1, resp.StatusCode, body)
		}
		w.pollUntilTerminal(t, acc.Links.Self)
	}
	var merges, compiles float64
	for _, line := range strings.Split(metricsBody(t, metricsURL), "\n") {
		if v, ok := strings.CutPrefix(line, "carryover_merge_seconds_count "); ok {
			merges, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, "carryover_schema_compiles_total "); ok {
			compiles, _ = strconv.ParseFloat(v, 64)
		}
	}
	if merges != 3 || compiles != 1 {
		t.Fatalf("%v merges compiled the schema %v times, want 3 merges and 1 compilation", merges, compiles)
	}
}

func metricsBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
