package jobs

import (
	"fmt"
	"testing"
	"time"
)

// The next poll comes just after the end the estimate expects; with no
// estimate, or once it has passed, each wait is as long as the call has
// taken so far (polls at a growing ratio), between firstPoll and maxPollGap.
func TestNextPoll(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name         string
		elapsed, est time.Duration
		known, pilot bool
		want         time.Duration
	}{
		{"no estimate, just created", 0, 0, false, false, firstPoll},
		{"no estimate, after 3s", 3 * s, 0, false, false, 3 * s},
		{"no estimate, after 16s", 16 * s, 0, false, false, coldGap},
		{"no estimate, after 60s", 60 * s, 0, false, false, 15 * s},
		{"no estimate, long call", 10 * time.Minute, 0, false, false, maxPollGap},
		{"pilot, just created", 0, 0, false, true, firstPoll},
		{"pilot, after 3s", 3 * s, 0, false, true, pilotGap},
		{"pilot, after 32s", 32 * s, 0, false, true, 2 * s},
		{"pilot, long call", 10 * time.Minute, 0, false, true, maxPollGap},
		{"estimate ahead", 5 * s, 20 * s, true, false, 15*s + 400*time.Millisecond},               // a 2% margin of 20s
		{"estimate ahead, small", 0, 400 * time.Millisecond, true, false, 500 * time.Millisecond}, // 100ms floor on the margin
		{"estimate passed", 24 * s, 20 * s, true, false, 6 * s},
		{"estimate passed long ago", 10 * time.Minute, 20 * s, true, false, maxPollGap},
	} {
		if got := nextPoll(tc.elapsed, tc.est, tc.known, tc.pilot); got != tc.want {
			t.Errorf("%s: nextPoll(%s, %s, %v, %v) = %s, want %s", tc.name, tc.elapsed, tc.est, tc.known, tc.pilot, got, tc.want)
		}
	}
}

// The latency book keeps an estimate per model and budget that follows the
// calls it is told of, a quarter of the way to each new one.
func TestLatencyBook(t *testing.T) {
	b := newLatencyBook()
	if _, ok := b.estimate("m", 100); ok {
		t.Fatal("an estimate before any call")
	}
	b.observe("m", 100, 20*time.Second)
	b.observe("m", 100, 24*time.Second)
	if d, ok := b.estimate("m", 100); !ok || d != 21*time.Second {
		t.Fatalf("estimate %s, %v; want 21s", d, ok)
	}
	if _, ok := b.estimate("m", 200); ok {
		t.Fatal("another budget shares the estimate")
	}
	if _, ok := b.estimate("other", 100); ok {
		t.Fatal("another model shares the estimate")
	}
	// Postgres is asked once a minute at most for a key with no estimate,
	// and its answer never overrides a call seen meanwhile.
	if !b.ask("other", 100) || b.ask("other", 100) {
		t.Fatal("ask should say yes once, then no within the minute")
	}
	b.seed("other", 100, 30*time.Second)
	b.seed("m", 100, time.Hour)
	if d, _ := b.estimate("other", 100); d != 30*time.Second {
		t.Fatalf("seeded estimate %s, want 30s", d)
	}
	if d, _ := b.estimate("m", 100); d != 21*time.Second {
		t.Fatalf("a seed replaced the estimate of calls seen: %s", d)
	}
}

// The first pilotsPerKey calls of a key with no estimate are its pilots,
// each for as long as it is polled; a pilot gone quiet gives its place up,
// and once the key has an estimate there are none.
func TestLatencyBookPilots(t *testing.T) {
	b := newLatencyBook()
	for i := range pilotsPerKey {
		if !b.pilot("m", 100, fmt.Sprint("resp_", i)) {
			t.Fatalf("call %d is not a pilot", i)
		}
	}
	if b.pilot("m", 100, "resp_late") {
		t.Fatal("one pilot too many")
	}
	if !b.pilot("m", 100, "resp_0") {
		t.Fatal("a pilot stopped being one on its next poll")
	}
	if !b.pilot("m", 200, "resp_late") || !b.pilot("other", 100, "resp_other") {
		t.Fatal("another key has no pilots of its own")
	}
	if b.pilot("m", 100, "") {
		t.Fatal("a call not made yet is a pilot")
	}
	// A pilot not polled for pilotIdle gives its place up.
	b.mu.Lock()
	b.pilots[latencyKey{"m", 100}]["resp_1"] = time.Now().Add(-pilotIdle - time.Second)
	b.mu.Unlock()
	if !b.pilot("m", 100, "resp_late") {
		t.Fatal("a quiet pilot kept its place")
	}
	b.observe("m", 100, 20*time.Second)
	if b.pilot("m", 100, "resp_0") {
		t.Fatal("a pilot once the key has an estimate")
	}
	if _, ok := b.pilots[latencyKey{"m", 100}]; ok {
		t.Fatal("the pilots of a key with an estimate are still kept")
	}
	b.pilot("other", 100, "resp_other")
	b.seed("other", 100, 30*time.Second)
	if _, ok := b.pilots[latencyKey{"other", 100}]; ok {
		t.Fatal("the pilots of a key seeded from Postgres are still kept")
	}
}
