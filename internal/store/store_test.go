package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

var dbURL string

func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }

func open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dbURL, store.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newJob(t *testing.T, s *store.Store) string {
	t.Helper()
	j, created, err := s.InsertJob(context.Background(), store.NewJob{ID: uuid.NewString(), Model: "gpt-4.1-mini", Format: "text",
		Input: json.RawMessage(`{"prompt":"p"}`), MaxOutputTokens: 64, Continuation: json.RawMessage(`{}`), RequestHash: "h"})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	return j.ID
}

func chunk(text string, cont bool) store.NewChunk {
	return store.NewChunk{Content: text, ContentSHA: "sha-" + text, FinishReason: "length", RawStatus: "incomplete",
		ResponseID: "resp_" + text, TaskID: "task", ShouldContinue: cont, CallStarted: time.Now(), Decision: json.RawMessage(`{}`)}
}

// The job lock: a second delivery is refused while the first holds the job,
// and after the first stored its chunk the second sees it stored — with no
// model call in between.
func TestClaimLock(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	first, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || first.Outcome != store.Claimed {
		t.Fatalf("first claim: %v %v", first.Outcome, err)
	}
	second, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || second.Outcome != store.Leased {
		t.Fatalf("second claim while the first holds the job: %v %v", second.Outcome, err)
	}
	if err := first.MarkRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := first.Save(ctx, chunk("a", true)); err != nil || st != store.StatusRunning {
		t.Fatalf("save: %q %v", st, err)
	}
	again, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || again.Outcome != store.AlreadyStored || again.NextSeq != 1 {
		t.Fatalf("redelivery of a stored chunk: %v next %d %v", again.Outcome, again.NextSeq, err)
	}
	next, err := s.ClaimChunk(ctx, id, 1)
	if err != nil || next.Outcome != store.Claimed || next.PrevResponseID != "resp_a" || next.PrevSHA != "sha-a" {
		t.Fatalf("next chunk: %+v %v", next, err)
	}
	if st, err := next.Save(ctx, chunk("b", false)); err != nil || st != store.StatusMerging {
		t.Fatalf("stopping save: %q %v", st, err)
	}
	done, err := s.ClaimChunk(ctx, id, 2)
	if err != nil || done.Outcome != store.JobDone {
		t.Fatalf("after the stop: %v %v", done.Outcome, err)
	}
	ahead, err := s.ClaimChunk(ctx, newJob(t, s), 3)
	if err != nil || ahead.Outcome != store.Ahead {
		t.Fatalf("stray future task: %v %v", ahead.Outcome, err)
	}
	missing, err := s.ClaimChunk(ctx, uuid.NewString(), 0)
	if err != nil || missing.Outcome != store.Missing {
		t.Fatalf("unknown job: %v %v", missing.Outcome, err)
	}
}

// A lock held by a connection that dies is freed with it.
func TestLockFreedWithTheSession(t *testing.T) {
	s := open(t)
	other := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	c, err := other.ClaimChunk(ctx, id, 0)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatal(c.Outcome, err)
	}
	if ok, _, _ := s.TryLockJob(ctx, id); ok {
		t.Fatal("lock taken twice")
	}
	// The worker dies: Postgres ends its session.
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var ok bool
	var unlock func()
	for i := 0; i < 100 && !ok; i++ { // the backend exits asynchronously
		if ok, unlock, err = s.TryLockJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !ok {
		t.Fatal("lock not freed when its session ended")
	}
	unlock()
}

// Deliveries that died without a trace are recorded as lost, once.
func TestRecordLostAttempts(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	id := newJob(t, s)
	c, _ := s.ClaimChunk(ctx, id, 0)
	// Attempt 0 failed and was recorded; attempts 1 and 2 died; this is attempt 3.
	if _, _, err := c.Fail(ctx, store.CallFailure{TaskID: "t", Attempt: 0, Counted: true, ErrorType: "model", Error: "500", Started: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	c, _ = s.ClaimChunk(ctx, id, 0)
	n, err := c.RecordLostAttempts(ctx, "t", 3)
	if err != nil || n != 2 {
		t.Fatalf("lost attempts recorded: %d %v", n, err)
	}
	if n, _ := c.RecordLostAttempts(ctx, "t", 3); n != 0 {
		t.Fatalf("recorded again: %d", n)
	}
	c.Release()
	stats, err := s.CallStats(ctx, id)
	if err != nil || stats.Failed != 1 || stats.Lost != 2 || stats.Total != 3 {
		t.Fatalf("%+v %v", stats, err)
	}
}
