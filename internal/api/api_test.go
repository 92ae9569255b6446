package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/webhook"
	"github.com/carryover/carryover/internal/worker"
)

var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

type env struct {
	t   *testing.T
	url string
	c   *client.Client
	key string // a key of tenant "alpha"
	st  *store.Store
}

// devWebhookAllow lets webhooks reach the tests' receivers on loopback over
// plain http, as a development setup would (CARRYOVER_WEBHOOK_ALLOW).
const devWebhookAllow = "http,127.0.0.0/8,::1/128"

// webhookSecret signs the workers' webhook events in these tests.
var webhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("api-test-secret-0123456789"))

// newEnv serves the API on loopback; with a worker, jobs run end to end.
func newEnv(t *testing.T, withWorker bool) env {
	t.Helper()
	return newEnvWith(t, withWorker, simulator.Config{})
}

// newEnvWith is newEnv with the worker's simulator configured by sc.
func newEnvWith(t *testing.T, withWorker bool, sc simulator.Config) env {
	t.Helper()
	q := testenv.Queue(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: q, Logger: log,
		WebhookAllow: devWebhookAllow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(conform(t, api.New(c, log).Handler()))
	t.Cleanup(srv.Close)
	st, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	key, _, err := st.CreateAPIKey(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if withWorker {
		sim := httptest.NewServer(simulator.New(sc))
		t.Cleanup(sim.Close)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- worker.Run(ctx, worker.Options{SkipMigrate: true, Logger: log, Config: config.Config{
				DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIAPIKey: "sk-test", OpenAIBaseURL: sim.URL + "/v1",
				Concurrency: 4, ChunkQueue: q, LogLevel: "warn", ReconcileInterval: time.Second, StaleAfter: time.Minute,
				MaxRetry: 3, PollInterval: 50 * time.Millisecond, DelayedInterval: 100 * time.Millisecond, WebhookSecret: webhookSecret,
				WebhookAllow: devWebhookAllow}})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	return env{t: t, url: srv.URL, c: c, key: key, st: st}
}

func (e env) do(method, path, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	resp := e.send(context.Background(), method, path, body, header...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// send makes a request with tenant alpha's key (a JSON body, if any) and
// header's name-value pairs, and returns the answer unread.
func (e env) send(ctx context.Context, method, path, body string, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// The whole lifecycle over HTTP: submit, poll, read the result with its
// content type, its JSON view, chunks and events.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	hookURL, hooks := webhookReceiver(t)
	doc, _, _ := simulator.DocumentFor("[[sim format=csv size=2500 seed=61]]")
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=csv size=2500 seed=61]] orders","format":"csv",
		"max_output_tokens":200,"continuation":{"max_attempts":30},"metadata":{"order":7},"webhook_url":"`+hookURL+`"}`, "Idempotency-Key", testenv.RandomName("k"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || acc.ID == "" || !acc.Created || resp.Header.Get("Location") != acc.Links.Self {
		t.Fatalf("%s %v", body, err)
	}
	st := e.pollUntilTerminal(t, acc.Links.Self)
	if st.Status != "succeeded" || st.Chunks < 3 || st.CostUSD == nil {
		t.Fatalf("%+v", st)
	}
	resp, body = e.do("GET", acc.Links.Result, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || string(body) != doc {
		t.Fatalf("result: %d %s equal=%v", resp.StatusCode, resp.Header.Get("Content-Type"), string(body) == doc)
	}
	resp, body = e.do("GET", acc.Links.Result, "", "Accept", "application/json")
	var res client.Result
	if err := json.Unmarshal(body, &res); err != nil || resp.Header.Get("Content-Type") != "application/json" || res.Content != doc || len(res.Metadata) == 0 {
		t.Fatalf("result json: %v", err)
	}
	_, body = e.do("GET", acc.Links.Chunks, "")
	var chunks struct {
		Chunks []client.ChunkStatus `json:"chunks"`
	}
	if err := json.Unmarshal(body, &chunks); err != nil || len(chunks.Chunks) != st.Chunks {
		t.Fatalf("chunks: %s", body)
	}
	e.checkLifecycleEvents(t, acc.Links.Events, st.Chunks)
	select {
	case ev := <-hooks:
		if ev.Type != "job.succeeded" || ev.Data.ID != acc.ID || ev.Data.Tenant != "alpha" {
			t.Fatalf("webhook event: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook event")
	}
}

// webhookReceiver serves a webhook endpoint until the test ends, verifying
// each event's signature, and passes on the events it receives.
func webhookReceiver(t *testing.T) (url string, events <-chan jobs.Event) {
	t.Helper()
	secret, _ := webhook.ParseSecret(webhookSecret)
	hooks := make(chan jobs.Event, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, b, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("webhook signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev jobs.Event
		_ = json.Unmarshal(b, &ev)
		hooks <- ev
	}))
	t.Cleanup(recv.Close)
	return recv.URL + "/hook", hooks
}

// pollUntilTerminal polls a job's status until it is terminal (at most 30s).
func (e env) pollUntilTerminal(t *testing.T, self string) client.Status {
	t.Helper()
	var st client.Status
	deadline := time.Now().Add(30 * time.Second)
	for !st.Terminal() {
		if time.Now().After(deadline) {
			t.Fatalf("job did not finish: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
		_, body := e.do("GET", self, "")
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// checkLifecycleEvents checks a finished job's events: status changes and
// the stopping chunk's decision in its place, the routine continuations
// before it (cut off by the token limit) without an event of their own;
// and that ?after= reads only newer ones.
func (e env) checkLifecycleEvents(t *testing.T, eventsURL string, chunks int) {
	t.Helper()
	_, body := e.do("GET", eventsURL, "")
	var evs struct {
		Events []client.Event `json:"events"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, ev := range evs.Events {
		seen = append(seen, ev.Message)
	}
	if got := strings.Join(seen, ","); chunks < 2 || got != fmt.Sprintf("queued,running,chunk %d: stop, completed (finish_reason),merging,succeeded", chunks-1) {
		t.Fatalf("events: %v", seen)
	}
	total := len(evs.Events)
	_, body = e.do("GET", eventsURL+"?after="+strconv.FormatInt(evs.Events[1].ID, 10), "")
	if err := json.Unmarshal(body, &evs); err != nil || len(evs.Events) != total-2 {
		t.Fatalf("events after: %s", body)
	}
}

// Bad requests are refused with a problem document naming the field, and
// nothing is stored or enqueued.
func TestBadRequestsEnqueueNothing(t *testing.T) {
	// Serial: it counts every job in the database.
	e := newEnv(t, false)
	var before, after int
	if err := countJobs(&before); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body string
		status     int
		field      string
	}{
		{"invalid settings", `{"model":"m","input":"p","continuation":{"max_attempts":99}}`, 400, "continuation.max_attempts"},
		{"unknown field", `{"model":"m","input":"p","temperature":2}`, 400, "temperature"},
		{"error policy", `{"model":"m","input":"p","continuation":{"error_policy":"retry_all(99)"}}`, 400, "continuation.error_policy.max_retries"},
		{"error policy rule", `{"model":"m","input":"p","continuation":{"error_policy":{"rules":{"network":{"action":"retry"}}}}}`, 400, "continuation.error_policy.rules.network"},
		{"strategy", `{"model":"m","input":"p","continuation":{"strategy":"magic"}}`, 400, "continuation.strategy"},
		{"tools", `{"model":"m","input":"p","tools":[{"type":"function","name":"a b"}]}`, 400, "tools[0].name"},
		{"json schema", `{"model":"m","input":"p","json_schema":{"name":"x","schema":{"type":12}}}`, 400, "json_schema.schema"},
		{"wrong type", `{"model":"m","input":"p","max_output_tokens":"many"}`, 400, "max_output_tokens"},
		{"missing input", `{"model":"m"}`, 400, "input"},
		{"not json", `{"model":`, 400, ""},
		{"two values", `{"model":"m","input":"p"} {}`, 400, ""},
		{"too large", `{"model":"m","input":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/jobs", tt.body)
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != tt.status || p.Status != tt.status ||
				resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field) {
				t.Fatalf("problem does not name %s: %s", tt.field, body)
			}
		})
	}
	if err := countJobs(&after); err != nil || after != before {
		t.Fatalf("%d jobs stored by refused requests (%v)", after-before, err)
	}
	resp, _ := e.do("POST", "/v1/jobs", `{"model":"m","input":"p","idempotency_key":"a"}`, "Idempotency-Key", "b")
	if resp.StatusCode != 400 {
		t.Fatalf("differing idempotency keys: %d", resp.StatusCode)
	}
	// A job ID of no job is not found; what is not a job ID is a bad request.
	for path, want := range map[string]int{"/v1/jobs/6f1f7c0e-0000-4000-8000-000000000000": 404, "/v1/jobs/not-a-uuid/result": 400} {
		if resp, _ := e.do("GET", path, ""); resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if resp, b := e.do("GET", "/v2/nothing", ""); resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("unknown route: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("DELETE", "/v1/jobs/6f1f7c0e-0000-4000-8000-000000000000", ""); resp.StatusCode != 405 ||
		!strings.Contains(resp.Header.Get("Allow"), "GET") || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a method the route does not have: %d Allow=%q %s", resp.StatusCode, resp.Header.Get("Allow"), b)
	}
	if resp, _ := e.do("GET", "/readyz", ""); resp.StatusCode != 200 {
		t.Fatalf("readyz: %d", resp.StatusCode)
	}
}

// A request with every continuation option is accepted as the contract says.
func TestEveryOptionAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=json size=300]] go","format":"json","stream":true,
		"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}],
		"json_schema":{"name":"doc","schema":{"type":"object"},"strict":true},
		"continuation":{"strategy":"overlap","overlap_lines":4,"max_records":100,"max_output_tokens_ceiling":8192,
			"error_policy":{"preset":"retry_all","max_retries":2,"rules":{"validation":{"action":"stop"}}}}}`)
	if resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"p","continuation":{"error_policy":"ignore_tool_errors,model=retry:2"}}`)
	if resp.StatusCode != 202 {
		t.Fatalf("short policy form: %d %s", resp.StatusCode, body)
	}
}

// Idempotency-Key returns the same job with 200, and cancel, resume and
// remerge answer as documented.
func TestIdempotencyAndJobActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	key := testenv.RandomName("k")
	body := `{"model":"gpt-4.1-mini","input":"p"}`
	r1, b1 := e.do("POST", "/v1/jobs", body, "Idempotency-Key", key)
	r2, b2 := e.do("POST", "/v1/jobs", body, "Idempotency-Key", key)
	var a1, a2 api.Accepted
	_ = json.Unmarshal(b1, &a1)
	_ = json.Unmarshal(b2, &a2)
	if r1.StatusCode != 202 || r2.StatusCode != 200 || a1.ID != a2.ID || a2.Created {
		t.Fatalf("%d %d %s %s", r1.StatusCode, r2.StatusCode, b1, b2)
	}
	if resp, b := e.do("GET", a1.Links.Result, ""); resp.StatusCode != 409 {
		t.Fatalf("result of a queued job: %d %s", resp.StatusCode, b)
	}
	resp, b := e.do("POST", a1.Links.Cancel, "")
	var st client.Status
	if err := json.Unmarshal(b, &st); err != nil || resp.StatusCode != 200 || st.Status != "cancelled" {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", a1.Links.Remerge, ""); resp.StatusCode != 409 {
		t.Fatalf("remerge with no chunks: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", a1.Links.Resume, `{"max_attempts":0,"bogus":1}`); resp.StatusCode != 400 || !bytes.Contains(b, []byte("bogus")) {
		t.Fatalf("resume with an unknown field: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", a1.Links.Resume, `{"max_attempts":5}`); resp.StatusCode != 202 {
		t.Fatalf("resume of a cancelled job: %d %s", resp.StatusCode, b)
	}
}

// Auth: no key or a bad or revoked key is 401; a job is visible only to its
// own tenant; idempotency keys are per tenant.
func TestAuthAndTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	ctx := context.Background()
	alpha := e
	betaKey, betaPrefix, err := e.st.CreateAPIKey(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	beta := e
	beta.key = betaKey
	for _, k := range []string{"", "co_0000", "Bearer"} {
		nokey := e
		nokey.key = k
		if resp, b := nokey.do("POST", "/v1/jobs", `{"model":"m","input":"p"}`); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("key %q: %d %s", k, resp.StatusCode, b)
		}
	}
	body := `{"model":"gpt-4.1-mini","input":"p","idempotency_key":"same-key"}`
	ra, ba := alpha.do("POST", "/v1/jobs", body)
	rb, bb := beta.do("POST", "/v1/jobs", body)
	var ja, jb api.Accepted
	_ = json.Unmarshal(ba, &ja)
	_ = json.Unmarshal(bb, &jb)
	if ra.StatusCode != 202 || rb.StatusCode != 202 || ja.ID == jb.ID {
		t.Fatalf("an idempotency key is per tenant: %d %d %s %s", ra.StatusCode, rb.StatusCode, ja.ID, jb.ID)
	}
	for _, path := range []string{"", "/result", "/chunks", "/events"} {
		if resp, _ := beta.do("GET", "/v1/jobs/"+ja.ID+path, ""); resp.StatusCode != 404 {
			t.Fatalf("beta reading alpha's job%s: %d", path, resp.StatusCode)
		}
	}
	if resp, _ := beta.do("POST", "/v1/jobs/"+ja.ID+"/cancel", ""); resp.StatusCode != 404 {
		t.Fatalf("beta cancelling alpha's job: %d", resp.StatusCode)
	}
	if st, err := e.c.Status(ctx, ja.ID); err != nil || st.Status != "queued" || st.Tenant != "alpha" {
		t.Fatalf("alpha's job after beta's attempts: %+v %v", st, err)
	}
	if resp, b := alpha.do("GET", "/v1/jobs/"+ja.ID, ""); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"tenant": "alpha"`)) {
		t.Fatalf("alpha reading its own job: %d %s", resp.StatusCode, b)
	}
	if n, err := e.st.RevokeAPIKey(ctx, betaPrefix, ""); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if resp, _ := beta.do("GET", "/v1/jobs/"+jb.ID, ""); resp.StatusCode != 401 {
		t.Fatalf("revoked key: %d", resp.StatusCode)
	}
	var n int
	if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE key_hash = $1 OR prefix = $1`, betaKey).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the key itself is stored: %d %v", n, err)
	}
}

// The progress stream: Server-Sent Events driven by LISTEN/NOTIFY, in order,
// ending with the final status.
func TestStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=text size=2000 seed=62 faults=slow@1:300ms]] go","max_output_tokens":100}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", e.url+acc.Links.Self+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sresp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if sresp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", sresp.Header.Get("Content-Type"))
	}
	var events []client.Status
	sc := bufio.NewScanner(sresp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event string // the status events; the end event follows them
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = v
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "status" {
			var st client.Status
			if err := json.Unmarshal([]byte(data), &st); err != nil {
				t.Fatal(err)
			}
			events = append(events, st)
		}
	}
	if len(events) < 3 {
		t.Fatalf("%d events", len(events))
	}
	rank := map[string]int{"queued": 0, "running": 1, "merging": 2, "succeeded": 3}
	for i := 1; i < len(events); i++ {
		a, b := events[i-1], events[i]
		if b.Chunks < a.Chunks || rank[b.Status] < rank[a.Status] || (a.Chunks == b.Chunks && a.Status == b.Status) {
			t.Fatalf("events out of order or repeated: %s/%d then %s/%d", a.Status, a.Chunks, b.Status, b.Chunks)
		}
	}
	last := events[len(events)-1]
	if last.Status != "succeeded" || last.Chunks < 2 {
		t.Fatalf("last event %s with %d chunks", last.Status, last.Chunks)
	}
	t.Logf("%d events, last %s after %d chunks", len(events), last.Status, last.Chunks)
}

// The operator listener: Prometheus metrics (jobs by status from Postgres,
// asynq's queues) and the read-only asynqmon dashboard.
func TestOpsHandler(t *testing.T) {
	// Serial: asynq's queue metrics read every queue in Redis, and fail
	// whole when a parallel test deletes its queue in between.
	e := newEnv(t, false)
	if resp, b := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"p"}`); resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	h, err := api.OpsHandler(e.c, testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	ops := httptest.NewServer(h)
	defer ops.Close()
	get := func(path string) (int, string, string) {
		resp, err := http.Get(ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, _, body := get("/metrics")
	if code != 200 || !strings.Contains(body, `carryover_jobs{status="queued"}`) || !strings.Contains(body, "asynq_tasks_enqueued_total") {
		t.Fatalf("metrics %d:\n%.2000s", code, body)
	}
	code, ct, body := get("/dashboard/")
	if code != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(strings.ToLower(body), "<html") {
		t.Fatalf("dashboard %d %s", code, ct)
	}
}

// A JSON body sent as curl's -d alone sends it (a form's content type) is
// refused with 415, on every route that takes one, and nothing is done.
func TestFormBodiesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	resp, body := e.do("POST", "/v1/jobs", `{"model":"m","input":"p","continuation":{"max_attempts":2}}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	const form = "application/x-www-form-urlencoded"
	for _, path := range []string{"/v1/jobs", "/v1/jobs/" + acc.ID + "/resume"} {
		resp, body := e.do("POST", path, `{"max_attempts":30}`, "Content-Type", form)
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType || p.Status != 415 {
			t.Errorf("POST %s as %s: %d %s", path, form, resp.StatusCode, body)
		}
	}
}
