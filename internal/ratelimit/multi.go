package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cost is what one call takes from a bucket: N tokens from a bucket of Rule.
// A cost above the rule's burst is taken once the bucket is full, leaving it
// in debt (a call of 8,000 tokens under a bucket of 5,000 still goes, and
// the calls after it wait the debt out).
type Cost struct {
	Key  string
	Rule Rule
	N    float64
}

// takeAll takes every cost from its bucket (KEYS[i], ARGV[3i-2..3i]: rate,
// burst, cost) or none. Refused, the caller is given an appointment: the
// later of when the tokens will be there and one cost's worth of refill
// after the last appointment handed out. Refused callers so come back one
// after another at the buckets' rate, not all at once when the first would
// fit, each to try again (an appointment reserves nothing). Returns {1, 0}
// when taken, else {0, ms until the appointment}.
var takeAll = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local n = #KEYS
local lv, ap = {}, {}
local wait = 0
for i = 1, n do
  local rate, burst, cost = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i])
  local v = redis.call('HMGET', KEYS[i], 'tokens', 'ts', 'appt')
  local tokens, ts = tonumber(v[1]), tonumber(v[2])
  if tokens == nil or ts == nil then
    tokens = burst
    ts = now
  end
  lv[i] = math.min(burst, tokens + math.max(0, now - ts) * rate)
  ap[i] = tonumber(v[3]) or 0
  local need = math.min(cost, burst)
  if lv[i] < need then
    wait = math.max(wait, (need - lv[i]) / rate)
  end
end
if wait == 0 then
  for i = 1, n do
    local rate, burst, cost = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i])
    local tokens = lv[i] - cost
    redis.call('HSET', KEYS[i], 'tokens', tostring(tokens), 'ts', tostring(now))
    local ttl = math.max((burst - tokens) / rate, ap[i] - now)
    redis.call('PEXPIRE', KEYS[i], math.ceil(ttl * 1000) + 1000)
  end
  return {1, 0}
end
local at = now + wait
for i = 1, n do
  local rate, cost = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i])
  at = math.max(at, ap[i] + cost / rate)
end
for i = 1, n do
  local rate, burst = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1])
  redis.call('HSET', KEYS[i], 'tokens', tostring(lv[i]), 'ts', tostring(now), 'appt', tostring(at))
  local ttl = math.max((burst - lv[i]) / rate, at - now)
  redis.call('PEXPIRE', KEYS[i], math.ceil(ttl * 1000) + 1000)
end
return {0, math.ceil((at - now) * 1000)}
`)

// TakeAll takes every cost from its bucket, or none of them. Refused, it
// says how long until the caller should try again (see takeAll).
func (l *Limiter) TakeAll(ctx context.Context, costs ...Cost) (bool, time.Duration, error) {
	if len(costs) == 0 {
		return true, 0, nil
	}
	keys := make([]string, len(costs))
	args := make([]any, 0, 3*len(costs))
	for i, c := range costs {
		if err := c.Rule.Valid(); err != nil {
			return false, 0, fmt.Errorf("ratelimit: bucket %s: %w", c.Key, err)
		}
		if !(c.N >= 0) || math.IsInf(c.N, 0) {
			return false, 0, fmt.Errorf("ratelimit: bucket %s: cost must be a non-negative number, got %v", c.Key, c.N)
		}
		keys[i] = l.prefix + c.Key
		args = append(args, c.Rule.Rate, c.Rule.Burst, c.N)
	}
	res, err := takeAll.Run(ctx, l.rdb, keys, args...).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("ratelimit: buckets %v: %w", keys, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("ratelimit: buckets %v: unexpected reply %v", keys, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// adjust adds ARGV[3] tokens (negative: takes them) to the bucket at
// KEYS[1] (rate ARGV[1], burst ARGV[2]), at most to the burst; with
// ARGV[4] >= 0 the bucket then holds at most that many (what the provider
// says is left). A bucket not in Redis is full. Returns the tokens left,
// rounded down.
var adjust = redis.NewScript(`
local rate, burst, delta, ceil = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'appt')
local tokens, ts = tonumber(v[1]), tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate + delta)
if ceil >= 0 then
  tokens = math.min(tokens, ceil)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
local ttl = math.max((burst - tokens) / rate, (tonumber(v[3]) or 0) - now)
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
return math.floor(tokens)
`)

// Adjust adds delta tokens to the bucket named key (a negative delta takes
// them, into debt if need be), up to the burst; ceiling >= 0 then caps
// what the bucket holds (a provider's own count of what is left). It
// returns the tokens left.
func (l *Limiter) Adjust(ctx context.Context, key string, r Rule, delta, ceiling float64) (int64, error) {
	if err := r.Valid(); err != nil {
		return 0, err
	}
	n, err := adjust.Run(ctx, l.rdb, []string{l.prefix + key}, r.Rate, r.Burst, delta, ceiling).Int64()
	if err != nil {
		return 0, fmt.Errorf("ratelimit: bucket %s: %w", key, err)
	}
	return n, nil
}
