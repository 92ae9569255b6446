package e2e_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// Retention removes the text of finished jobs' chunks and results but keeps
// every figure: tokens, cost, statuses, metadata.
func TestRetentionKeepsTheFigures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.Retention = 300 * time.Millisecond
	h.cfg.ReconcileInterval = 100 * time.Millisecond
	h.startWorker()
	ctx := context.Background()
	j := h.enqueue("format=text size=1500 seed=91", client.Request{MaxOutputTokens: 100})
	before := h.wait(j.id, 30*time.Second)
	if before.Status != "succeeded" || before.Tokens.Output == 0 || before.CostUSD == nil {
		t.Fatalf("%+v", before)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.client.Result(ctx, j.id)
		if errors.Is(err, client.ErrPruned) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("result not pruned: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	after, err := h.client.Status(ctx, j.id)
	if err != nil || after.Status != before.Status || after.Tokens != before.Tokens || *after.CostUSD != *before.CostUSD || after.Chunks != before.Chunks {
		t.Fatalf("figures changed by retention: %+v vs %+v (%v)", after, before, err)
	}
	if n := h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid AND (content <> '' OR pruned_at IS NULL)`, j.id); n != 0 {
		t.Fatalf("%d chunks still hold text", n)
	}
	if n := h.count(`SELECT count(*) FROM job_audit WHERE job_id = $1::uuid AND output_tokens > 0 AND cost_usd > 0`, j.id); n != after.Chunks {
		t.Fatalf("the audit lost its figures: %d rows", n)
	}
	if n := h.count(`SELECT count(*) FROM job_results WHERE job_id = $1::uuid AND metadata ? 'total_output_tokens' AND content = ''`, j.id); n != 1 {
		t.Fatal("the result's metadata was not kept")
	}
}
