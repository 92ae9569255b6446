package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// A chunk the provider throttle holds back is re-scheduled, not held in
// its slot: on a worker with one slot, a job on a throttled model waits
// for its next call while a job on another model runs to the end in that
// slot. A throttle that waited in the slot would finish the throttled
// chunk first.
func TestThrottleWaitFreesSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.Concurrency = 1
	// gpt-4o: 6 requests a minute, a bucket of one — a call every 10 s.
	h.cfg.ProviderRPM = "0,gpt-4o=6"
	h.startWorker()
	slow := h.enqueue("format=text size=3000 seed=61", client.Request{Model: "gpt-4o"})
	chunks := func(id string) int { return h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid`, id) }
	deadline := time.Now().Add(20 * time.Second)
	for chunks(slow.id) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the throttled job's first chunk was never stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fast := h.enqueue("format=text size=3000 seed=62", client.Request{Model: "gpt-4.1-mini"})
	st := h.wait(fast.id, 20*time.Second)
	if st.Status != "succeeded" || st.Chunks < 3 {
		t.Fatalf("the unthrottled job: %+v", st)
	}
	if n := chunks(slow.id); n != 1 {
		t.Fatalf("the throttled job has %d chunks when the other finished: its wait held the only slot", n)
	}
	// The held-back chunk still runs once the throttle allows.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for chunks(slow.id) < 2 {
		if ctx.Err() != nil {
			t.Fatal("the throttled chunk never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A wait is neither a failed call nor a lost one in the audit.
	if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid`, slow.id); n != 0 {
		t.Fatalf("%d call_failures rows for a job whose calls only waited for the throttle", n)
	}
}
