package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/store"
)

// A model that fences its whole answer (behavior=wrap) gets the bare
// document back, through the real pipeline on Redis and Postgres: the
// merge takes the fence off, the job succeeds, and the metadata's envelope
// says what was removed and why (unwrapped_fence), so an operator can see
// that the stored chunks and the result differ, and where. A single-chunk
// answer is the case that matters most: nothing is continued, yet the
// result must not keep the fence.
func TestWrappedAnswerIsUnwrapped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	cases := []struct {
		name, format string
		size         int
		maxTokens    int
		single       bool // the answer fits in one chunk
	}{
		{"json, one chunk", "json", 1500, 2000, true},
		{"csv, one chunk", "csv", 1500, 2000, true},
		{"json, several chunks", "json", 1500, 120, false},
	}
	ids := make([]job, len(cases))
	for i, c := range cases {
		ids[i] = h.enqueue(fmt.Sprintf("format=%s size=%d seed=%d behavior=wrap", c.format, c.size, i+31),
			client.Request{Format: c.format, MaxOutputTokens: c.maxTokens})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := ids[i]
			st := h.wait(j.id, 60*time.Second)
			chunks, err := h.store.Chunks(context.Background(), j.id, store.ChunkTexts)
			if err != nil {
				t.Fatal(err)
			}
			// The model did fence its answer: the habit is in the stored chunks.
			if len(chunks) == 0 || !strings.HasPrefix(chunks[0].Content, "```"+c.format+"\n") ||
				!strings.HasSuffix(chunks[len(chunks)-1].Content, "\n```\n") {
				t.Fatalf("the model's answer is not fenced (%d chunks)", len(chunks))
			}
			if c.single != (len(chunks) == 1) {
				t.Fatalf("%d chunks; want one: %v", len(chunks), c.single)
			}
			res, err := h.client.Result(context.Background(), j.id)
			if err != nil {
				t.Fatal(err)
			}
			var meta jobs.Metadata
			if err := json.Unmarshal(res.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
			if st.Status != "succeeded" || st.StopReason != "completed" {
				t.Errorf("status %s stop_reason %s (%s), want succeeded completed", st.Status, st.StopReason, st.Error)
			}
			if res.Content != j.doc {
				n := firstDiff(res.Content, j.doc)
				t.Errorf("result differs from the bare document at byte %d: got %q, want %q", n,
					res.Content[max(0, n-20):min(len(res.Content), n+20)], j.doc[max(0, n-20):min(len(j.doc), n+20)])
			}
			unwrapped := 0
			for _, r := range meta.Envelope {
				if r.Why != merge.WhyUnwrappedFence {
					continue
				}
				unwrapped++
				if !strings.Contains(r.Removed, "```") || r.Chunk != 0 && r.Chunk != len(chunks)-1 {
					t.Errorf("envelope removal %+v: want a fence line of the first or the last chunk", r)
				}
			}
			if unwrapped == 0 {
				t.Errorf("no %q removal in the metadata's envelope: %+v", merge.WhyUnwrappedFence, meta.Envelope)
			}
		})
	}
}
