package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
)

// Stateful calls run detached (background mode): every chunk is one
// background response created once and read when done, whether the task
// holds its slot while it waits or ends and polls later; the documents are
// exact and nothing is paid for twice.
func TestBackgroundCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold time.Duration
	}{
		{"hold", 2 * time.Second},
		{"reschedule", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessWith(t, simulator.Config{Latency: 300 * time.Millisecond})
			h.cfg.Background, h.cfg.BackgroundHold = true, tc.hold
			h.startWorker()
			var js []job
			for seed := range 3 {
				js = append(js, h.enqueue("format=csv size=2500 seed="+string(rune('1'+seed)), client.Request{Format: "csv", MaxOutputTokens: 200}))
			}
			chunks := 0
			for _, j := range js {
				st := h.wait(j.id, 60*time.Second)
				if st.Status != "succeeded" {
					t.Fatalf("job %s: %s %s", j.id, st.Status, st.Error)
				}
				if st.Chunks < 2 {
					t.Fatalf("job %s took %d chunk(s); the test needs continuations", j.id, st.Chunks)
				}
				res, err := h.client.Result(context.Background(), j.id)
				if err != nil {
					t.Fatal(err)
				}
				if res.Content != j.doc {
					t.Fatalf("job %s: document differs at %d", j.id, firstDiff(res.Content, j.doc))
				}
				chunks += st.Chunks
				if calls := len(h.sim.Calls(j.tag)); calls != st.Chunks {
					t.Fatalf("job %s: %d model calls for %d chunks", j.id, calls, st.Chunks)
				}
			}
			if got := h.sim.BackgroundStats().Created; int(got) != chunks {
				t.Fatalf("%d background responses created for %d chunks", got, chunks)
			}
			// Every chunk came from a background call on record; none was lost or failed.
			if n := h.count(`SELECT count(*) FROM chunks c JOIN background_calls b USING (response_id)`); n != chunks {
				t.Fatalf("%d of %d chunks have their background call on record", n, chunks)
			}
			if n := h.count(`SELECT count(*) FROM llm_calls WHERE status <> 'succeeded'`); n != 0 {
				t.Fatalf("%d unsuccessful calls recorded", n)
			}
			// Re-scheduled waits come back on a whole second at the soonest;
			// a held wait reads a 300ms call well before that.
			fast := h.count(`SELECT count(*) FROM chunks WHERE latency_ms < 1000`)
			switch {
			case tc.hold == 0 && fast != 0:
				t.Fatalf("%d chunks were read in under a second without holding a slot", fast)
			case tc.hold > 0 && fast == 0:
				t.Fatal("no chunk was read while its task held the slot")
			}
		})
	}
}

