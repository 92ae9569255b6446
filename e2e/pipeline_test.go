package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
)

// Every format goes simulator → worker → merge and comes back byte for byte.
func TestEveryFormatReproducesTheDocument(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	cases := []struct{ simFormat, jobFormat string }{
		{"csv", "csv"}, {"json", "json"}, {"jsonl", "jsonl"}, {"markdown", "markdown"},
		{"code", "code"}, {"diff", "diff"}, {"text", "text"}, {"csv", "auto"}, {"diff", "auto"},
	}
	type started struct {
		name string
		job
	}
	var all []started
	for i, c := range cases {
		j := h.enqueue(fmt.Sprintf("format=%s size=5000 seed=%d", c.simFormat, i+1), client.Request{Format: c.jobFormat})
		all = append(all, started{c.simFormat + "->" + c.jobFormat, j})
	}
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			st := h.wait(s.id, 60*time.Second)
			if st.Status != "succeeded" || st.StopReason != "completed" {
				t.Fatalf("status %s stop_reason %s error %q", st.Status, st.StopReason, st.Error)
			}
			res, err := h.client.Result(context.Background(), s.id)
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != s.doc {
				t.Fatalf("merged document differs from the simulator's (%d vs %d bytes)\nfirst difference at byte %d",
					len(res.Content), len(s.doc), firstDiff(res.Content, s.doc))
			}
			if st.Chunks < 4 {
				t.Fatalf("want a job that needed continuing (>= 4 chunks), got %d", st.Chunks)
			}
			calls := h.sim.Calls(s.tag)
			if len(calls) != st.Chunks {
				t.Fatalf("simulator saw %d calls for %d chunks", len(calls), st.Chunks)
			}
			var meta jobs.Metadata
			if err := json.Unmarshal(res.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
			if !meta.WasContinued || meta.ContinuationCount != st.Chunks-1 || len(meta.ChunkSizes) != st.Chunks ||
				len(meta.FinishReasons) != st.Chunks || meta.FinishReasons[st.Chunks-1] != "stop" || meta.FinishReasons[0] != "length" {
				t.Fatalf("metadata does not describe the chunks: %+v", meta)
			}
			// Each chunk's decision: continue on length, stop on the last.
			last := jobs.ChunkDecisionNote{Seq: st.Chunks - 1, ResolvedBy: "finish_reason", StopReason: "completed"}
			if len(meta.Decisions) != st.Chunks || meta.Decisions[st.Chunks-1] != last ||
				meta.Decisions[0] != (jobs.ChunkDecisionNote{Seq: 0, ShouldContinue: true, ResolvedBy: "finish_reason"}) {
				t.Fatalf("decisions in the metadata: %+v", meta.Decisions)
			}
			var outTokens int64
			for _, c := range calls {
				outTokens += int64(c.OutputTokens)
			}
			if meta.TotalOutputTokens != outTokens {
				t.Fatalf("total_output_tokens %d, simulator billed %d", meta.TotalOutputTokens, outTokens)
			}
			if meta.TotalCostEstimate == nil || *meta.TotalCostEstimate <= 0 {
				t.Fatalf("a priced model must get a cost estimate, got %v (%s)", meta.TotalCostEstimate, meta.CostNote)
			}
		})
	}
}

// A redelivered chunk task whose chunk is stored makes no model call, and
// two deliveries running at once never both call the model.
func TestDuplicateDeliveriesMakeNoSecondModelCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The first call is slow, so the duplicate delivery runs while it is in flight.
	j := h.enqueue("format=csv size=3000 seed=7 faults=slow@0:700ms", client.Request{Format: "csv"})
	ctx := context.Background()
	aq := h.asynqClient()
	dup := func(seq int, id string) {
		b, _ := json.Marshal(jobs.ChunkPayload{JobID: j.id, Seq: seq})
		if _, err := aq.Enqueue(asynq.NewTask(jobs.TypeChunk, b), asynq.Queue(h.cfg.ChunkQueue), asynq.TaskID(id)); err != nil {
			t.Fatal(err)
		}
	}
	dup(0, "concurrent-duplicate-of-chunk-0")
	h.startWorker()
	st := h.wait(j.id, 60*time.Second)
	if st.Status != "succeeded" {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	before := len(h.sim.Calls(j.tag))
	if before != st.Chunks {
		t.Fatalf("simulator saw %d calls for %d chunks: a duplicate delivery called the model", before, st.Chunks)
	}
	// Redeliver stored chunks after the job finished, and a mid-job one.
	for seq := range st.Chunks {
		dup(seq, fmt.Sprintf("late-duplicate-%d", seq))
	}
	h.drain()
	if after := len(h.sim.Calls(j.tag)); after != before {
		t.Fatalf("late duplicates made %d more model calls", after-before)
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid`, j.id); n != st.Chunks {
		t.Fatalf("%d llm_calls rows for %d chunks", n, st.Chunks)
	}
	res, err := h.client.Result(ctx, j.id)
	if err != nil || res.Content != j.doc {
		t.Fatalf("result changed or wrong after duplicates: err=%v equal=%v", err, res.Content == j.doc)
	}
}

func (h *harness) asynqClient() *asynq.Client {
	opt, err := redis.ParseURL(h.cfg.RedisURL)
	if err != nil {
		h.t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	h.t.Cleanup(func() { _ = rdb.Close() })
	return asynq.NewClientFromRedisClient(rdb)
}

// drain waits until the test's queue has nothing pending, scheduled, retrying or active.
func (h *harness) drain() {
	h.t.Helper()
	opt, _ := redis.ParseURL(h.cfg.RedisURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		qi, err := insp.GetQueueInfo(h.cfg.ChunkQueue)
		if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			h.t.Fatal(err)
		}
		if err == nil && qi.Pending+qi.Active+qi.Scheduled+qi.Retry == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatal("queue did not drain")
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
