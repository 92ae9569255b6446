package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/ratelimit"
	"github.com/carryover/carryover/internal/testenv"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {59500 * time.Millisecond, "60"}} {
		if got := ratelimit.RetryAfter(c.d); got != c.want {
			t.Errorf("RetryAfter(%s) = %s, want %s", c.d, got, c.want)
		}
	}
}

// A bucket gives its burst, refuses the next with the wait for one token,
// refills at its rate, and Check never takes a token.
func TestBucket(t *testing.T) {
	t.Parallel()
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	prefix := testenv.RandomName("test:bucket:") + ":"
	defer rdb.Del(context.Background(), prefix+"k")
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	// A token every 250ms: slow enough that no pause of a loaded machine
	// between the takes refills one (at 50ms, one did).
	rule := ratelimit.Rule{Rate: 4, Burst: 3}
	for i := range 5 {
		if ok, _, err := l.Check(ctx, "k", rule); !ok || err != nil {
			t.Fatalf("check %d took a token: %v %v", i, ok, err)
		}
	}
	for i := range rule.Burst {
		if ok, _, err := l.Take(ctx, "k", rule); !ok || err != nil {
			t.Fatalf("take %d within the burst: %v %v", i, ok, err)
		}
	}
	ok, wait, err := l.Take(ctx, "k", rule)
	if ok || err != nil || wait <= 0 || wait > 250*time.Millisecond {
		t.Fatalf("past the burst: ok=%v wait=%s err=%v", ok, wait, err)
	}
	time.Sleep(wait + 20*time.Millisecond)
	if ok, _, err := l.Take(ctx, "k", rule); !ok || err != nil {
		t.Fatalf("after the wait: %v %v", ok, err)
	}
	if _, _, err := l.Take(ctx, "k", ratelimit.Rule{Rate: 0, Burst: 1}); err == nil {
		t.Fatal("a zero rate was applied")
	}
}
