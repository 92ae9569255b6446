package worker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/testenv"
)

// probeCounter counts the dequeue probes that reach Redis, by queue.
type probeCounter struct {
	sent map[string]*atomic.Int64
}

func (p *probeCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *probeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (p *probeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if key, ok := dequeueProbe(cmd.Args()); ok {
			for q, n := range p.sent {
				if strings.Contains(key, "{"+q+"}") {
					n.Add(1)
				}
			}
		}
		return next(ctx, cmd)
	}
}

// A worker's Redis client answers the dequeue probes of queues it just found
// empty itself: with the work in one of eight queues, every task is still
// processed, the probes of the seven empty ones mostly never reach Redis,
// and the hook recognises asynq's dequeue (it fails here if a new asynq
// dequeues in another shape, which would silently bring the probes back).
func TestEmptyQueuesHook(t *testing.T) {
	ctx := context.Background()
	base := testenv.Queue(t)
	queues := map[string]int{}
	counter := &probeCounter{sent: map[string]*atomic.Int64{}}
	for i := range 8 {
		q := fmt.Sprintf("%s.lane%d", base, i)
		if i == 0 {
			q = base
		}
		queues[q] = 2
		counter.sent[q] = &atomic.Int64{}
	}
	rdb, err := redisconn.Open(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	empty := newEmptyQueues()
	rdb.AddHook(empty)   // outer: answers for the queues found empty
	rdb.AddHook(counter) // inner: sees only what goes to Redis

	const tasks = 400
	cl := asynq.NewClientFromRedisClient(rdb)
	for i := range tasks {
		if _, err := cl.EnqueueContext(ctx, asynq.NewTask("t", []byte(fmt.Sprint(i))), asynq.Queue(base)); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Int64
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 8, Queues: queues, TaskCheckInterval: 50 * time.Millisecond,
		LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("t", func(context.Context, *asynq.Task) error { done.Add(1); return nil })
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for done.Load() < tasks && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Shutdown()
	if n := done.Load(); n != tasks {
		t.Fatalf("%d of %d tasks processed", n, tasks)
	}
	if empty.skipped.Load() == 0 {
		t.Fatal("no dequeue probe was recognised: asynq's dequeue changed shape")
	}
	// Unhooked, each dequeue tries about half the seven empty queues
	// before the busy one: some 1,400 probes for 400 tasks.
	var emptyProbes int64
	for q, n := range counter.sent {
		if q != base {
			emptyProbes += n.Load()
		}
	}
	if emptyProbes > tasks/2 {
		t.Fatalf("%d probes of empty queues reached Redis for %d tasks (%d answered by the hook)", emptyProbes, tasks, empty.skipped.Load())
	}
	t.Logf("%d probes of empty queues reached Redis for %d tasks; %d answered by the hook", emptyProbes, tasks, empty.skipped.Load())
}

// dequeueProbe knows asynq's dequeue by its keys, and nothing else.
func TestDequeueProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []any
		want string
	}{
		{"dequeue", []any{"evalsha", "abc", 4, "asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease", 1, "asynq:{q}:t:"}, "asynq:{q}:pending"},
		{"dequeue by eval", []any{"eval", "src", 4, "asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease", 1, "asynq:{q}:t:"}, "asynq:{q}:pending"},
		{"keys of two queues", []any{"evalsha", "abc", 4, "asynq:{q}:pending", "asynq:{r}:paused", "asynq:{q}:active", "asynq:{q}:lease", 1, "x"}, ""},
		{"another script", []any{"evalsha", "abc", 2, "asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease", 1}, ""},
		{"not a script", []any{"get", "asynq:{q}:pending", 4, "a", "b", "c", "d"}, ""},
		{"short", []any{"evalsha", "abc"}, ""},
	} {
		got, ok := dequeueProbe(tc.args)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s: dequeueProbe = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}
