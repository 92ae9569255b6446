package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
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
	t.Parallel()
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

// A job stopped by a limit resumes with raised limits from its last stored
// response — not from scratch — and ends with the exact document.
func TestResumeWithRaisedLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	ctx := context.Background()
	j := h.enqueue("format=csv size=3000 seed=51", client.Request{Format: "csv", MaxOutputTokens: 100,
		Continuation: client.Continuation{MaxAttempts: 2}})
	st := h.wait(j.id, 30*time.Second)
	if st.Status != "partial" || st.StopReason != "steps_limit_reached" || st.Chunks != 2 {
		t.Fatalf("before the resume: %s %s %d", st.Status, st.StopReason, st.Chunks)
	}
	_, err := h.client.Resume(ctx, j.id, client.ResumeOptions{MaxAttempts: 2})
	var ve *client.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "max_attempts" {
		t.Fatalf("a limit not above the stored chunks must be refused naming the field, got %v", err)
	}
	if _, err := h.client.Resume(ctx, j.id, client.ResumeOptions{MaxAttempts: 50}); err != nil {
		t.Fatal(err)
	}
	st = h.wait(j.id, 30*time.Second)
	res, err := h.client.Result(ctx, j.id)
	if err != nil || st.Status != "succeeded" || st.StopReason != "completed" || res.Content != j.doc {
		t.Fatalf("after the resume: %s %s, document equal %v (%v)", st.Status, st.StopReason, res.Content == j.doc, err)
	}
	// Chunk 2 continued from chunk 1's response; no chunk was made twice.
	if n := h.count(`SELECT count(*) FROM llm_calls a JOIN llm_calls b ON b.job_id = a.job_id AND b.seq = 2
		WHERE a.job_id = $1::uuid AND a.seq = 1 AND b.previous_response_id = a.response_id`, j.id); n != 1 {
		t.Fatal("the resumed chunk did not continue from the last stored response")
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid`, j.id); n != st.Chunks || len(h.sim.Calls(j.tag)) != st.Chunks {
		t.Fatalf("%d calls for %d chunks", n, st.Chunks)
	}
	if _, err := h.client.Resume(ctx, j.id, client.ResumeOptions{MaxAttempts: 50}); !errors.Is(err, jobs.ErrNotResumable) {
		t.Fatalf("resuming a completed job: %v", err)
	}
}

// A job stopped by its error policy resumes under a new policy from the
// chunk that failed; the failed attempt stays on record.
func TestResumeWithANewErrorPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	h.startWorker()
	stop, err := client.ParseErrorPolicy("stop_on_any_error")
	if err != nil {
		t.Fatal(err)
	}
	j := h.enqueue("format=csv size=1500 seed=91 faults=500@2", client.Request{Format: "csv", MaxOutputTokens: 100,
		Continuation: client.Continuation{ErrorPolicy: &stop}})
	st := h.wait(j.id, 30*time.Second)
	if st.Status != "partial" || st.StopReason != "error_forbade" || st.Chunks != 2 {
		t.Fatalf("before the resume: %s %s after %d chunks", st.Status, st.StopReason, st.Chunks)
	}
	policy, err := client.ParseErrorPolicy("retry_all(2)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Resume(ctx, j.id, client.ResumeOptions{ErrorPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	st = h.wait(j.id, 30*time.Second)
	res, err := h.client.Result(ctx, j.id)
	if err != nil || st.Status != "succeeded" || res.Content != j.doc {
		t.Fatalf("after the resume: %s %s, document equal %v (%v)", st.Status, st.StopReason, res.Content == j.doc, err)
	}
	if n := h.count(`SELECT count(*) FROM call_failures WHERE job_id = $1::uuid AND seq = 2 AND error_type = 'model'`, j.id); n != 1 {
		t.Fatalf("%d failed attempts at chunk 2 on record, want the one before the resume", n)
	}
}
