package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
)

// Cancel during a model call: the call is aborted, no model call starts
// after it, the stored chunk is kept, and a remerge turns it into a partial
// result.
func TestCancelDuringCallThenRemerge(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	ctx := context.Background()
	j := h.enqueue("format=text size=3000 seed=41 faults=slow@1:20s", client.Request{MaxOutputTokens: 100})
	// Wait until chunk 0 is stored and the (slow) call for chunk 1 is in flight.
	deadline := time.Now().Add(20 * time.Second)
	for h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid`, j.id) < 1 ||
		h.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 25455 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call for chunk 1 never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cancelledAt := time.Now()
	st, err := h.client.Cancel(ctx, j.id)
	if err != nil || st.Status != "cancelled" || st.StopReason != "user_requested" {
		t.Fatalf("%+v %v", st, err)
	}
	// The aborted call is on record, well before the slow reply would have come.
	for h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND seq = 1 AND error_type = 'cancelled'`, j.id) != 1 {
		if time.Since(cancelledAt) > 10*time.Second {
			t.Fatal("the call in flight was not aborted by the cancel")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("call aborted %s after the cancel", time.Since(cancelledAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // a retry, if there were one, would call now
	calls := h.sim.Calls(j.tag)
	if len(calls) != 2 || calls[1].Depth != 1 || calls[1].Outcome != "canceled" {
		t.Fatalf("model calls after the cancel: %+v", calls)
	}
	if n := h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid`, j.id); n != 1 {
		t.Fatalf("%d chunks kept, want 1", n)
	}
	if _, err := h.client.Result(ctx, j.id); err == nil {
		t.Fatal("a cancelled job has no result until it is merged on request")
	}
	// Merge on request.
	if _, err := h.client.Remerge(ctx, j.id); err != nil {
		t.Fatal(err)
	}
	st = h.wait(j.id, 30*time.Second)
	res, err := h.client.Result(ctx, j.id)
	if err != nil || st.Status != "partial" || res.Content == "" || !strings.HasPrefix(j.doc, res.Content) {
		t.Fatalf("remerge: status %s err %v, result is a prefix: %v", st.Status, err, strings.HasPrefix(j.doc, res.Content))
	}
	var meta jobs.Metadata
	if err := json.Unmarshal(res.Metadata, &meta); err != nil || meta.StopReason != "user_requested" || meta.ChunkCount != 1 {
		t.Fatalf("metadata: %+v %v", meta, err)
	}
	// Remerging a job still generating is refused.
	live := h.enqueue("format=text size=3000 seed=42 faults=slow@0:5s", client.Request{})
	if _, err := h.client.Remerge(ctx, live.id); err == nil {
		t.Fatal("remerge of a live job accepted")
	}
}
