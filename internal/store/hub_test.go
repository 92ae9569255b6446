package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/internal/store"
)

// The notification hub: one LISTEN connection fans out to many subscribers
// of one job and of several; a job's subscribers share one watcher row; and
// when the LISTEN connection is killed, the hub reconnects, wakes every
// subscriber, and notifications flow again.
func TestHubFansOutAndSurvivesAKilledListener(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	a, b := newJob(t, s), newJob(t, s)
	subscribe := func(id string, n int) []*store.Subscription {
		subs := make([]*store.Subscription, n)
		for i := range subs {
			sub, err := s.Watch(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sub.Close)
			subs[i] = sub
		}
		return subs
	}
	subsA, subsB := subscribe(a, 20), subscribe(b, 5)
	rows := func(id string) int {
		t.Helper()
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM job_watchers WHERE job_id = $1::uuid`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if ra, rb := rows(a), rows(b); ra != 1 || rb != 1 {
		t.Fatalf("watcher rows: %d for job a, %d for job b; want one each", ra, rb)
	}
	drain := func(subs ...[]*store.Subscription) {
		for _, ss := range subs {
			for _, sub := range ss {
				select {
				case <-sub.C:
				default:
				}
			}
		}
	}
	woken := func(what string, subs []*store.Subscription) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for i, sub := range subs {
			select {
			case <-sub.C:
			case <-deadline:
				t.Fatalf("%s: subscriber %d of %d was not woken", what, i, len(subs))
			}
		}
	}
	quiet := func(what string, subs []*store.Subscription) {
		t.Helper()
		time.Sleep(200 * time.Millisecond)
		for i, sub := range subs {
			select {
			case <-sub.C:
				t.Fatalf("%s: subscriber %d was woken by another job's notification", what, i)
			default:
			}
		}
	}
	notify := func(id string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `SELECT pg_notify('carryover_jobs', $1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // let the first connection's wake-up pass
	drain(subsA, subsB)
	notify(a)
	woken("a notification of job a", subsA)
	quiet("a notification of job a", subsB)
	notify(b)
	woken("a notification of job b", subsB)
	quiet("a notification of job b", subsA)
	// A chunk save of a watched job notifies through the hub's watcher row.
	saveChunk(t, s, b, 0, chunk("b0", true))
	woken("a chunk of job b", subsB)

	pid := s.ListenerPID()
	if pid == 0 {
		t.Fatal("the hub is not listening")
	}
	drain(subsA, subsB)
	var killed bool
	if err := s.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int64(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d): %v %v", pid, killed, err)
	}
	// Reconnected, the hub wakes everyone: what was sent meanwhile is lost.
	woken("the reconnection", subsA)
	woken("the reconnection", subsB)
	if now := s.ListenerPID(); now == 0 || now == pid {
		t.Fatalf("listener pid %d after killing %d", now, pid)
	}
	notify(a)
	woken("a notification after the reconnection", subsA)
	quiet("a notification after the reconnection", subsB)

	// The watcher row goes with a job's last subscriber, not before.
	for _, sub := range subsA[1:] {
		sub.Close()
	}
	if n := rows(a); n != 1 {
		t.Fatalf("%d watcher rows for job a with one subscriber left", n)
	}
	subsA[0].Close()
	subsA[0].Close() // twice is harmless
	if n := rows(a); n != 0 {
		t.Fatalf("%d watcher rows for job a with no subscriber", n)
	}
	for _, sub := range subsB {
		sub.Close()
	}
	if n := rows(b); n != 0 {
		t.Fatalf("%d watcher rows for job b with no subscriber", n)
	}
}

// A pooled acquire waits at most the store's AcquireTimeout: with every
// connection taken, a statement fails with context.DeadlineExceeded instead
// of waiting without end.
func TestAcquireTimeout(t *testing.T) {
	t.Parallel()
	s, err := store.Open(context.Background(), dbURL, store.Options{MaxConns: 1, AcquireTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	held, err := s.Pool().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.JobTenant(context.Background(), "00000000-0000-0000-0000-000000000000")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("with the pool exhausted: %v after %s", err, time.Since(start))
	}
	held.Release()
	// A statement slower than the bound is not cut short by it.
	if _, err := s.Pool().Exec(context.Background(), `SELECT pg_sleep(0.5)`); err != nil {
		t.Fatalf("a statement longer than the acquire timeout: %v", err)
	}
}

// TestStatusEventsNotifyWatchedJobsOnly checks that a job's events notify
// carryover_jobs when the job is watched, and only then: every NOTIFY
// serializes its transaction's commit with every other's, and nobody
// listens for a job without a watcher row.
func TestStatusEventsNotifyWatchedJobsOnly(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	watched, unwatched := newJob(t, s), newJob(t, s)
	sub, err := s.Watch(ctx, watched)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN carryover_jobs"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{unwatched, watched} {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO job_events (job_id, level, type, message) VALUES ($1::uuid, 'info', 'status', 'running')`, id); err != nil {
			t.Fatal(err)
		}
	}
	// Notifications arrive in commit order: the first one this connection
	// sees of the two jobs must be the watched job's.
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("no notification for the watched job: %v", err)
		}
		switch n.Payload {
		case unwatched:
			t.Fatal("the unwatched job's status event notified")
		case watched:
			return
		}
	}
}
