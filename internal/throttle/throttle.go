// Package throttle paces model calls to a provider deployment's rate
// limits — requests and tokens per minute per (base URL, model) — across
// every worker, through token buckets in Redis (package ratelimit). The
// limits are the operator's (Config), or learned from the provider's
// x-ratelimit-limit-* headers (kept in Redis, so one worker's reply
// teaches them all); the provider's x-ratelimit-remaining-* and
// -reset-* headers correct the buckets after each reply, so calls other
// clients make with the same key are counted too. A call the buckets
// refuse is told how long to wait; the caller re-schedules itself rather
// than wait in a worker slot.
package throttle

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/ratelimit"
)

// Limits are one model's requests and tokens per minute; 0 is no limit
// (unless learned from the provider).
type Limits struct {
	RPM, TPM int
}

// Setting is one limit as the operator writes it: a default for every
// model, then per-model overrides, comma-separated:
// "600,gpt-4o=100,gpt-4.1-mini=500". "0" (or a model's "=0") is no limit
// of the operator's; "" is none at all.
type Setting struct {
	Default int
	Models  map[string]int
}

// ParseSetting parses a Setting; name is the setting's name for errors.
func ParseSetting(name, s string) (Setting, error) {
	var st Setting
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			if s = strings.TrimSpace(s); s == "" {
				return st, nil
			}
			return st, fmt.Errorf("%s: empty entry in %q", name, s)
		}
		model, num, per := strings.Cut(part, "=")
		if !per {
			if i != 0 {
				return st, fmt.Errorf("%s: the default (a bare number) must come first, got %q", name, part)
			}
			num = model
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 0 {
			return st, fmt.Errorf("%s: %q is not a whole number of at least 0 per minute", name, num)
		}
		if !per {
			st.Default = n
			continue
		}
		model = strings.TrimSpace(model)
		if model == "" {
			return st, fmt.Errorf("%s: an override needs a model name before '=' (%q)", name, part)
		}
		if st.Models == nil {
			st.Models = map[string]int{}
		}
		if _, dup := st.Models[model]; dup {
			return st, fmt.Errorf("%s: model %q given twice", name, model)
		}
		st.Models[model] = n
	}
	return st, nil
}

// For is the setting's limit for model.
func (s Setting) For(model string) int {
	if n, ok := s.Models[model]; ok {
		return n
	}
	return s.Default
}

// Config configures a Throttle.
type Config struct {
	// BaseURL names the provider deployment ("" is OpenAI's own API).
	BaseURL string
	// RPM and TPM are the operator's limits.
	RPM, TPM Setting
	// Learn takes limits from the provider's x-ratelimit-limit-* headers
	// for models the operator set none for, and lowers the buckets to the
	// provider's x-ratelimit-remaining-* counts.
	Learn bool
	// Prefix starts every Redis key (tests use their own).
	Prefix string
}

// BurstWindow is how much of a minute's limit a bucket holds: most of one
// second's worth (at least one request). Providers enforce per-minute
// limits over shorter windows too (OpenAI: "quantized"), so a bucket of a
// whole minute would let a fleet spend the minute's budget in its first
// second and meet 429s; about a second's worth keeps the calls paced at
// the rate. The tenth of a second short of a second is for the request's
// way to the provider: a provider whose bucket is full while a call is on
// its way loses that much refill, which a bucket as big as its own would
// not allow for.
const BurstWindow = 900 * time.Millisecond

// learnedTTL is how long a limit learned from headers is used after the
// last reply that stated it (in Redis: after the last time a process
// stored it, which one does at most every storeEvery while replies state
// it).
const learnedTTL = 10 * time.Minute

// maxLearned bounds the models a Throttle keeps learned limits for: model
// names are the tenants' to choose.
const maxLearned = 1024

// Throttle paces calls to one provider deployment.
type Throttle struct {
	cfg Config
	rdb redis.Scripter
	lim *ratelimit.Limiter

	mu      sync.Mutex
	learned map[string]learned // by model
}

