package throttle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/throttle"
)

func TestParseReset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"6m0s", 6 * time.Minute}, {"1s", time.Second}, {"20ms", 20 * time.Millisecond},
		{"1m30.5s", 90*time.Second + 500*time.Millisecond}, {"0s", 0}, {"30", 30 * time.Second},
		{"0.25", 250 * time.Millisecond}, {"", 0}, {"soon", 0}, {"-1s", 0},
	} {
		if got := throttle.ParseReset(c.in); got != c.want {
			t.Errorf("ParseReset(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	if got := throttle.ParseHeaders(h); got != (throttle.Headers{}) {
		t.Fatalf("no rate-limit headers: %+v", got)
	}
	h.Set("x-ratelimit-limit-requests", "500")
	h.Set("x-ratelimit-limit-tokens", "30000")
	h.Set("x-ratelimit-remaining-requests", "499")
	h.Set("x-ratelimit-remaining-tokens", "29000")
	h.Set("x-ratelimit-reset-requests", "120ms")
	h.Set("x-ratelimit-reset-tokens", "2s")
	want := throttle.Headers{LimitRequests: 500, LimitTokens: 30000, RemainingRequests: 499, RemainingTokens: 29000,
		ResetRequests: 120 * time.Millisecond, ResetTokens: 2 * time.Second}
	if got := throttle.ParseHeaders(h); got != want {
		t.Fatalf("ParseHeaders = %+v, want %+v", got, want)
	}
	h = http.Header{}
	h.Set("x-ratelimit-remaining-requests", "0")
	h.Set("x-ratelimit-remaining-tokens", "lots")
	want = throttle.Headers{RemainingRequests: 0, RemainingTokens: -1}
	if got := throttle.ParseHeaders(h); got != want {
		t.Fatalf("partial headers: %+v, want %+v", got, want)
	}
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want throttle.Setting
		bad  bool
	}{
		{in: "", want: throttle.Setting{}},
		{in: "600", want: throttle.Setting{Default: 600}},
		{in: "600,gpt-4o=100, gpt-4.1-mini = 500", want: throttle.Setting{Default: 600,
			Models: map[string]int{"gpt-4o": 100, "gpt-4.1-mini": 500}}},
		{in: "gpt-4o=100", want: throttle.Setting{Models: map[string]int{"gpt-4o": 100}}},
		{in: "0,gpt-4o=0", want: throttle.Setting{Models: map[string]int{"gpt-4o": 0}}},
		{in: "-5", bad: true}, {in: "fast", bad: true}, {in: "gpt-4o=100,600", bad: true},
		{in: "=100", bad: true}, {in: "600,,gpt-4o=1", bad: true}, {in: "gpt-4o=1,gpt-4o=2", bad: true},
	} {
		got, err := throttle.ParseSetting("provider-rpm", c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseSetting(%q) accepted: %+v", c.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseSetting(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	s, _ := throttle.ParseSetting("x", "600,gpt-4o=100")
	if s.For("gpt-4o") != 100 || s.For("other") != 600 {
		t.Fatalf("For: %d %d", s.For("gpt-4o"), s.For("other"))
	}
}

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Two throttles — as in two worker processes, each with its own Redis
// connection — share one bucket per (base URL, model): what one admits, the
// other cannot; another model and another base URL have buckets of their own.
func TestSharedBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testenv.RandomName("test:throttle:") + ":"
	cfg := throttle.Config{BaseURL: "http://127.0.0.1:1/v1", RPM: throttle.Setting{Default: 60}, Prefix: prefix}
	a, b := throttle.New(redisClient(t), cfg), throttle.New(redisClient(t), cfg)
	// 60 per minute: a bucket of one request, refilled every second.
	if _, wait, err := a.Admit(ctx, "m", 100); wait != 0 || err != nil {
		t.Fatalf("first call: wait %s, %v", wait, err)
	}
	_, wait, err := b.Admit(ctx, "m", 100)
	if err != nil || wait <= 0 || wait > time.Second {
		t.Fatalf("the other throttle admitted a call past the shared limit: wait %s, %v", wait, err)
	}
	if _, w, err := b.Admit(ctx, "other-model", 100); w != 0 || err != nil {
		t.Fatalf("another model shares the bucket: wait %s, %v", w, err)
	}
	other := cfg
	other.BaseURL = "http://127.0.0.1:2/v1"
	if _, w, err := throttle.New(redisClient(t), other).Admit(ctx, "m", 100); w != 0 || err != nil {
		t.Fatalf("another deployment shares the bucket: wait %s, %v", w, err)
	}
	// Refused calls are given appointments one refill apart, not all the
	// same moment.
	_, w2, err := a.Admit(ctx, "m", 100)
	if err != nil || w2 < wait+800*time.Millisecond {
		t.Fatalf("the second refused call comes back at %s, the first at %s: not spread (%v)", w2, wait, err)
	}
	time.Sleep(wait)
	if _, w, err := a.Admit(ctx, "m", 100); w != 0 || err != nil {
		t.Fatalf("after the wait: wait %s, %v", w, err)
	}
}

// Tokens per minute: a call takes its estimate; Settle gives back what the
// estimate was over; a call above the bucket goes once it is full, then
// the debt is waited out.
func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := throttle.Config{TPM: throttle.Setting{Default: 60000}, Prefix: testenv.RandomName("test:throttle:") + ":"}
	th := throttle.New(redisClient(t), cfg) // a bucket of 900 tokens, 1,000 a second
	tk, wait, err := th.Admit(ctx, "m", 800)
	if wait != 0 || err != nil {
		t.Fatalf("first call: %s %v", wait, err)
	}
	if _, wait, _ = th.Admit(ctx, "m", 800); wait <= 0 {
		t.Fatal("a second 800-token call fit in a 900-token bucket")
	}
	if err := th.Settle(ctx, tk, 100); err != nil {
		t.Fatal(err)
	}
	if _, wait, err = th.Admit(ctx, "m", 800); wait != 0 || err != nil {
		t.Fatalf("after settling at 100 tokens the bucket should hold 800: wait %s, %v", wait, err)
	}
	time.Sleep(time.Second)
	if _, wait, err = th.Admit(ctx, "m", 5000); wait != 0 || err != nil {
		t.Fatalf("a call above the bucket, the bucket full: wait %s, %v", wait, err)
	}
	if _, wait, _ = th.Admit(ctx, "m", 10); wait < 3*time.Second {
		t.Fatalf("after a 5,000-token call the debt is 4 s: wait %s", wait)
	}
}

