package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/webhook"
)

// A job's end event reaches its webhook signed (Standard Webhooks), a
// refused delivery is retried, and every attempt is on record.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	secretText := "whsec_" + base64.StdEncoding.EncodeToString([]byte("test-secret-0123456789"))
	secret, _ := webhook.ParseSecret(secretText)
	var mu sync.Mutex
	var got []jobs.Event
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusInternalServerError) // the first delivery is refused
			return
		}
		var ev jobs.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Error(err)
		}
		got = append(got, ev)
	}))
	defer recv.Close()
	h := newHarness(t)
	h.cfg.WebhookSecret = secretText
	h.startWorker()
	ctx := context.Background()
	done := h.enqueue("format=text size=1200 seed=95", client.Request{WebhookURL: recv.URL + "/hooks"})
	if st := h.wait(done.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	cancelled := h.enqueue("format=text size=3000 seed=96 faults=slow@0:10s", client.Request{WebhookURL: recv.URL + "/hooks"})
	time.Sleep(300 * time.Millisecond)
	if _, err := h.client.Cancel(ctx, cancelled.id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d events", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	types := map[string]jobs.Event{}
	for _, ev := range got {
		types[ev.Type] = ev
	}
	if ev := types["job.succeeded"]; ev.Data.ID != done.id || ev.Data.StopReason != "completed" || ev.Data.Chunks == 0 || ev.Data.CostUSD == nil {
		t.Fatalf("succeeded event: %+v", ev)
	}
	if ev := types["job.cancelled"]; ev.Data.ID != cancelled.id || ev.Data.StopReason != "user_requested" {
		t.Fatalf("cancelled event: %+v", ev)
	}
	// The receiver has both events; the sender records a delivery after
	// the receiver's answer, so the second row may be a moment behind.
	for n := 0; n != 2; {
		if n = h.count(`SELECT count(*) FROM webhook_deliveries WHERE delivered`); n != 2 && time.Now().After(deadline) {
			t.Fatalf("%d delivered rows", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.count(`SELECT count(*) FROM webhook_deliveries WHERE NOT delivered AND http_status = 500`); n != 1 {
		t.Fatalf("%d refused deliveries on record", n)
	}
}
