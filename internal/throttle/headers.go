package throttle

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers are a reply's rate-limit fields (OpenAI's names; Azure OpenAI
// and most gateways send the same). Counts not sent are -1 (0 for limits).
type Headers struct {
	LimitRequests, LimitTokens         int
	RemainingRequests, RemainingTokens int
	// ResetRequests and ResetTokens are how long until the limit is
	// whole again ("6m0s", "1s", "20ms" on the wire).
	ResetRequests, ResetTokens time.Duration
	// Age is how long before the reply's headers arrived the request was
	// sent: the provider counted what was left about then, and has refilled
	// since.
	Age time.Duration
}

// ParseHeaders reads the rate-limit fields of a reply; it returns the zero
// Headers when there are none.
func ParseHeaders(h http.Header) Headers {
	if h.Get("x-ratelimit-remaining-requests") == "" && h.Get("x-ratelimit-remaining-tokens") == "" &&
		h.Get("x-ratelimit-limit-requests") == "" && h.Get("x-ratelimit-limit-tokens") == "" {
		return Headers{}
	}
	return Headers{
		LimitRequests:     count(h.Get("x-ratelimit-limit-requests"), 0),
		LimitTokens:       count(h.Get("x-ratelimit-limit-tokens"), 0),
		RemainingRequests: count(h.Get("x-ratelimit-remaining-requests"), -1),
		RemainingTokens:   count(h.Get("x-ratelimit-remaining-tokens"), -1),
		ResetRequests:     ParseReset(h.Get("x-ratelimit-reset-requests")),
		ResetTokens:       ParseReset(h.Get("x-ratelimit-reset-tokens")),
	}
}

// count is a header's whole number, or missing when absent or not one.
func count(s string, missing int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return missing
	}
	return n
}

// ParseReset reads a reset time: OpenAI's Go-style durations ("6m0s",
// "1s", "20ms", "1m30.5s") or a number of seconds ("30", "0.5"); 0 when
// empty or unreadable.
func ParseReset(s string) time.Duration {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second))
	}
	return 0
}

// modelKey carries the model a request is for, for Transport.
type modelKey struct{}

// WithModel marks ctx's requests as calls to model: their replies' headers
// teach the throttle (see Transport).
func WithModel(ctx context.Context, model string) context.Context {
	return context.WithValue(ctx, modelKey{}, model)
}

// Transport wraps next so that every reply to a request made under
// WithModel — errors and 429s included — feeds its rate-limit headers to
// t. A model call's reply (a POST other than a cancel) that states no
// limits tells t the provider states none, which ends a cold fleet's
// probe (see shared). A failure to record them is not the call's failure.
func (t *Throttle) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		model, _ := req.Context().Value(modelKey{}).(string)
		sent := time.Now()
		res, err := next.RoundTrip(req)
		if res != nil && model != "" && t.cfg.Learn {
			ctx := context.WithoutCancel(req.Context())
			h := ParseHeaders(res.Header)
			if h != (Headers{}) {
				h.Age = time.Since(sent)
				_ = t.Learn(ctx, model, h)
			}
			if h.LimitRequests == 0 && h.LimitTokens == 0 && req.Method == http.MethodPost &&
				!strings.HasSuffix(req.URL.Path, "/cancel") {
				_ = t.stateless(ctx, model)
			}
		}
		return res, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