// A cancel reaches the provider: the call in flight is cancelled there and
// its row says what it was billed up to the cancel — whether the cancel
// found the task waiting in its slot or waiting in the queue for its next
// poll.
func TestBackgroundCancelReachesProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold time.Duration
	}{
		{"holding", 30 * time.Second},
		{"rescheduled", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessWith(t, simulator.Config{Latency: 20 * time.Second})
			h.cfg.Background, h.cfg.BackgroundHold, h.cfg.CallTimeout = true, tc.hold, time.Minute
			h.startWorker()
			j := h.enqueue("format=text size=3000 seed=5", client.Request{})
			deadline := time.Now().Add(20 * time.Second)
			for h.count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid`, j.id) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no background call started")
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond) // the task is holding, or has re-scheduled its poll
			if _, err := h.client.Cancel(context.Background(), j.id); err != nil {
				t.Fatal(err)
			}
			st := h.wait(j.id, 10*time.Second)
			if st.Status != "cancelled" {
				t.Fatalf("status %s", st.Status)
			}
			deadline = time.Now().Add(10 * time.Second)
			for h.count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid AND status = 'cancelled' AND closed_at IS NOT NULL`, j.id) != 1 {
				if time.Now().After(deadline) {
					t.Fatal("the background call was not closed as cancelled")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got := h.sim.BackgroundStats().Cancelled; got != 1 {
				t.Fatalf("the provider saw %d cancels, want 1", got)
			}
			if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND error_type = 'cancelled'
				AND response_id IS NOT NULL AND input_tokens > 0`, j.id); n != 1 {
				t.Fatalf("%d cancelled calls recorded with the usage billed up to the cancel, want 1", n)
			}
			if n := len(h.sim.Calls(j.tag)); n != 1 {
				t.Fatalf("%d model calls, want 1", n)
			}
		})
	}
}

// Workers SIGKILLed again and again while background calls are in flight:
// every job is exact, and no chunk is paid for twice — each chunk is one
// background response, created once, however many deliveries waited on it.
// Each kill comes while no create is between the provider's answer and the
// commit of its id (the simulator holds new creates for the moment of the
// kill): that window of a few milliseconds is the one a crash can still pay
// twice in, and the README says so.
func TestBackgroundCallsSurviveKills(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and kills worker processes")
	}
	h := newHarnessWith(t, simulator.Config{Latency: 1500 * time.Millisecond})
	bin := testenv.BuildWorker(t)
	var js []job
	for i := range 4 {
		js = append(js, h.enqueue(fmt.Sprintf("format=csv size=2400 seed=%d", 30+i), client.Request{Format: "csv", MaxOutputTokens: 200}))
	}
	proc := h.startProcess(bin)
	kills := 0
	done := func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE status NOT IN ('succeeded','failed','partial','cancelled')`) == 0
	}
	for deadline := time.Now().Add(90 * time.Second); kills < 6 && !done(); {
		if time.Now().After(deadline) {
			t.Fatal("jobs did not finish while the workers were being killed")
		}
		time.Sleep(time.Duration(600+rand.IntN(800)) * time.Millisecond)
		release := h.sim.HoldCreates()
		for settle := time.Now().Add(5 * time.Second); int(h.sim.BackgroundStats().Created) != h.count(`SELECT count(*) FROM background_calls`); {
			if time.Now().After(settle) {
				release()
				t.Fatal("created responses never all reached background_calls")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if h.sim.BackgroundStats().InFlight == 0 {
			release()
			continue // kill only with calls in flight
		}
		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = proc.Process.Wait()
		release()
		kills++
		proc = h.startProcess(bin)
	}
	if kills < 3 {
		t.Fatalf("only %d kills landed while calls were in flight", kills)
	}
	chunks := 0
	for _, j := range js {
		st := h.wait(j.id, 90*time.Second)
		if st.Status != "succeeded" {
			t.Fatalf("job %s: %s %s", j.id, st.Status, st.Error)
		}
		res, err := h.client.Result(context.Background(), j.id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Content != j.doc {
			t.Fatalf("job %s: document differs at %d", j.id, firstDiff(res.Content, j.doc))
		}
		chunks += st.Chunks
	}
	st := h.sim.BackgroundStats()
	t.Logf("%d kills; %d chunks; %d responses created; %d polls; resumed %d times", kills, chunks, st.Created, st.Polls,
		h.count(`SELECT coalesce(sum(resumes), 0) FROM background_calls`))
	if int(st.Created) != chunks {
		t.Fatalf("%d background responses created for %d chunks: %d paid for twice", st.Created, chunks, int(st.Created)-chunks)
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE status = 'lost'`); n != 0 {
		t.Fatalf("%d calls recorded as lost; every killed wait was resumed", n)
	}
}

// A background response the provider no longer knows (it expired before it
// was read: the worker was down longer than the provider keeps it) is
// recorded as a lost call, and a new call is made for the chunk.
func TestBackgroundCallExpired(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64 // how far the simulator's clock runs ahead
	h := newHarnessWith(t, simulator.Config{Latency: 2 * time.Second,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	h.cfg.Background, h.cfg.BackgroundHold = true, 0
	h.startWorker()
	j := h.enqueue("format=text size=200 seed=8", client.Request{})
	deadline := time.Now().Add(20 * time.Second)
	for h.count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid`, j.id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no background call started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	skew.Store(int64(11 * time.Minute)) // past the response's end and its ten minutes of retention
	st := h.wait(j.id, 30*time.Second)
	if st.Status != "succeeded" {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	res, err := h.client.Result(context.Background(), j.id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != j.doc {
		t.Fatalf("document differs at %d", firstDiff(res.Content, j.doc))
	}
	if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'lost' AND error_type = 'expired'
		AND http_status = 404 AND response_id IS NOT NULL`, j.id); n != 1 {
		t.Fatalf("%d expired calls recorded, want 1", n)
	}
	if n := h.count(`SELECT count(*) FROM background_calls WHERE job_id = $1::uuid AND status = 'expired' AND closed_at IS NOT NULL`, j.id); n != 1 {
		t.Fatalf("%d background calls closed as expired, want 1", n)
	}
	if st := h.sim.BackgroundStats(); st.Created != 2 || st.Expired < 1 {
		t.Fatalf("simulator: %d created, %d answered expired; want 2 and at least 1", st.Created, st.Expired)
	}
}
