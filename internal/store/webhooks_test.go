package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/carryover/carryover/internal/store"
)

// hookJob inserts a job with a webhook URL and the caller's metadata.
func hookJob(t *testing.T, s *store.Store) string {
	t.Helper()
	j, _, err := s.InsertJob(context.Background(), store.NewJob{ID: uuid.NewString(), Model: "gpt-4.1-mini", Format: "text",
		Input: json.RawMessage(`{"prompt":"p"}`), MaxOutputTokens: 64, Continuation: json.RawMessage(`{}`), RequestHash: "h",
		Metadata: json.RawMessage(`{"order":42,"note":null}`), WebhookURL: "http://127.0.0.1:1/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// cancel cancels a live job.
func cancel(t *testing.T, s *store.Store, id string) {
	t.Helper()
	if _, _, err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// cancelledHookJob opens a store, inserts a job with a webhook, cancels it
// and returns its events (the one its cancel wrote).
func cancelledHookJob(t *testing.T) (*store.Store, string, []store.WebhookEvent) {
	t.Helper()
	s := open(t)
	id := hookJob(t, s)
	cancel(t, s, id)
	return s, id, events(t, s, id)
}

// events lists a job's stored events, oldest first.
func events(t *testing.T, s *store.Store, jobID string) []store.WebhookEvent {
	t.Helper()
	ids, err := s.PendingWebhookEvents(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.WebhookEvent
	for _, id := range ids {
		e, err := s.GetWebhookEvent(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// eventBody is what the tests read of a stored body.
type eventBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		ID, Status, Job string
		Result          *string
		Metadata        json.RawMessage
	} `json:"data"`
}

// Each statement that ends a job writes one event, in its transaction, with
// an id of its own; a job without a webhook gets none, nor does a status
// change that does not end a job. The body says what the job was at its
// end: the result link only where there is a result, the caller's metadata.
func TestWebhookEventWrittenWhenAJobEnds(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	toMerging := func(t *testing.T, id string) {
		if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET status = 'merging' WHERE id = $1::uuid`, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, status string
		result       bool
		end          func(t *testing.T, id string) error
	}{
		{"cancel", "cancelled", false, func(_ *testing.T, id string) error { _, _, err := s.Cancel(ctx, id); return err }},
		{"fail", "failed", false, func(_ *testing.T, id string) error { return s.FailJob(ctx, id, "boom") }},
		{"stop without chunks", "failed", false, func(_ *testing.T, id string) error {
			_, err := s.StopJob(ctx, id, store.Stop{Reason: "retry_limit_reached", Error: "gave up", Merge: true})
			return err
		}},
		{"merge", "partial", true, func(t *testing.T, id string) error {
			toMerging(t, id)
			return s.SaveResult(ctx, store.Result{JobID: id, Content: "x", Metadata: json.RawMessage(`{}`)}, "partial", "", store.JobTotals{Chunks: 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := hookJob(t, s)
			toMerging(t, id) // a live status change writes nothing
			if evs := events(t, s, id); len(evs) != 0 {
				t.Fatalf("%d events before the end", len(evs))
			}
			if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET status = 'running' WHERE id = $1::uuid`, id); err != nil {
				t.Fatal(err)
			}
			if err := tc.end(t, id); err != nil {
				t.Fatal(err)
			}
			evs := events(t, s, id)
			if len(evs) != 1 || evs[0].Type != "job."+tc.status || !strings.HasPrefix(evs[0].ID, "evt_") {
				t.Fatalf("events: %+v", evs)
			}
			var b eventBody
			if err := json.Unmarshal(evs[0].Body, &b); err != nil {
				t.Fatal(err)
			}
			if b.Type != "job."+tc.status || b.Data.ID != id || b.Data.Status != tc.status || b.Data.Job != "/v1/jobs/"+id ||
				(b.Data.Result != nil) != tc.result || string(b.Data.Metadata) != `{"note": null, "order": 42}` {
				t.Fatalf("body %s", evs[0].Body)
			}
		})
	}
	plain := newJob(t, s) // no webhook
	if err := s.FailJob(ctx, plain, "boom"); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, s, plain); len(evs) != 0 {
		t.Fatalf("a job without a webhook has events: %+v", evs)
	}
}

// A job that ends, is resumed and ends the same way again has two events,
// each with its own id and time; the first keeps the body it was written
// with. A delivered event is no longer pending.
func TestWebhookEventsOfAResumedJob(t *testing.T) {
	t.Parallel()
	s, id, first := cancelledHookJob(t)
	ctx := context.Background()
	if _, ok, err := s.Resume(ctx, id, json.RawMessage(`{}`), nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	cancel(t, s, id)
	both := events(t, s, id)
	if len(first) != 1 || len(both) != 2 || both[0].ID != first[0].ID || string(both[0].Body) != string(first[0].Body) ||
		both[1].ID == both[0].ID || string(both[1].Body) == string(both[0].Body) {
		t.Fatalf("first %+v, then %+v", first, both)
	}
	if err := s.RecordWebhook(ctx, store.WebhookDelivery{JobID: id, EventID: both[0].ID, EventType: both[0].Type, HTTPStatus: 500}); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, s, id); len(evs) != 2 {
		t.Fatalf("a refused delivery marked its event delivered: %d pending", len(evs))
	}
	if err := s.RecordWebhook(ctx, store.WebhookDelivery{JobID: id, EventID: both[0].ID, EventType: both[0].Type, HTTPStatus: 204, Delivered: true}); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, s, id); len(evs) != 1 || evs[0].ID != both[1].ID {
		t.Fatalf("after delivering the first: %+v", evs)
	}
	if e, err := s.GetWebhookEvent(ctx, both[0].ID); err != nil || e.DeliveredAt == nil || e.WebhookURL == nil {
		t.Fatalf("delivered event: %+v %v", e, err)
	}
}

// A webhook task queued before events were stored names a job and a status:
// it gets the job's latest event of that status, or, for a job that ended
// before migration 11, one written once from the job row under the id its
// earlier attempts sent. A job no longer in that status has none.
func TestLegacyWebhookEvent(t *testing.T) {
	t.Parallel()
	s, id, stored := cancelledHookJob(t)
	ctx := context.Background()
	if got, err := s.LegacyWebhookEvent(ctx, id, "cancelled"); err != nil || got != stored[0].ID {
		t.Fatalf("got %q (%v), want the stored %s", got, err, stored[0].ID)
	}
	// A job that ended before the trigger existed has no event.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM webhook_events WHERE job_id = $1::uuid`, id); err != nil {
		t.Fatal(err)
	}
	want := "evt_" + id + "_cancelled"
	for range 2 {
		if got, err := s.LegacyWebhookEvent(ctx, id, "cancelled"); err != nil || got != want {
			t.Fatalf("got %q (%v), want %s", got, err, want)
		}
	}
	if evs := events(t, s, id); len(evs) != 1 {
		t.Fatalf("%d events written for one legacy task", len(evs))
	}
	if _, err := s.LegacyWebhookEvent(ctx, id, "succeeded"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an event for a status the job does not have: %v", err)
	}
}
