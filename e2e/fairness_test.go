package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// One tenant's backlog must not delay another tenant's next chunk by more
// than a few task slots. Tenant A queues 300 one-chunk jobs, then tenant B
// one; a worker with two slots starts only then. Counted in tasks, not
// time: how many of A's chunks started before B's. With one chunk queue
// B's chunk waited behind all 300 (FIFO); with a lane per tenant the
// worker picks among the non-empty lanes at random, so B's chunk runs
// within a few picks.
func TestSecurityTenantFairness(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.Concurrency = 2
	ctx := context.Background()
	const tenantA, tenantB, backlog, allowed = "tenant-a", "tenant-b", 300, 30
	for _, tn := range []string{tenantA, tenantB} {
		if _, _, err := h.store.CreateAPIKey(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	req := func(tenant string) client.Request {
		return client.Request{Tenant: tenant, MaxOutputTokens: 400, Continuation: client.Continuation{MaxAttempts: 2}}
	}
	for range backlog {
		h.enqueue("format=text size=200 seed=81", req(tenantA))
	}
	b := h.enqueue("format=text size=200 seed=82", req(tenantB))
	h.startWorker()
	if st := h.wait(b.id, 2*time.Minute); st.Status != "succeeded" {
		t.Fatalf("tenant B's job: %s", st.Status)
	}
	aBeforeChunk := h.count(`SELECT count(*) FROM chunks c JOIN jobs j ON j.id = c.job_id
WHERE j.tenant_id = $1 AND c.call_started_at < (SELECT min(call_started_at) FROM chunks WHERE job_id = $2)`, tenantA, b.id)
	aBeforeEnd := h.count(`SELECT count(*) FROM chunks c JOIN jobs j ON j.id = c.job_id
WHERE j.tenant_id = $1 AND c.call_started_at < (SELECT finished_at FROM jobs WHERE id = $2)`, tenantA, b.id)
	t.Logf("tenant A's chunks started before tenant B's chunk: %d; before B's job ended: %d (of %d queued first)", aBeforeChunk, aBeforeEnd, backlog)
	if aBeforeChunk > allowed {
		t.Fatalf("tenant B's chunk waited for %d of tenant A's chunks (at most %d allowed)", aBeforeChunk, allowed)
	}
}