type learned struct {
	Limits
	until  time.Time // used until then
	stored time.Time // when this process last wrote them to Redis
}

// New builds a Throttle whose buckets live in rdb.
func New(rdb redis.Scripter, cfg Config) *Throttle {
	cfg.BaseURL = deployment(cfg.BaseURL)
	return &Throttle{cfg: cfg, rdb: rdb, lim: ratelimit.New(rdb, cfg.Prefix+"throttle:"), learned: map[string]learned{}}
}

// Limits are model's limits as this process knows them now: the
// operator's, else learned ones (from its own replies, or read from Redis
// by a recent Admit).
func (t *Throttle) Limits(model string) Limits {
	l := Limits{RPM: t.cfg.RPM.For(model), TPM: t.cfg.TPM.For(model)}
	if !t.cfg.Learn || (l.RPM > 0 && l.TPM > 0) {
		return l
	}
	ln, _ := t.memory(model)
	return merge(l, ln)
}

// merge fills the limits the operator did not set with learned ones.
func merge(l, ln Limits) Limits {
	if l.RPM == 0 {
		l.RPM = ln.RPM
	}
	if l.TPM == 0 {
		l.TPM = ln.TPM
	}
	return l
}

// memory is model's learned limits in this process, if still to be used.
func (t *Throttle) memory(model string) (Limits, bool) {
	t.mu.Lock()
	ln, ok := t.learned[model]
	t.mu.Unlock()
	if !ok || !time.Now().Before(ln.until) {
		return Limits{}, false
	}
	return ln.Limits, true
}

// limits are model's limits for a call: the operator's, else learned ones
// — this process's, else those another process stored in Redis (see
// shared).
func (t *Throttle) limits(ctx context.Context, model string) (Limits, error) {
	l := Limits{RPM: t.cfg.RPM.For(model), TPM: t.cfg.TPM.For(model)}
	if !t.cfg.Learn || (l.RPM > 0 && l.TPM > 0) {
		return l, nil
	}
	ln, err := t.shared(ctx, model, l == (Limits{}))
	if err != nil {
		return l, err
	}
	return merge(l, ln), nil
}

// rule is the bucket for a per-minute limit (rounded down: never more
// than the provider's own window holds).
func rule(perMinute int) ratelimit.Rule {
	rate := float64(perMinute) / 60
	return ratelimit.Rule{Rate: rate, Burst: max(1, int(math.Floor(rate*BurstWindow.Seconds())))}
}

// key names a bucket. The braces are a Redis Cluster hash tag: a model's
// two buckets are in one slot, as one script takes from both.
func (t *Throttle) key(kind, model string) string {
	return kind + ":{" + t.cfg.BaseURL + "|" + model + "}"
}

// Ticket is an admitted call, to Settle once its usage is known.
type Ticket struct {
	Model    string
	Reserved int // tokens taken from the tokens bucket (0: none)
	tpm      int // the tokens-per-minute limit they were taken under
}

// Admit takes one request and tokens (the call's estimated input plus its
// output budget) for a call to model. Refused, it returns how long until
// the caller should try again (wait > 0) and takes nothing.
func (t *Throttle) Admit(ctx context.Context, model string, tokens int) (Ticket, time.Duration, error) {
	l, err := t.limits(ctx, model)
	if err != nil {
		return Ticket{}, 0, fmt.Errorf("throttle %s: %w", model, err)
	}
	tk := Ticket{Model: model, tpm: l.TPM}
	var costs []ratelimit.Cost
	if l.RPM > 0 {
		costs = append(costs, ratelimit.Cost{Key: t.key("rpm", model), Rule: rule(l.RPM), N: 1})
	}
	if l.TPM > 0 && tokens > 0 {
		costs = append(costs, ratelimit.Cost{Key: t.key("tpm", model), Rule: rule(l.TPM), N: float64(tokens)})
		tk.Reserved = tokens
	}
	ok, wait, err := t.lim.TakeAll(ctx, costs...)
	if err != nil {
		return Ticket{}, 0, fmt.Errorf("throttle %s: %w", model, err)
	}
	if !ok {
		return Ticket{}, max(wait, time.Millisecond), nil
	}
	return tk, 0, nil
}

