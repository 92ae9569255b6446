package simulator

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func newResponse(ctx context.Context, client openai.Client, prompt, prev string, maxTokens int64) (*responses.Response, error) {
	params := responses.ResponseNewParams{
		Model:           "gpt-4o-mini",
		MaxOutputTokens: openai.Int(maxTokens),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
	if prev != "" {
		params.PreviousResponseID = openai.String(prev)
	}
	return client.Responses.New(ctx, params)
}

func TestResponsesHTTPFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		faults     string
		status     int
		errType    string
		retryAfter string
	}{
		{"rate limit", "429@1:2", http.StatusTooManyRequests, "rate_limit_error", "2"},
		{"rate limit default", "429@1", http.StatusTooManyRequests, "rate_limit_error", "1"},
		{"server error", "500@1", http.StatusInternalServerError, "server_error", ""},
		{"bad request", "400@1", http.StatusBadRequest, "invalid_request_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, client := newTestClient(t, Config{})
			ctx := context.Background()
			prompt := "[[sim format=csv size=600 tag=t faults=" + tt.faults + "]]"
			first, err := newResponse(ctx, client, prompt, "", 20)
			if err != nil {
				t.Fatalf("depth 0: %v", err)
			}
			_, err = newResponse(ctx, client, "continue", first.ID, 20)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("depth 1: want *openai.Error, got %v", err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Type != tt.errType {
				t.Fatalf("depth 1: got %d %q, want %d %q", apiErr.StatusCode, apiErr.Type, tt.status, tt.errType)
			}
			if got := apiErr.Response.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if tt.retryAfter != "" && apiErr.Response.Header.Get("retry-after-ms") != tt.retryAfter+"000" {
				t.Errorf("retry-after-ms = %q", apiErr.Response.Header.Get("retry-after-ms"))
			}
			// The retry of the same depth succeeds and continues the document.
			second, err := newResponse(ctx, client, "continue", first.ID, 20)
			if err != nil {
				t.Fatalf("depth 1 retry: %v", err)
			}
			doc, _, _ := DocumentFor(prompt)
			if got := first.OutputText() + second.OutputText(); doc[:len(got)] != got {
				t.Fatalf("retry did not continue the document: %q", got)
			}
			calls := sim.Calls("t")
			if len(calls) != 3 || calls[1].Status != tt.status || calls[1].Outcome != outcomeOf(tt.status) || calls[2].Depth != 1 {
				t.Fatalf("calls = %+v", calls)
			}
		})
	}
}

func TestResponsesFaultRepeats(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	prompt := "[[sim tag=x faults=500@0x2]]"
	for i, wantErr := range []bool{true, true, false} {
		_, err := newResponse(context.Background(), client, prompt, "", 20)
		if (err != nil) != wantErr {
			t.Fatalf("attempt %d: err = %v, want error %v", i, err, wantErr)
		}
	}
}

func TestResponsesInBandFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		faults string
		status string
		reason string
		text   bool
	}{
		{"content_filter@0", "incomplete", "content_filter", true},
		{"cutoff@0", "incomplete", "interrupted", true},
		{"failed@0", "failed", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.faults, func(t *testing.T) {
			sim, client := newTestClient(t, Config{})
			prompt := "[[sim format=json size=800 tag=f faults=" + tt.faults + "]]"
			resp, err := newResponse(context.Background(), client, prompt, "", 50)
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Status) != tt.status || resp.IncompleteDetails.Reason != tt.reason {
				t.Fatalf("got status %q reason %q", resp.Status, resp.IncompleteDetails.Reason)
			}
			if (resp.OutputText() != "") != tt.text {
				t.Fatalf("text = %q", resp.OutputText())
			}
			if tt.status == "failed" && resp.Error.Code != "server_error" {
				t.Fatalf("error = %+v", resp.Error)
			}
			doc, _, _ := DocumentFor(prompt)
			if got := resp.OutputText(); doc[:len(got)] != got {
				t.Fatalf("partial text is not a document prefix: %q", got)
			}
			if c := sim.Calls("f"); len(c) != 1 || c[0].Outcome != tt.status+map[bool]string{true: ":" + tt.reason}[tt.reason != ""] {
				t.Fatalf("calls = %+v", c)
			}
		})
	}
}

func TestResponsesMalformed(t *testing.T) {
	t.Parallel()
	sim, client := newTestClient(t, Config{})
	prompt := "[[sim tag=m faults=malformed@0]]"
	if _, err := newResponse(context.Background(), client, prompt, "", 20); err == nil {
		t.Fatal("malformed body parsed without error")
	}
	if _, err := newResponse(context.Background(), client, prompt, "", 20); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if c := sim.Calls("m"); len(c) != 2 || c[0].Outcome != "malformed" || c[1].Outcome != "incomplete:max_output_tokens" {
		t.Fatalf("calls = %+v", c)
	}
}

func TestResponsesSlow(t *testing.T) {
	// Serial: it asserts an upper bound on how long a cancelled call takes.
	sim, client := newTestClient(t, Config{})
	prompt := "[[sim tag=s faults=slow@0:300ms]]"
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := newResponse(ctx, client, prompt, "", 20); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	start := time.Now()
	if _, err := newResponse(context.Background(), client, prompt, "", 20); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if time.Since(start) > 200*time.Millisecond {
		t.Error("slow fault fired twice")
	}
	deadline := time.Now().Add(time.Second)
	for len(sim.Calls("s")) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// The server may notice the disconnect after serving the retry, so order is not fixed.
	c := sim.Calls("s")
	if len(c) != 2 || (c[0].Outcome != "canceled") == (c[1].Outcome != "canceled") {
		t.Fatalf("calls = %+v", c)
	}
}

func TestResponsesSlowDelays(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	start := time.Now()
	if _, err := newResponse(context.Background(), client, "[[sim faults=slow@0:0.1]]", "", 20); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Error("slow fault did not delay the reply")
	}
}
