package throttle

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Learned limits are shared through Redis: a limit one worker process
// learns from a reply's headers, every other process uses from its next
// call on, instead of calling unpaced until a reply of its own teaches it.
// Each process keeps what it read for lookupTTL, so the steady state costs
// no Redis round trip a call more than the buckets do.
const (
	// lookupTTL is how long a process uses limits it read from Redis
	// before it reads them again.
	lookupTTL = 5 * time.Second
	// unknownTTL is how long a process calls unpaced, nothing learned in
	// Redis, before it looks again.
	unknownTTL = time.Second
	// storeEvery is how often at most a process rewrites a limit its
	// replies keep stating, which keeps the Redis key from expiring
	// (learnedTTL) while the provider is used.
	storeEvery = time.Minute
	// probeWindow is how long a cold fleet — no limit known for a (base
	// URL, model), nor that its provider states none — lets only one call
	// go, waiting for its reply to teach the limit. Calls past the window
	// go unpaced, as without headers: a slow first reply does not stall
	// the fleet for longer.
	probeWindow = 2 * time.Second
	// probePoll is how often a call waiting for the probe's reply looks
	// in Redis for what it taught.
	probePoll = 50 * time.Millisecond
)

// lookup reads the limits learned for a (base URL, model) (KEYS[1]: "rpm
// tpm"; "0 0" is a provider that states none). Nothing learned and ARGV[1]
// = 1, the caller may become the probe (KEYS[2] holds the end of the probe
// window, in Redis's milliseconds, for ARGV[3] ms: once it has passed,
// calls go unpaced until a reply teaches, and no second probe is made
// meanwhile). Returns {1, limits} when learned; {2, ""} when the caller is
// the probe; {3, ms} while another call's probe is out; {0, ""} otherwise.
var lookup = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  return {1, v}
end
if ARGV[1] ~= '1' then
  return {0, ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local p = redis.call('GET', KEYS[2])
if not p then
  redis.call('SET', KEYS[2], tostring(now + tonumber(ARGV[2])), 'PX', ARGV[3])
  return {2, ''}
end
p = tonumber(p) or 0
if p > now then
  return {3, tostring(p - now)}
end
return {0, ''}
`)

// store keeps learned limits (ARGV[1], "rpm tpm") at KEYS[1] for ARGV[2] ms
// and ends the probe (KEYS[2]). ARGV[3] = 1 is a reply that stated no
// limits ("0 0"): it is kept only over nothing or another "0 0", never over
// limits a reply did state. Returns what KEYS[1] then holds.
var store = redis.NewScript(`
if ARGV[3] == '1' then
  local v = redis.call('GET', KEYS[1])
  if v and v ~= ARGV[1] then
    redis.call('DEL', KEYS[2])
    return v
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
return ARGV[1]
`)

// sharedKeys are the Redis keys of a model's learned limits and probe, in
// the buckets' hash tag (one Redis Cluster slot).
func (t *Throttle) sharedKeys(model string) []string {
	return []string{t.cfg.Prefix + "throttle:" + t.key("learned", model), t.cfg.Prefix + "throttle:" + t.key("probe", model)}
}

func encodeLimits(l Limits) string { return strconv.Itoa(l.RPM) + " " + strconv.Itoa(l.TPM) }

func decodeLimits(s string) (Limits, error) {
	r, tk, ok := strings.Cut(s, " ")
	rpm, err1 := strconv.Atoi(r)
	tpm, err2 := strconv.Atoi(tk)
	if !ok || err1 != nil || err2 != nil || rpm < 0 || tpm < 0 {
		return Limits{}, fmt.Errorf("learned limits %q: not two counts", s)
	}
	return Limits{RPM: rpm, TPM: tpm}, nil
}

// shared is model's learned limits as this process knows them — from
// memory, else from Redis. With probe (nothing of the operator's either)
// and nothing learned anywhere, the first call of the fleet goes alone:
// the others wait in their slot for its reply, at most until the probe
// window ends (a bounded wait at a cold start, not the throttle's
// re-scheduling: nothing is known to re-schedule by).
func (t *Throttle) shared(ctx context.Context, model string, probe bool) (Limits, error) {
	keys := t.sharedKeys(model)
	flag := "0"
	if probe {
		flag = "1"
	}
	for {
		if l, ok := t.memory(model); ok {
			return l, nil
		}
		res, err := lookup.Run(ctx, t.rdb, keys, flag, probeWindow.Milliseconds(), learnedTTL.Milliseconds()).Slice()
		if err != nil {
			return Limits{}, fmt.Errorf("learned limits: %w", err)
		}
		if len(res) != 2 {
			return Limits{}, fmt.Errorf("learned limits: unexpected reply %v", res)
		}
		state, _ := res[0].(int64)
		val, _ := res[1].(string)
		switch state {
		case 1:
			l, err := decodeLimits(val)
			if err != nil {
				return Limits{}, err
			}
			t.cache(model, l, lookupTTL, false)
			return l, nil
		case 2: // this call is the probe
			return Limits{}, nil
		case 3:
			ms, _ := strconv.Atoi(val)
			wait := min(time.Duration(ms)*time.Millisecond, probePoll)
			select {
			case <-ctx.Done():
				return Limits{}, ctx.Err()
			case <-time.After(wait):
			}
		default:
			t.cache(model, Limits{}, unknownTTL, false)
			return Limits{}, nil
		}
	}
}

// stateless is a model call's reply that stated no limits: a provider
// that sends none. Unless a limit is known, every process learns that
// there is none (calls go unpaced, as without the throttle) and the probe
// ends.
func (t *Throttle) stateless(ctx context.Context, model string) error {
	if !t.cfg.Learn {
		return nil
	}
	now := time.Now()
	t.mu.Lock()
	ln, ok := t.learned[model]
	t.mu.Unlock()
	if ok && now.Before(ln.until) && (ln.Limits != (Limits{}) || now.Sub(ln.stored) < lookupTTL) {
		return nil
	}
	v, err := store.Run(ctx, t.rdb, t.sharedKeys(model), encodeLimits(Limits{}), learnedTTL.Milliseconds(), "1").Text()
	if err != nil {
		return fmt.Errorf("learned limits: %w", err)
	}
	l, err := decodeLimits(v)
	if err != nil {
		return err
	}
	t.cache(model, l, lookupTTL, true)
	return nil
}

// share writes limits learned from a reply to Redis, for every process.
func (t *Throttle) share(ctx context.Context, model string, l Limits) error {
	if err := store.Run(ctx, t.rdb, t.sharedKeys(model), encodeLimits(l), learnedTTL.Milliseconds(), "0").Err(); err != nil {
		return fmt.Errorf("learned limits: %w", err)
	}
	return nil
}
