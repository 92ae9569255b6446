package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RateLimits are the per-model limits the simulator enforces on model calls
// (POST /responses and /chat/completions), as OpenAI does: every reply
// carries x-ratelimit-* headers, and a call past a limit is answered 429
// with OpenAI's error body, Retry-After and retry-after-ms. Zero fields
// are no limit.
type RateLimits struct {
	RPM int // requests per minute
	TPM int // tokens per minute: the request's input as its usage reports it (the stored conversation of a previous_response_id included) plus its output budget
	// Window is how much of a minute's limit can be spent at once (each
	// limit is a bucket of limit×Window/1m, refilled at limit per minute).
	// Default one minute; OpenAI enforces shorter windows too, and a
	// benchmark of sustained throughput wants about a second.
	Window time.Duration
}

func (l RateLimits) on() bool { return l.RPM > 0 || l.TPM > 0 }

// rateBook is the simulator's buckets, one pair per model.
type rateBook struct {
	mu      sync.Mutex
	buckets map[string]*rateBuckets
}

type rateBuckets struct {
	req, tok bucket
}

// bucket is a token bucket; level at ts.
type bucket struct {
	level float64
	ts    time.Time
}

// at refills b to now and returns its level.
func (b *bucket) at(now time.Time, rate, burst float64) float64 {
	if b.ts.IsZero() {
		b.level = burst
	} else {
		b.level = math.Min(burst, b.level+now.Sub(b.ts).Seconds()*rate)
	}
	b.ts = now
	return b.level
}

// limitVerdict is what the limiter decided for one call.
type limitVerdict struct {
	ok   bool
	kind string // "requests" or "tokens": the limit that refused it
	wait time.Duration
	used int
	// Header values after the call.
	remReq, remTok     float64
	resetReq, resetTok time.Duration
}

// rateLimited applies the limits to a model call: it reads the body (and
// puts it back for the handler), counts the call and sets the x-ratelimit-*
// headers; past a limit it answers 429 and reports true.
func (s *Server) rateLimited(w http.ResponseWriter, r *http.Request) bool {
	lim := s.cfg.RateLimits
	if !lim.on() {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false // the handler reports the unreadable body
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Model               string `json:"model"`
		PreviousResponseID  string `json:"previous_response_id"`
		MaxOutputTokens     *int   `json:"max_output_tokens"`
		MaxCompletionTokens *int   `json:"max_completion_tokens"`
		MaxTokens           *int   `json:"max_tokens"`
		// The text the call's input tokens are counted from.
		Instructions any `json:"instructions"`
		Input        any `json:"input"`
		Messages     any `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	// Counted as OpenAI counts a request when it arrives: its input (the
	// stored conversation of a previous response included) as the reply's
	// usage will report it, plus its whole output budget.
	chars := textChars(req.Instructions) + textChars(req.Input) + textChars(req.Messages)
	if req.PreviousResponseID != "" {
		s.mu.Lock()
		if st, ok := s.responses[req.PreviousResponseID]; ok {
			chars += st.convChars
		}
		s.mu.Unlock()
	}
	tokens := tokensOf(chars) + defaultMaxTokens
	for _, m := range []*int{req.MaxOutputTokens, req.MaxCompletionTokens, req.MaxTokens} {
		if m != nil && *m > 0 {
			tokens += *m - defaultMaxTokens
			break
		}
	}
	v := s.rates.take(req.Model, lim, tokens, s.now())
	h := w.Header()
	if lim.RPM > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(lim.RPM))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(int(math.Max(0, v.remReq))))
		h.Set("x-ratelimit-reset-requests", resetString(v.resetReq))
	}
	if lim.TPM > 0 {
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(lim.TPM))
		h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(int(math.Max(0, v.remTok))))
		h.Set("x-ratelimit-reset-tokens", resetString(v.resetTok))
	}
	if v.ok {
		s.bg.modelCalls.Add(1)
		s.bg.rateTokens.Add(int64(tokens))
		return false
	}
	s.bg.rateLimited.Add(1)
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(v.wait.Seconds()))))
	h.Set("retry-after-ms", strconv.FormatInt(int64(math.Ceil(float64(v.wait)/float64(time.Millisecond))), 10))
	limit, unit, requested := lim.RPM, "requests per min (RPM)", 1
	if v.kind == "tokens" {
		limit, unit, requested = lim.TPM, "tokens per min (TPM)", tokens
	}
	writeError(w, http.StatusTooManyRequests, v.kind, "rate_limit_exceeded", "",
		fmt.Sprintf("Rate limit reached for %s in organization org-simulator on %s: Limit %d, Used %d, Requested %d. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.",
			req.Model, unit, limit, v.used, requested, resetString(v.wait)))
	return true
}

// take counts a call of tokens to model if both buckets allow it.
func (b *rateBook) take(model string, lim RateLimits, tokens int, now time.Time) limitVerdict {
	window := lim.Window
	if window <= 0 {
		window = time.Minute
	}
	share := window.Seconds() / 60
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets == nil {
		b.buckets = map[string]*rateBuckets{}
	}
	rb := b.buckets[model]
	if rb == nil {
		rb = &rateBuckets{}
		b.buckets[model] = rb
	}
	v := limitVerdict{ok: true}
	rRate, rBurst := float64(lim.RPM)/60, math.Max(1, float64(lim.RPM)*share)
	tRate, tBurst := float64(lim.TPM)/60, math.Max(1, float64(lim.TPM)*share)
	if lim.RPM > 0 {
		if l := rb.req.at(now, rRate, rBurst); l < 1 {
			v = limitVerdict{kind: "requests", wait: seconds((1 - l) / rRate), used: int(rBurst - l)}
		}
	}
	if lim.TPM > 0 && v.ok {
		// A call above the bucket goes once it is full, into debt.
		need := math.Min(float64(tokens), tBurst)
		if l := rb.tok.at(now, tRate, tBurst); l < need {
			v = limitVerdict{kind: "tokens", wait: seconds((need - l) / tRate), used: int(tBurst - l)}
		}
	}
	if v.ok {
		if lim.RPM > 0 {
			rb.req.level--
		}
		if lim.TPM > 0 {
			rb.tok.level -= float64(tokens)
		}
	}
	if lim.RPM > 0 {
		v.remReq, v.resetReq = rb.req.level, seconds((rBurst-rb.req.level)/rRate)
	}
	if lim.TPM > 0 {
		v.remTok, v.resetTok = rb.tok.level, seconds((tBurst-rb.tok.level)/tRate)
	}
	return v
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// resetString is a wait as OpenAI writes it: "6m0s", "1s", "20ms".
func resetString(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return (d + time.Millisecond - 1).Truncate(time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// textChars is the length of the text in a decoded JSON value: its strings'
// lengths, nested ones included, except the roles and types that frame a
// message.
func textChars(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []any:
		n := 0
		for _, e := range v {
			n += textChars(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			if k != "role" && k != "type" {
				n += textChars(e)
			}
		}
		return n
	}
	return 0
}
