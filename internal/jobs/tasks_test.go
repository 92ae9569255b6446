package jobs

import (
	"errors"
	"testing"
	"time"
)

// A failed webhook is retried for about a day (the README's promise), the
// first retries soon enough for a receiver's passing failure, the later ones
// no more often than every couple of hours.
func TestWebhookRetrySchedule(t *testing.T) {
	t.Parallel()
	var plain, low, high time.Duration
	for n := range WebhookMaxRetry {
		d := webhookBackoff(n)
		plain += d
		for range 50 { // the jitter stays within ±10%
			j := WebhookRetryDelay(n, errors.New("receiver answered 500"), nil)
			if j < d*9/10 || j > d*11/10 {
				t.Fatalf("retry %d: %s, %s without jitter", n, j, d)
			}
		}
		low += d * 9 / 10
		high += d * 11 / 10
	}
	if plain < 22*time.Hour || plain > 26*time.Hour {
		t.Fatalf("the retries span %s, want about a day", plain)
	}
	if low < 20*time.Hour || high > 28*time.Hour {
		t.Fatalf("with jitter the retries span %s to %s", low, high)
	}
	if first := webhookBackoff(0); first > 5*time.Second {
		t.Fatalf("the first retry waits %s", first)
	}
	if last := webhookBackoff(WebhookMaxRetry - 1); last > 2*time.Hour {
		t.Fatalf("the last retry waits %s", last)
	}
	t.Logf("%d retries over %s", WebhookMaxRetry, plain)
}
