package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/hibiken/asynq"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/testenv"
)

// hookAttempt is one request a webhook receiver verified.
type hookAttempt struct {
	id, timestamp string
	body          []byte
}

// refusingReceiver is a webhook receiver that checks every request with the
// Standard Webhooks reference library (signature and timestamp tolerance),
// refuses the first attempt of each event (500, so that the event is
// retried) and accepts the next. first gets each event's id at its first
// attempt.
type refusingReceiver struct {
	mu       sync.Mutex
	attempts map[string][]hookAttempt
	order    []string // event ids, in the order first seen
	first    chan string
}

func newRefusingReceiver(t *testing.T, secret string) (*refusingReceiver, *httptest.Server) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rr := &refusingReceiver{attempts: map[string][]hookAttempt{}, first: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("standard webhooks verification: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(standardwebhooks.HeaderWebhookID)
		rr.mu.Lock()
		defer rr.mu.Unlock()
		rr.attempts[id] = append(rr.attempts[id], hookAttempt{id: id, timestamp: r.Header.Get(standardwebhooks.HeaderWebhookTimestamp), body: body})
		if len(rr.attempts[id]) == 1 {
			rr.order = append(rr.order, id)
			rr.first <- id
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return rr, srv
}

// hookHarness starts a worker that signs webhooks with a secret of its
// own, and a refusingReceiver that verifies them with it.
func hookHarness(t *testing.T) (*harness, *refusingReceiver, *httptest.Server) {
	t.Helper()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(testenv.RandomName("webhook-secret")))
	rr, recv := newRefusingReceiver(t, secret)
	h := newHarness(t)
	h.cfg.WebhookSecret = secret
	h.startWorker()
	return h, rr, recv
}

// retried reports whether n events each had two attempts.
func (rr *refusingReceiver) retried(n int) bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.order) < n {
		return false
	}
	for _, id := range rr.order {
		if len(rr.attempts[id]) < 2 {
			return false
		}
	}
	return true
}

