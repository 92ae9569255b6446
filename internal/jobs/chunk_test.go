package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/store"
)

// A payload that cannot be read, or names no job, is never retried, and its
// error keeps the decoding error's chain.
func TestDecodePayload(t *testing.T) {
	t.Parallel()
	var p ChunkPayload
	err := decodePayload("chunk", []byte(`{"job_id":`), &p)
	var syntax *json.SyntaxError
	if !errors.Is(err, asynq.SkipRetry) || !errors.As(err, &syntax) {
		t.Fatalf("truncated payload: %v", err)
	}
	if err := decodePayload("chunk", []byte(`{"seq":1}`), &p); !errors.Is(err, asynq.SkipRetry) || !strings.Contains(err.Error(), "no job_id") {
		t.Fatalf("payload without a job: %v", err)
	}
	if err := decodePayload("chunk", []byte(`{"job_id":"j","seq":2}`), &p); err != nil || p.JobID != "j" || p.Seq != 2 {
		t.Fatalf("good payload: %+v %v", p, err)
	}
}

// The error policy's verdict on a failed call: stop and ignore end
// generation at once; retry ends it when its own budget or asynq's is spent.
func TestPolicyStop(t *testing.T) {
	t.Parallel()
	retry := carryovertype.Rule{Action: carryovertype.ActionRetry}
	for _, c := range []struct {
		name                            string
		rule                            carryovertype.Rule
		prior, limit, attempt, maxRetry int
		want                            continuation.StopReason
	}{
		{"stop", carryovertype.Rule{Action: carryovertype.ActionStop}, 0, 3, 0, 10, continuation.StopErrorForbade},
		{"ignore", carryovertype.Rule{Action: carryovertype.ActionIgnore}, 0, 3, 0, 10, continuation.StopErrorForbade},
		{"retry within its budget", retry, 2, 3, 2, 10, ""},
		{"retry budget spent", retry, 3, 3, 3, 10, continuation.StopRetryLimit},
		{"asynq's retries spent", retry, 1, 3, 10, 10, continuation.StopRetryLimit},
	} {
		if got := policyStop(c.rule, c.prior, c.limit, c.attempt, c.maxRetry); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// After a broken stream a stateful call continues the last response the
// server completed, sending what the broken ones delivered after it.
func TestAfterLastComplete(t *testing.T) {
	t.Parallel()
	id := func(s string) *string { return &s }
	chunks := []store.Chunk{
		{Content: "a", ResponseID: id("resp_0")},
		{Content: "b", ResponseID: id("resp_1")},
		{Content: "c", ResponseID: id("resp_2"), StreamBroken: true},
		{Content: "d", ResponseID: id("resp_3"), StreamBroken: true},
	}
	if prev, partial := afterLastComplete(chunks); prev != "resp_1" || partial != "cd" {
		t.Fatalf("got %q %q", prev, partial)
	}
	if prev, partial := afterLastComplete(chunks[:2]); prev != "resp_1" || partial != "" {
		t.Fatalf("nothing broken: %q %q", prev, partial)
	}
	if prev, partial := afterLastComplete(chunks[2:]); prev != "" || partial != "cd" {
		t.Fatalf("all broken: %q %q", prev, partial)
	}
}

// Each chat strategy's prompt: history asks to continue, overlap to repeat
// lines first (unless none fit), prefill sends none.
func TestChatPrompt(t *testing.T) {
	t.Parallel()
	partial := "id,name\n1,a\n2,b\n3,c\n"
	if got := chatPrompt(carryovertype.StrategyHistory, "csv", partial, 0, 1000); got != continuation.ContinuePrompt("csv") {
		t.Errorf("history: %q", got)
	}
	if got := chatPrompt(carryovertype.StrategyPrefill, "csv", partial, 0, 1000); got != "" {
		t.Errorf("prefill: %q", got)
	}
	n := continuation.OverlapLines("csv", partial, 0, 1000)
	if got := chatPrompt(carryovertype.StrategyOverlap, "csv", partial, 0, 1000); n == 0 || got != continuation.OverlapPrompt("csv", n) {
		t.Errorf("overlap (%d lines): %q", n, got)
	}
}
