// Package ratelimit holds token buckets in Redis, so a limit holds across
// every process that shares the Redis: the API's per-key request rate and
// its per-client throttle on failed authentication.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rule is a token bucket: Burst tokens at most, refilled at Rate per
// second. Each allowed request takes one.
type Rule struct {
	Rate  float64 // tokens per second; must be > 0
	Burst int     // bucket size; must be >= 1
}

// Valid reports whether the rule can be applied.
func (r Rule) Valid() error {
	if !(r.Rate > 0) || math.IsInf(r.Rate, 0) {
		return fmt.Errorf("rate must be a positive number of requests per second, got %v", r.Rate)
	}
	if r.Burst < 1 {
		return fmt.Errorf("burst must be at least 1, got %d", r.Burst)
	}
	return nil
}

// Limiter applies rules to named buckets under a key prefix (tests use
// their own prefix, so runs never share buckets).
type Limiter struct {
	rdb    redis.Scripter
	prefix string
}

// New builds a Limiter over a Redis client; every bucket's key starts with
// prefix.
func New(rdb redis.Scripter, prefix string) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix}
}

// bucket takes cost tokens (0 only looks) from the bucket at KEYS[1], refilled
// since its last use at ARGV[1] per second up to ARGV[2]. The clock is
// Redis's own (TIME), so API processes with skewed clocks share one bucket.
// It returns {1, 0} when the tokens were there (and taken), else {0, ms}:
// how long until they will be. The bucket expires once it would be full
// again, so idle keys cost no memory.
var bucket = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local need = math.max(cost, 1)
if tokens < need then
  return {0, math.ceil((need - tokens) / rate * 1000)}
end
if cost > 0 then
  tokens = tokens - cost
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
end
return {1, 0}
`)

// Take takes one token from the bucket named key. When the bucket is empty
// it reports false and how long until a token will be there.
func (l *Limiter) Take(ctx context.Context, key string, r Rule) (bool, time.Duration, error) {
	return l.run(ctx, key, r, 1)
}

// Check reports whether the bucket named key holds a token, without taking
// it, and if not how long until it will.
func (l *Limiter) Check(ctx context.Context, key string, r Rule) (bool, time.Duration, error) {
	return l.run(ctx, key, r, 0)
}

func (l *Limiter) run(ctx context.Context, key string, r Rule, cost int) (bool, time.Duration, error) {
	if err := r.Valid(); err != nil {
		return false, 0, err
	}
	res, err := bucket.Run(ctx, l.rdb, []string{l.prefix + key}, r.Rate, r.Burst, cost).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("ratelimit: bucket %s: %w", key, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("ratelimit: bucket %s: unexpected reply %v", key, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// RetryAfter is a wait as a Retry-After header value: whole seconds,
// rounded up, at least 1.
func RetryAfter(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return fmt.Sprint(s)
}
