package breaker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the breaker.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBreaker(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	b := New(Config{Threshold: 3, Cooldown: time.Minute, MaxCooldown: 3 * time.Minute, Now: c.now})
	const ep, other = "https://tarpit.example:443", "https://fine.example:443"
	mustAllow := func(step string) {
		t.Helper()
		if err := b.Allow(ep); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	mustRefuse := func(step string) {
		t.Helper()
		var oe *OpenError
		if err := b.Allow(ep); !errors.As(err, &oe) || !strings.Contains(err.Error(), "circuit open for "+ep) {
			t.Fatalf("%s: %v, want the circuit open", step, err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"two failures keep it closed", func() { b.Failure(ep); b.Failure(ep); mustAllow("after 2") }},
		{"a success resets the count", func() { b.Success(ep); b.Failure(ep); b.Failure(ep); mustAllow("after reset") }},
		{"the third failure in a row opens it", func() { b.Failure(ep); mustRefuse("after 3") }},
		{"other endpoints are not affected", func() {
			if err := b.Allow(other); err != nil {
				t.Fatal(err)
			}
		}},
		{"late failures of deliveries already under way do not lengthen it", func() {
			b.Failure(ep)
			c.t = c.t.Add(time.Minute - time.Second)
			mustRefuse("just before the cool-down ends")
		}},
		{"after the cool-down one probe goes, the rest wait", func() {
			c.t = c.t.Add(time.Second)
			mustAllow("probe")
			mustRefuse("while the probe runs")
		}},
		{"a failed probe opens it for twice as long", func() {
			b.Failure(ep)
			c.t = c.t.Add(2*time.Minute - time.Second)
			mustRefuse("before 2 minutes")
			c.t = c.t.Add(time.Second)
			mustAllow("second probe")
		}},
		{"the cool-down stops growing at the cap", func() {
			b.Failure(ep) // 3 minutes (4 capped)
			c.t = c.t.Add(3 * time.Minute)
			mustAllow("third probe")
			b.Failure(ep) // still 3 minutes
			c.t = c.t.Add(3*time.Minute - time.Second)
			mustRefuse("before 3 minutes")
			c.t = c.t.Add(time.Second)
			mustAllow("fourth probe")
		}},
		{"a successful probe closes it", func() {
			b.Success(ep)
			mustAllow("closed")
			b.Failure(ep)
			mustAllow("one failure after closing")
		}},
	}
	for _, s := range steps {
		s.do()
	}
}

// Endpoints beyond MaxEndpoints push out the closed ones, never an open
// circuit.
func TestBreakerForgets(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	b := New(Config{Threshold: 1, MaxEndpoints: 2, Now: c.now})
	b.Failure("open")
	b2 := New(Config{Threshold: 2, MaxEndpoints: 2, Now: c.now})
	for _, ep := range []string{"a", "b", "c", "d"} {
		b2.Failure(ep)
	}
	if n := len(b2.endpoints); n > 2 {
		t.Fatalf("%d endpoints remembered", n)
	}
	b.Failure("x")
	b.Failure("y")
	if b.Allow("open") == nil {
		t.Fatal("an open circuit was forgotten")
	}
}
