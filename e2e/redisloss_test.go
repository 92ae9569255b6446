package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
)

// Postgres is the source of truth: losing every Redis key of the queue in
// the middle of jobs — and a job whose first task never reached Redis —
// loses nothing. The reconciler re-queues each job's next step and every
// job finishes with its exact document.
func TestRedisLossLosesNoJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opt, _ := redis.ParseURL(h.cfg.RedisURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	insp := asynq.NewInspectorFromRedisClient(rdb)

	// A job whose first task is lost before any worker sees it (a crash
	// between the insert and the enqueue looks the same).
	never := h.enqueue("format=jsonl size=2000 seed=21", client.Request{Format: "jsonl"})
	if err := insp.DeleteQueue(h.cfg.ChunkQueue, true); err != nil {
		t.Fatal(err)
	}
	// Jobs that are mid-way when Redis is wiped: chunk 2 is slow.
	mid := []job{
		h.enqueue("format=csv size=3000 seed=22 faults=slow@2:1500ms", client.Request{Format: "csv"}),
		h.enqueue("format=markdown size=3000 seed=23 faults=slow@2:1500ms", client.Request{Format: "markdown"}),
	}
	h.startWorker()
	deadline := time.Now().Add(30 * time.Second)
	for h.count(`SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[]) AND seq = 1`, []string{mid[0].id, mid[1].id}) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("jobs never got going")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Wipe every key of the queue at once — pending, active, retry, task
	// hashes — as a Redis restarted without persistence loses them. (A KEYS
	// and then a DEL would leave a task enqueued between the two with its
	// hash but not its place in the pending list: a partial loss, which
	// this test does not claim to survive.)
	n, err := rdb.Eval(context.Background(), `local keys = redis.call('KEYS', ARGV[1])
for _, k in ipairs(keys) do redis.call('DEL', k) end
return #keys`, nil, "asynq:{"+h.cfg.ChunkQueue+"}:*").Int()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %d Redis keys mid-job", n)
	for _, j := range append(mid, never) {
		st := h.wait(j.id, 60*time.Second)
		if st.Status != "succeeded" {
			t.Fatalf("job %s: %s (%s)", j.id, st.Status, st.Error)
		}
		res, err := h.client.Result(context.Background(), j.id)
		if err != nil || res.Content != j.doc {
			t.Fatalf("job %s: document differs after losing Redis (%v)", j.id, err)
		}
		if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'succeeded'`, j.id); n != st.Chunks {
			t.Fatalf("job %s: %d successful calls for %d chunks", j.id, n, st.Chunks)
		}
	}
}

// A job whose task asynq gave up on (archived after repeated failures) is
// ended by the reconciler, never left live: with chunks it is merged as
// partial, without any it fails.
func TestArchivedTaskEndsTheJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opt, _ := redis.ParseURL(h.cfg.RedisURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	j := h.enqueue("format=text size=1000 seed=31", client.Request{})
	if err := insp.ArchiveTask(h.cfg.ChunkQueue, "job:"+j.id+":chunk:0"); err != nil {
		t.Fatal(err)
	}
	h.startWorker()
	st := h.wait(j.id, 30*time.Second)
	if st.Status != "failed" || st.StopReason != "retry_limit_reached" || st.Chunks != 0 {
		t.Fatalf("status %s stop_reason %s chunks %d", st.Status, st.StopReason, st.Chunks)
	}
}