// strictEvent decodes a body into jobs.Event, refusing any field the type
// does not document, and checks it against the WebhookEvent schema of the
// OpenAPI document.
func strictEvent(t *testing.T, body []byte) jobs.Event {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if err := doc.Components.Schemas["WebhookEvent"].Value.VisitJSON(v); err != nil {
		t.Fatalf("event %s does not match openapi.json's WebhookEvent: %v", body, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var ev jobs.Event
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("event %s: %v", body, err)
	}
	return ev
}

// A job that ends partial, is resumed and ends partial again sends two
// events with different webhook-ids; a refused event is retried with the
// same id and the same body bytes (checked by the Standard Webhooks
// reference verifier), and that body describes the job when the event
// happened, though the job moved on before the retry. The body echoes the
// request's metadata; a cancelled job's event has no result link (its
// result would answer 409), only the job's.
func TestWebhookEventsStoredOnce(t *testing.T) {
	t.Parallel()
	h, rr, recv := hookHarness(t)
	ctx := context.Background()
	meta := json.RawMessage(`{"order": 7}`)
	j := h.enqueue("format=csv size=3000 seed=51", client.Request{Format: "csv", MaxOutputTokens: 100,
		Continuation: client.Continuation{MaxAttempts: 2}, WebhookURL: recv.URL + "/hooks", Metadata: meta})
	if st := h.wait(j.id, 30*time.Second); st.Status != "partial" || st.Chunks != 2 {
		t.Fatalf("first end: %s, %d chunks", st.Status, st.Chunks)
	}
	// The first event is refused; the job moves on before its retry.
	select {
	case <-rr.first:
	case <-time.After(20 * time.Second):
		t.Fatal("no event after the first end")
	}
	if _, err := h.client.Resume(ctx, j.id, client.ResumeOptions{MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if st := h.wait(j.id, 30*time.Second); st.Status != "partial" || st.Chunks != 3 {
		t.Fatalf("second end: %s, %d chunks", st.Status, st.Chunks)
	}
	waitFor(t, 30*time.Second, "both events refused once and delivered", func() bool { return rr.retried(2) })

	rr.mu.Lock()
	order, attempts := append([]string(nil), rr.order...), rr.attempts
	rr.mu.Unlock()
	if len(order) != 2 || order[0] == order[1] {
		t.Fatalf("webhook-ids %v: two ends must be two events", order)
	}
	var evs []jobs.Event
	for _, id := range order {
		a := attempts[id]
		if !bytes.Equal(a[0].body, a[1].body) {
			t.Fatalf("event %s: the retry's body differs:\n%s\n%s", id, a[0].body, a[1].body)
		}
		evs = append(evs, strictEvent(t, a[0].body))
	}
	for i, want := range []int{2, 3} {
		ev := evs[i]
		if ev.Type != "job.partial" || ev.Data.ID != j.id || ev.Data.Chunks != want || ev.Data.StopReason != "steps_limit_reached" ||
			ev.Data.Result != "/v1/jobs/"+j.id+"/result" || ev.Data.Job != "/v1/jobs/"+j.id || !jsonEqual(ev.Data.Metadata, meta) {
			t.Fatalf("event %d: %+v (metadata %s)", i, ev, ev.Data.Metadata)
		}
	}
	if !evs[1].Timestamp.After(evs[0].Timestamp) {
		t.Fatalf("event times %s, %s", evs[0].Timestamp, evs[1].Timestamp)
	}
	for _, id := range order {
		waitFor(t, 10*time.Second, "attempts on record", func() bool {
			return h.count(`SELECT count(*) FROM webhook_deliveries WHERE event_id = $1 AND (http_status = 500 AND NOT delivered
				OR http_status = 204 AND delivered)`, id) == 2
		})
	}

	// A cancelled job with no result: no result link.
	c := h.enqueue("format=text size=3000 seed=96 faults=slow@0:10s", client.Request{WebhookURL: recv.URL + "/hooks", Metadata: meta})
	time.Sleep(300 * time.Millisecond)
	if _, err := h.client.Cancel(ctx, c.id); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Result(ctx, c.id); !errors.Is(err, client.ErrNotReady) {
		t.Fatalf("result of the cancelled job: %v", err)
	}
	waitFor(t, 20*time.Second, "the cancelled event", func() bool { return rr.retried(3) })
	rr.mu.Lock()
	ev := strictEvent(t, rr.attempts[rr.order[2]][1].body)
	rr.mu.Unlock()
	if ev.Type != "job.cancelled" || ev.Data.ID != c.id || ev.Data.Result != "" || ev.Data.Job != "/v1/jobs/"+c.id ||
		!jsonEqual(ev.Data.Metadata, meta) {
		t.Fatalf("cancelled event: %+v", ev)
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// Tasks that carry no stored event still deliver one: a task queued before
// the upgrade that stored events (a job and a status) gets an event written
// once from the job row, under the id its earlier attempts sent
// (evt_<job>_<status>) and timed at the job's end; and an undelivered event
// whose task was lost (Redis lost it, or the process died before queueing
// it) is queued again by the reconciler, with its id and body unchanged.
// The deadlines are generous: each wait ends as soon as its condition holds.
func TestWebhookTasksWithoutAStoredEvent(t *testing.T) {
	t.Parallel()
	h, rr, recv := hookHarness(t)
	ctx := context.Background()
	j := h.enqueue("format=text size=600 seed=97", client.Request{WebhookURL: recv.URL + "/hooks"})
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	waitFor(t, 60*time.Second, "the event delivered", func() bool { return rr.retried(1) })
	rr.mu.Lock()
	stored := rr.attempts[rr.order[0]][1]
	rr.mu.Unlock()
	// The receiver saw the attempt before the worker recorded it: wait for
	// the record, or it would land after the rows below are reset and mark
	// the event delivered again (the reconciler then rightly queues nothing).
	waitFor(t, 60*time.Second, "the delivery recorded", func() bool {
		var delivered bool
		err := h.store.Pool().QueryRow(ctx, `SELECT delivered_at IS NOT NULL FROM webhook_events WHERE id = $1`, stored.id).Scan(&delivered)
		return err == nil && delivered
	})

	// The reconciler: the event is undelivered and its task gone.
	if _, err := h.store.Pool().Exec(ctx, `WITH d AS (DELETE FROM webhook_deliveries WHERE job_id = $1::uuid)
		UPDATE webhook_events SET delivered_at = NULL, created_at = now() - interval '1 minute' WHERE job_id = $1::uuid`, j.id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the lost event queued again", func() bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return len(rr.attempts[stored.id]) == 3
	})
	rr.mu.Lock()
	again := rr.attempts[stored.id][2]
	rr.mu.Unlock()
	if !bytes.Equal(again.body, stored.body) {
		t.Fatalf("requeued event's body differs:\n%s\n%s", stored.body, again.body)
	}

	// A task from before the upgrade, for a job that ended before it.
	if _, err := h.store.Pool().Exec(ctx, `DELETE FROM webhook_events WHERE job_id = $1::uuid`, j.id); err != nil {
		t.Fatal(err)
	}
	legacy, _ := json.Marshal(map[string]string{"job_id": j.id, "status": "succeeded"})
	if _, err := h.asynqClient().Enqueue(asynq.NewTask(jobs.TypeWebhook, legacy), asynq.Queue(jobs.WebhookQueue(h.cfg.ChunkQueue)),
		asynq.TaskID("job:"+j.id+":webhook:succeeded")); err != nil {
		t.Fatal(err)
	}
	want := "evt_" + j.id + "_succeeded"
	select {
	case id := <-drainUntil(rr.first, want):
		if id != want {
			t.Fatalf("legacy task delivered %s, want %s", id, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the legacy task delivered nothing")
	}
	rr.mu.Lock()
	ev := strictEvent(t, rr.attempts[want][0].body)
	rr.mu.Unlock()
	var finished time.Time
	if err := h.store.Pool().QueryRow(ctx, `SELECT finished_at FROM jobs WHERE id = $1::uuid`, j.id).Scan(&finished); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "job.succeeded" || ev.Data.ID != j.id || !ev.Timestamp.Equal(finished) || ev.Data.Result == "" {
		t.Fatalf("legacy event %+v, finished at %s", ev, finished)
	}
}

// drainUntil passes on the first value of c that is want, or the last one
// read when c has nothing more for a while.
func drainUntil(c <-chan string, want string) <-chan string {
	out := make(chan string, 1)
	go func() {
		last := ""
		for {
			select {
			case v := <-c:
				if last = v; v == want {
					out <- v
					return
				}
			case <-time.After(15 * time.Second):
				out <- last
				return
			}
		}
	}()
	return out
}
