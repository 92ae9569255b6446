package e2e_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/simulator"
)

// The merge gives back the model's document exactly after every way the
// simulator's model misbehaves at a continuation, on every format, at
// several cut positions: the conversations are held through the real wire
// format (Responses API, previous_response_id) and merged as the merge task
// merges them. A join that cannot be placed must say so (merge_success
// false), never hand back a wrong document as a success.
func TestSimulatorConversationsMergeExactly(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(simulator.New(simulator.Config{}))
	defer ts.Close()
	p := provider.NewResponses(provider.Config{BaseURL: ts.URL + "/v1", APIKey: "sk-test"})
	behaviors := []string{"exact", "repeat_tail", "restart_line", "preamble", "fence", "overlap", "ignore_overlap",
		"wrap", "wrap_each", "chatty", "restart_top"}
	formats := []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"}
	for _, beh := range behaviors {
		for _, f := range formats {
			for _, budget := range []int{120, 300} {
				for seed := 1; seed <= 4; seed++ {
					name := fmt.Sprintf("%s/%s/budget=%d/seed=%d", beh, f, budget, seed)
					t.Run(name, func(t *testing.T) {
						prompt := fmt.Sprintf("[[sim format=%s size=3000 seed=%d behavior=%s tag=conv-%s]] go", f, seed, beh, name)
						doc, spec, _ := simulator.DocumentFor(prompt)
						if simulator.Stalls(spec, "gpt-4.1-mini", budget) {
							// Degenerate, not a merge case: a model that
							// restarts the line it was cut in (restart_line,
							// ignore_overlap) or echoes its last three lines
							// (overlap) never gets past a line, or three,
							// longer than its budget. Every continuation then
							// repeats the same text and the document is never
							// finished (the text's one-line paragraphs and
							// the JSON Lines records at 120 tokens).
							switch beh {
							case "restart_line", "ignore_overlap", "overlap":
								t.Skip("the model never progresses: its repeat takes the whole budget")
							}
							t.Fatal("the simulator stalls on a behavior that repeats a bounded amount")
						}
						var chunks []merge.Chunk
						prev := ""
						for i := 0; ; i++ {
							if i == 40 {
								t.Fatal("the model never finished")
							}
							req := continuation.CallRequest{Model: "gpt-4.1-mini", MaxOutputTokens: budget, Input: continuation.Input{Prompt: prompt}}
							if i > 0 {
								req.PreviousID, req.Prompt = prev, continuation.ContinuePrompt(f)
							}
							r, err := p.Call(context.Background(), req)
							if err != nil {
								t.Fatal(err)
							}
							prev = r.ID
							chunks = append(chunks, merge.Chunk{Seq: i, Text: r.Text, FinishReason: string(r.Finish)})
							if r.Finish != continuation.FinishLength {
								break
							}
						}
						res, err := merge.Merge(merge.Options{Format: f}, chunks)
						if err != nil {
							t.Fatal(err)
						}
						if res.Content != doc {
							n := firstDiff(res.Content, doc)
							t.Errorf("merged document differs from the model's at byte %d (merge_success=%v %s):\n got  %q\n want %q", n, res.Success, res.Error, res.Content[max(0, n-40):min(len(res.Content), n+40)], doc[max(0, n-40):min(len(doc), n+40)])
							if res.Success {
								t.Errorf("a wrong document was reported as a successful merge")
							}
						}
					})
				}
			}
		}
	}
}
