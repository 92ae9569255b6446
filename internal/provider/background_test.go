package provider_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/simulator"
)

// A detached call through openai-go against the simulator's background
// mode: Start answers at once with a pending response, Poll reads it until
// it ends with the answer a synchronous call gives, a continuation chains
// from it, Cancel stops one in flight with the usage billed so far, and an
// id the provider no longer knows is a 404.
func TestResponsesBackground(t *testing.T) {
	const latency = 300 * time.Millisecond
	sim := simulator.New(simulator.Config{Latency: latency})
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	p := provider.NewResponses(provider.Config{BaseURL: ts.URL + "/v1", APIKey: "sk-test"})
	ctx := context.Background()
	prompt := "[[sim format=csv size=600 seed=3]] go"
	doc, _, _ := simulator.DocumentFor(prompt)

	wait := func(id string) continuation.Response {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r, err := p.Poll(ctx, id, 0)
			if !r.Pending() {
				if err != nil {
					t.Fatalf("poll %s: %v", id, err)
				}
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("response %s still %s", id, r.RawStatus)
			}
		}
	}
	req := continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64, Input: continuation.Input{Prompt: prompt}}
	start := time.Now()
	r, err := p.Start(ctx, req)
	if err != nil || !r.Pending() || r.ID == "" || time.Since(start) >= latency {
		t.Fatalf("start: %+v, %v after %s; want a pending response at once", r, err, time.Since(start))
	}
	got := ""
	for i := 0; ; i++ {
		r = wait(r.ID)
		got += r.Text
		if r.Finish != continuation.FinishLength || i > 50 {
			break
		}
		if r.ServerLatency < latency {
			t.Fatalf("server latency %s, want at least %s (created_at to completed_at)", r.ServerLatency, latency)
		}
		r, err = p.Start(ctx, continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: 64, PreviousID: r.ID,
			Prompt: continuation.ContinuePrompt("csv")})
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.Finish != continuation.FinishStop || got != doc {
		t.Fatalf("finish %s; document equal=%v", r.Finish, got == doc)
	}

	// Cancel one in flight: the response ends cancelled, with its input billed.
	r, err = p.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Cancel(ctx, r.ID, 0)
	if c.RawStatus != "cancelled" || c.Usage.Input <= 0 {
		t.Fatalf("cancel: %+v, %v", c, err)
	}
	if st := sim.BackgroundStats(); st.Cancelled != 1 {
		t.Fatalf("simulator saw %d cancels", st.Cancelled)
	}

	// An unknown id is a 404, which the worker reads as expired.
	_, err = p.Poll(ctx, "resp_gone", 0)
	if ce := continuation.Classify(err); ce == nil || ce.HTTPStatus != 404 {
		t.Fatalf("poll of an unknown id: %v", err)
	}
}