// Settle corrects an admitted call's tokens to what it counted: the
// estimate's error is given back (or taken). used is the call's input
// tokens as the reply reported plus its output budget (providers count the
// budget when the request arrives); used < 0 leaves the reservation as is.
func (t *Throttle) Settle(ctx context.Context, tk Ticket, used int) error {
	if tk.Reserved == 0 || used < 0 || used == tk.Reserved {
		return nil
	}
	if tk.tpm <= 0 {
		return nil
	}
	_, err := t.lim.Adjust(ctx, t.key("tpm", tk.Model), rule(tk.tpm), float64(tk.Reserved-used), -1)
	return err
}

// Learn takes what a reply's rate-limit headers say about model's limits:
// the limits themselves (when the operator set none; stored in Redis for
// every process) and what is left (the buckets hold no more). Headers
// without rate-limit fields change nothing.
func (t *Throttle) Learn(ctx context.Context, model string, h Headers) error {
	if !t.cfg.Learn || h == (Headers{}) {
		return nil
	}
	if h.LimitRequests > 0 || h.LimitTokens > 0 {
		ln := Limits{RPM: h.LimitRequests, TPM: h.LimitTokens}
		if t.remember(model, ln) {
			if err := t.share(ctx, model, ln); err != nil {
				return err
			}
		}
	}
	// The provider counted what was left when the request arrived and has
	// refilled since: the bucket is capped at that count plus the refill,
	// which never lets through more than the provider would.
	l := t.Limits(model)
	if l.RPM > 0 && h.RemainingRequests >= 0 {
		r := rule(l.RPM)
		if _, err := t.lim.Adjust(ctx, t.key("rpm", model), r, 0, float64(h.RemainingRequests)+r.Rate*h.Age.Seconds()); err != nil {
			return err
		}
	}
	if l.TPM > 0 && h.RemainingTokens >= 0 {
		r := rule(l.TPM)
		if _, err := t.lim.Adjust(ctx, t.key("tpm", model), r, 0, float64(h.RemainingTokens)+r.Rate*h.Age.Seconds()); err != nil {
			return err
		}
	}
	return nil
}

// remember keeps model's limits learned from a reply for learnedTTL. It
// reports whether to store them in Redis: they are new to this process,
// or it last stored them storeEvery ago.
func (t *Throttle) remember(model string, l Limits) (store bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.learned[model]
	if !t.room(model, now) {
		return false
	}
	ln := learned{Limits: l, until: now.Add(learnedTTL), stored: old.stored}
	if !ok || old.Limits != l || now.Sub(old.stored) >= storeEvery {
		ln.stored = now
		store = true
	}
	t.learned[model] = ln
	return store
}

// cache keeps model's limits as read from Redis for ttl; stored says this
// process just wrote them.
func (t *Throttle) cache(model string, l Limits, ttl time.Duration, stored bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.room(model, now) {
		return
	}
	ln := learned{Limits: l, until: now.Add(ttl), stored: t.learned[model].stored}
	if stored {
		ln.stored = now
	}
	t.learned[model] = ln
}

// room reports whether model can be kept, making room among at most
// maxLearned models by dropping the expired ones (a model past that is
// not kept until room is made: model names are the tenants' to choose).
// t.mu is held.
func (t *Throttle) room(model string, now time.Time) bool {
	if _, ok := t.learned[model]; ok || len(t.learned) < maxLearned {
		return true
	}
	for m, ln := range t.learned {
		if !now.Before(ln.until) {
			delete(t.learned, m)
		}
	}
	return len(t.learned) < maxLearned
}

// deployment is the base URL as a bucket's name: without credentials or a
// query, which keys and error messages must not carry.
func deployment(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "unparsed"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return strings.TrimSuffix(u.String(), "/")
}