// A reply's headers teach the throttle: a limit the operator did not set,
// and how much is left, which the bucket then holds no more than.
func TestLearn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	th := throttle.New(redisClient(t), throttle.Config{Learn: true, Prefix: testenv.RandomName("test:throttle:") + ":"})
	if _, wait, err := th.Admit(ctx, "m", 10); wait != 0 || err != nil {
		t.Fatalf("no limit known: wait %s, %v", wait, err)
	}
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "600")
	h.Set("x-ratelimit-remaining-requests", "0")
	h.Set("x-ratelimit-reset-requests", "6s")
	if err := th.Learn(ctx, "m", throttle.ParseHeaders(h)); err != nil {
		t.Fatal(err)
	}
	if got := th.Limits("m"); got.RPM != 600 {
		t.Fatalf("learned limits %+v", got)
	}
	if _, wait, err := th.Admit(ctx, "m", 10); wait <= 0 || err != nil {
		t.Fatalf("the provider said none are left, and the throttle admitted a call: %v", err)
	}
	if _, wait, err := th.Admit(ctx, "n", 10); wait != 0 || err != nil {
		t.Fatalf("another model was limited: wait %s, %v", wait, err)
	}
}

// The transport feeds every reply's headers to the throttle — a 429's
// too — for requests marked with their model; unmarked ones teach nothing.
func TestTransportLearns(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-limit-requests", "120")
		w.Header().Set("x-ratelimit-limit-tokens", "50000")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "500ms")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	th := throttle.New(redisClient(t), throttle.Config{Learn: true, Prefix: testenv.RandomName("test:throttle:") + ":"})
	hc := &http.Client{Transport: th.Transport(nil)}
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	get(context.Background())
	if l := th.Limits("m"); l != (throttle.Limits{}) {
		t.Fatalf("an unmarked request taught %+v", l)
	}
	get(throttle.WithModel(context.Background(), "m"))
	if l := th.Limits("m"); l != (throttle.Limits{RPM: 120, TPM: 50000}) {
		t.Fatalf("learned %+v", l)
	}
	if _, wait, err := th.Admit(context.Background(), "m", 10); wait <= 0 || err != nil {
		t.Fatalf("none left, yet admitted: %s %v", wait, err)
	}
}

