package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/store"
)

// A background call committed by one delivery is what the next claim of the
// chunk reads — the call to resume — until it is closed; an attempt recorded
// for it is recorded once however often it is reported, and closes it in
// the same statement; a stored chunk makes the call no longer in flight.
func TestBackgroundCallLifecycle(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := s.Pool().QueryRow(ctx, sql, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	c := claimAs(t, s, id, 0, store.Claimed)
	if c.Background != nil {
		t.Fatalf("a new chunk has a background call: %+v", c.Background)
	}
	created := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	if err := c.StartBackground(ctx, store.BackgroundCall{ResponseID: "resp_a", TaskID: "task", Attempt: 2, MaxOutputTokens: 128, Created: created}); err != nil {
		t.Fatal(err)
	}
	s.PolledBackground("resp_a", store.BackgroundInProgress)
	c.Release()
	for deadline := time.Now().Add(5 * time.Second); count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid AND polls = 1`) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the poll was never written")
		}
		time.Sleep(20 * time.Millisecond)
	}

	c = claimAs(t, s, id, 0, store.Claimed)
	want := store.BackgroundCall{ResponseID: "resp_a", TaskID: "task", Attempt: 2, MaxOutputTokens: 128, Created: created, Polls: 1}
	if c.Background == nil || *c.Background != want {
		t.Fatalf("claim read background call %+v, want %+v", c.Background, want)
	}
	var counts map[string]int64
	var err error
	if counts, err = s.BackgroundCounts(ctx); err != nil || counts[store.BackgroundInProgress] < 1 {
		t.Fatalf("in flight by status: %v, %v", counts, err)
	}
	// Its budget was spent on reasoning: recorded (twice, as a delivery
	// that died after recording it would) and replaced.
	for range 2 {
		if err := c.RecordAttempt(ctx, store.CallFailure{TaskID: "task", Attempt: 2, ResponseID: "resp_a", ErrorType: "reasoning_exhausted",
			Error: "spent", Started: created, CloseBackground: store.BackgroundReplaced}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND response_id = 'resp_a'`); n != 1 {
		t.Fatalf("the attempt was recorded %d times", n)
	}
	if n := count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid AND status = 'replaced' AND closed_at IS NOT NULL`); n != 1 {
		t.Fatal("the replaced call is not closed")
	}
	if err := c.StartBackground(ctx, store.BackgroundCall{ResponseID: "resp_b", TaskID: "task", Attempt: 2, MaxOutputTokens: 256, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c.Release()
	c = claimAs(t, s, id, 0, store.Claimed)
	if c.Background == nil || c.Background.ResponseID != "resp_b" || c.Background.MaxOutputTokens != 256 {
		t.Fatalf("claim read %+v, want the replacement resp_b", c.Background)
	}
	if _, ok, err := s.RecentLatency(ctx, "gpt-4.1-mini", 256); err != nil || ok {
		t.Fatalf("a latency before any call became a chunk: %v, %v", ok, err)
	}
	n := chunk("x", false)
	n.ResponseID, n.Latency = "resp_b", 1500*time.Millisecond
	if _, err := c.Save(ctx, n); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := s.RecentLatency(ctx, "gpt-4.1-mini", 256); err != nil || !ok || d != 1500*time.Millisecond {
		t.Fatalf("recent latency %s, %v, %v; want 1.5s", d, ok, err)
	}
	if _, ok, err := s.RecentLatency(ctx, "another-model", 256); err != nil || ok {
		t.Fatalf("another model's calls answered: %v, %v", ok, err)
	}
	if n := count(`SELECT count(*) FROM background_in_flight WHERE job_id = $1::uuid`); n != 0 {
		t.Fatalf("%d calls still in flight after the chunk was stored", n)
	}
	// Deleting the job deletes its background calls.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM jobs WHERE id = $1::uuid`, id); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid`); n != 0 {
		t.Fatalf("%d background calls left after the job was deleted", n)
	}
}
