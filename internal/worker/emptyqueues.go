package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// emptyQueues spares Redis the probes of queues it just found empty.
//
// asynq's processor takes tasks one at a time, in one loop: each dequeue
// tries the server's queues in a weighted shuffle, one Redis script call per
// queue, until one has a task. A worker serves every chunk lane and the
// merge queue (nine queues by default), so when the work is in one lane —
// one tenant, or a burst of one — a dequeue first tried four empty queues
// on average, and that loop, not the slots, the CPU or Postgres, bounded how
// fast a backlog started: at the start of the in-flight benchmark, the loop
// was inside a dequeue in nearly every sample while two to five of the 32
// slots were busy.
//
// So the worker's Redis client answers a dequeue probe of a queue found
// empty less than emptyFor ago itself, as Redis would have (nil: nothing to
// take), without asking. A task that lands in such a queue waits at most
// emptyFor longer to be taken; asynq's own poll of idle queues already
// waits longer (--poll-interval, 50ms). The dequeue is recognised by its
// shape — a script call with asynq's four keys of one queue (pending,
// paused, active, lease) — and TestEmptyQueuesHook fails if a new asynq
// dequeues in another.
type emptyQueues struct {
	mu      sync.Mutex
	until   map[string]time.Time // by pending key: probes answered here until then
	skipped atomic.Int64
}

// emptyFor is how long a queue found empty is not probed again.
const emptyFor = 10 * time.Millisecond

func newEmptyQueues() *emptyQueues {
	return &emptyQueues{until: map[string]time.Time{}}
}

func (e *emptyQueues) DialHook(next redis.DialHook) redis.DialHook { return next }

func (e *emptyQueues) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (e *emptyQueues) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		key, ok := dequeueProbe(cmd.Args())
		if !ok {
			return next(ctx, cmd)
		}
		now := time.Now()
		e.mu.Lock()
		skip := now.Before(e.until[key])
		e.mu.Unlock()
		if skip {
			e.skipped.Add(1)
			cmd.SetErr(redis.Nil)
			return redis.Nil
		}
		err := next(ctx, cmd)
		e.mu.Lock()
		if err == redis.Nil {
			e.until[key] = now.Add(emptyFor)
		} else {
			delete(e.until, key)
		}
		e.mu.Unlock()
		return err
	}
}

// dequeueProbe reports whether args are asynq's dequeue of one queue — a
// script call (EVALSHA, or EVAL when Redis lost the script) with the keys
// asynq:{q}:pending, :paused, :active and :lease — and returns its pending
// key.
func dequeueProbe(args []any) (string, bool) {
	if len(args) < 7 {
		return "", false
	}
	if name, _ := args[0].(string); name != "evalsha" && name != "eval" {
		return "", false
	}
	if n, ok := args[2].(int); !ok || n != 4 {
		return "", false
	}
	pending, _ := args[3].(string)
	base, ok := strings.CutSuffix(pending, ":pending")
	if !ok {
		return "", false
	}
	for i, suffix := range []string{":paused", ":active", ":lease"} {
		if k, _ := args[4+i].(string); k != base+suffix {
			return "", false
		}
	}
	return pending, true
}
