package e2e_test

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/testenv"
)

// startProcess runs the worker binary against the harness's services, with
// env added to its environment.
func (h *harness) startProcess(bin string, env ...string) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(bin, "--log-level", "info")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+h.cfg.DatabaseURL, "REDIS_URL="+h.cfg.RedisURL,
		"OPENAI_API_KEY="+h.cfg.OpenAIAPIKey, "OPENAI_BASE_URL="+h.cfg.OpenAIBaseURL,
		"CARRYOVER_QUEUE="+h.cfg.ChunkQueue, "WORKER_CONCURRENCY=4",
		"CARRYOVER_RECONCILE_INTERVAL=500ms", "CARRYOVER_STALE_AFTER=2s",
	)
	cmd.Env = append(cmd.Env, env...)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return cmd
}

// A worker killed with SIGKILL in the middle of a synchronous model call (a
// chat-completions provider, or background mode off) is replaced, and the
// job still finishes with every chunk exactly once; the call the dead worker
// paid for stays on record as lost, and is paid for again.
func TestWorkerKilledMidJobIsReplaced(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and kills a worker process")
	}
	h := newHarness(t)
	bin := testenv.BuildWorker(t)
	j := h.enqueue("format=csv size=4000 seed=11 faults=slow@2:20s", client.Request{Format: "csv"})
	ctx := context.Background()
	first := h.startProcess(bin, "CARRYOVER_BACKGROUND=false")
	// Wait until the worker is inside the (slow) call for chunk 2: chunks 0
	// and 1 are stored and a session holds this job's advisory lock (class
	// "co", the job id's first four bytes; other tests' jobs share the
	// database).
	deadline := time.Now().Add(30 * time.Second)
	id := uuid.MustParse(j.id)
	key := int64(binary.BigEndian.Uint32(id[:4]))
	for h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid`, j.id) < 2 ||
		h.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 25455 AND objid::bigint = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, key) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("worker never started chunk 2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the call itself has begun
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.Process.Wait()
	killedAt := time.Now()
	h.startProcess(bin, "CARRYOVER_BACKGROUND=false")
	st := h.wait(j.id, 60*time.Second)
	t.Logf("job finished %s after the kill", time.Since(killedAt).Round(time.Millisecond))
	if st.Status != "succeeded" {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	res, err := h.client.Result(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != j.doc {
		t.Fatalf("document differs after the crash (first difference at %d)", firstDiff(res.Content, j.doc))
	}
	// Every chunk once (the primary key guarantees at most once; count and
	// sequence prove exactly once), every chunk produced by exactly one
	// successful call, and the dead worker's call recorded as lost.
	if n := h.count(`SELECT count(DISTINCT seq) FROM chunks WHERE job_id = $1::uuid`, j.id); n != st.Chunks {
		t.Fatalf("%d distinct chunks, status says %d", n, st.Chunks)
	}
	if n := h.count(`SELECT max(seq) + 1 FROM chunks WHERE job_id = $1::uuid`, j.id); n != st.Chunks {
		t.Fatalf("chunk sequence has gaps: max seq + 1 = %d for %d chunks", n, st.Chunks)
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'succeeded'`, j.id); n != st.Chunks {
		t.Fatalf("%d successful calls for %d chunks", n, st.Chunks)
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND seq = 2 AND status = 'lost'`, j.id); n != 1 {
		t.Fatalf("the killed call should be recorded as lost once, found %d", n)
	}
	depth2 := 0
	for _, c := range h.sim.Calls(j.tag) {
		if c.Depth == 2 {
			depth2++
		}
	}
	if depth2 != 2 {
		t.Fatalf("chunk 2 was requested %d times; want 2 (the killed call and its one retry)", depth2)
	}
}