// A limit one process learns from a reply's headers, another process —
// its own Redis connection, no reply seen — uses from its next call: it is
// kept in Redis, not only in the memory of the process that saw it.
func TestLearnedShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := throttle.Config{Learn: true, Prefix: testenv.RandomName("test:throttle:") + ":"}
	a, b := throttle.New(redisClient(t), cfg), throttle.New(redisClient(t), cfg)
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "600")
	h.Set("x-ratelimit-limit-tokens", "90000")
	h.Set("x-ratelimit-remaining-requests", "0")
	if err := a.Learn(ctx, "m", throttle.ParseHeaders(h)); err != nil {
		t.Fatal(err)
	}
	if _, wait, err := b.Admit(ctx, "m", 10); wait <= 0 || err != nil {
		t.Fatalf("the other process called past a limit learned elsewhere: wait %s, %v", wait, err)
	}
	if got := b.Limits("m"); got != (throttle.Limits{RPM: 600, TPM: 90000}) {
		t.Fatalf("the other process knows %+v", got)
	}
	// Another deployment learned nothing.
	other := cfg
	other.BaseURL = "http://127.0.0.1:2/v1"
	c := throttle.New(redisClient(t), other)
	if _, wait, err := c.Admit(ctx, "m", 10); wait != 0 || err != nil {
		t.Fatalf("another deployment: wait %s, %v", wait, err)
	}
	if got := c.Limits("m"); got != (throttle.Limits{}) {
		t.Fatalf("another deployment knows %+v", got)
	}
}

// A cold fleet — nothing known about a model — lets one call go and holds
// the others until its reply teaches the limit; a reply without rate-limit
// headers lets every call go unpaced at once; a probe whose reply does not
// come in the probe window holds nobody past it.
func TestProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := throttle.Config{Learn: true, Prefix: testenv.RandomName("test:throttle:") + ":"}
	a, b := throttle.New(redisClient(t), cfg), throttle.New(redisClient(t), cfg)
	type admitted struct {
		wait time.Duration
		err  error
		at   time.Time
	}
	admit := func(th *throttle.Throttle, model string) <-chan admitted {
		c := make(chan admitted, 1)
		go func() {
			_, wait, err := th.Admit(ctx, model, 10)
			c <- admitted{wait, err, time.Now()}
		}()
		return c
	}

	// Taught by headers.
	if _, wait, err := a.Admit(ctx, "m", 10); wait != 0 || err != nil {
		t.Fatalf("the probe: wait %s, %v", wait, err)
	}
	held := admit(b, "m")
	select {
	case r := <-held:
		t.Fatalf("a second call went while the probe was out: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "600")
	h.Set("x-ratelimit-remaining-requests", "1")
	taught := time.Now()
	if err := a.Learn(ctx, "m", throttle.ParseHeaders(h)); err != nil {
		t.Fatal(err)
	}
	if r := <-held; r.wait != 0 || r.err != nil || r.at.Sub(taught) > time.Second {
		t.Fatalf("after the probe's reply: %+v, %s after it", r, r.at.Sub(taught))
	}
	if _, wait, err := b.Admit(ctx, "m", 10); wait <= 0 || err != nil {
		t.Fatalf("the learned limit (one left) let a third call through: wait %s, %v", wait, err)
	}

	// A provider without rate-limit headers: its first reply frees all.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	if _, wait, err := a.Admit(ctx, "n", 10); wait != 0 || err != nil {
		t.Fatalf("the probe: wait %s, %v", wait, err)
	}
	held = admit(b, "n")
	time.Sleep(100 * time.Millisecond)
	req, _ := http.NewRequestWithContext(throttle.WithModel(ctx, "n"), http.MethodPost, srv.URL+"/v1/responses", nil)
	res, err := (&http.Client{Transport: a.Transport(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	replied := time.Now()
	if r := <-held; r.wait != 0 || r.err != nil || r.at.Sub(replied) > time.Second {
		t.Fatalf("after a reply without headers: %+v, %s after it", r, r.at.Sub(replied))
	}
	for range 5 {
		start := time.Now()
		if _, wait, err := b.Admit(ctx, "n", 10); wait != 0 || err != nil || time.Since(start) > time.Second {
			t.Fatalf("a provider without headers is paced: wait %s, %v, took %s", wait, err, time.Since(start))
		}
	}

	// No reply in the window: the others go when it ends, and no second
	// probe holds them.
	start := time.Now()
	if _, wait, err := a.Admit(ctx, "slow", 10); wait != 0 || err != nil {
		t.Fatalf("the probe: wait %s, %v", wait, err)
	}
	if r := <-admit(b, "slow"); r.wait != 0 || r.err != nil || r.at.Sub(start) < time.Second || r.at.Sub(start) > 4*time.Second {
		t.Fatalf("past the probe window: %+v, %s after the probe", r, r.at.Sub(start))
	}
	c := throttle.New(redisClient(t), cfg)
	for range 3 {
		begin := time.Now()
		if _, wait, err := c.Admit(ctx, "slow", 10); wait != 0 || err != nil || time.Since(begin) > time.Second {
			t.Fatalf("a second probe: wait %s, %v, took %s", wait, err, time.Since(begin))
		}
	}
}
