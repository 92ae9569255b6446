package simulator

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The simulator enforces requests and tokens per minute per model as
// OpenAI does: x-ratelimit-* headers on every model reply, and past a
// limit a 429 with OpenAI's error body and Retry-After.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	sim := New(Config{Now: clock, RateLimits: RateLimits{RPM: 2, TPM: 2000}})
	call := func(model string, maxTokens int) *http.Response {
		body := `{"model":"` + model + `","input":"[[sim format=csv size=100]]","max_output_tokens":` + itoa(maxTokens) + `}`
		rec := newRecorder()
		sim.ServeHTTP(rec, newRequest(http.MethodPost, "/v1/responses", body))
		return rec.Result()
	}
	for i, want := range []string{"1", "0"} {
		res := call("a", 100)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d", i, res.StatusCode)
		}
		h := res.Header
		if h.Get("x-ratelimit-limit-requests") != "2" || h.Get("x-ratelimit-remaining-requests") != want ||
			h.Get("x-ratelimit-limit-tokens") != "2000" || h.Get("x-ratelimit-reset-requests") == "" || h.Get("x-ratelimit-remaining-tokens") == "" {
			t.Fatalf("call %d headers: %v", i, h)
		}
	}
	res := call("a", 100)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "30" || res.Header.Get("retry-after-ms") != "30000" {
		t.Fatalf("past the RPM: %d %v", res.StatusCode, res.Header)
	}
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Error.Code != "rate_limit_exceeded" || body.Error.Type != "requests" {
		t.Fatalf("429 body: %+v %v", body, err)
	}
	if res := call("b", 100); res.StatusCode != http.StatusOK {
		t.Fatalf("another model is limited: %d", res.StatusCode)
	}
	// Tokens: "b" has spent ~130 of 2,000; a 1,900-token budget is past it.
	res = call("b", 1900)
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusTooManyRequests || body.Error.Type != "tokens" {
		t.Fatalf("past the TPM: %d %+v", res.StatusCode, body)
	}
	advance(30 * time.Second)
	if res := call("a", 100); res.StatusCode != http.StatusOK {
		t.Fatalf("after the Retry-After: %d", res.StatusCode)
	}
	if st := sim.BackgroundStats(); st.ModelCalls != 4 || st.RateLimited != 2 || st.RateTokens < 400 {
		t.Fatalf("stats %+v", st)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
