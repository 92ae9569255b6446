package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
)

// BenchmarkStrategies runs the same documents through every continuation
// strategy on the simulator's misbehaving models (every behavior on every
// format) and prints, per strategy, the tokens billed per delivered output
// token — input (context re-sent) and output (repeats and chatter) — and the
// merge fidelity: the share of jobs whose merged document is exactly the
// model's. A table per strategy and behavior follows.
func BenchmarkStrategies(b *testing.B) {
	ctx := context.Background()
	c, pool, stop := startWorker(ctx, b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()

	strategies := carryovertype.Strategies()
	behaviors := []string{"exact", "repeat_tail", "restart_line", "preamble", "fence", "overlap", "ignore_overlap"}
	formats := []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"}
	const maxTokens, size = 120, 2400
	type run struct {
		id, doc            string
		strategy, behavior string
	}
	var runs []run
	seed := 0
	for _, s := range strategies {
		for _, beh := range behaviors {
			for _, f := range formats {
				seed++
				prompt := fmt.Sprintf("[[sim format=%s size=%d seed=%d behavior=%s tag=%s-%d]] Write the document.", f, size, seed%50+1, beh, s, seed)
				doc, _, ok := simulator.DocumentFor(prompt)
				if !ok {
					b.Fatalf("bad directive %q", prompt)
				}
				j, err := c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Format: f, MaxOutputTokens: maxTokens,
					Input: client.Input{Prompt: prompt}, Continuation: client.Continuation{MaxAttempts: 50, Strategy: s}})
				if err != nil {
					b.Fatal(err)
				}
				runs = append(runs, run{j.ID, doc, string(s), beh})
			}
		}
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.id
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var live int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1::uuid[]) AND status IN ('queued','running','merging')`,
			ids).Scan(&live); err != nil {
			b.Fatal(err)
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs still live after 10 minutes", live)
		}
		time.Sleep(100 * time.Millisecond)
	}

	type tally struct {
		jobs, exact, stalled     int
		input, output, delivered int64
	}
	per := map[string]*tally{}
	cell := map[string]*tally{}
	get := func(m map[string]*tally, k string) *tally {
		if m[k] == nil {
			m[k] = &tally{}
		}
		return m[k]
	}
	for _, r := range runs {
		var in, out int64
		var content, stop string
		if err := pool.QueryRow(ctx, `SELECT j.input_tokens, j.output_tokens, coalesce(r.content, ''), coalesce(j.stop_reason, '')
FROM jobs j LEFT JOIN job_results r ON r.job_id = j.id WHERE j.id = $1::uuid`, r.id).Scan(&in, &out, &content, &stop); err != nil {
			b.Fatal(err)
		}
		delivered := int64((len(r.doc) + 3) / 4) // the simulator's tokenizer: about 4 bytes a token
		for _, t := range []*tally{get(per, r.strategy), get(cell, r.strategy+"|"+r.behavior)} {
			t.jobs++
			t.input += in
			t.output += out
			t.delivered += delivered
			if content == r.doc {
				t.exact++
			}
			if stop == "no_progress" {
				t.stalled++
			}
		}
	}
	fmt.Printf("\nstrategies: %d documents each (%d formats x %d behaviors, %d bytes, %d-token calls), same Redis + Postgres\n",
		len(formats)*len(behaviors), len(formats), len(behaviors), size, maxTokens)
	fmt.Printf("%-10s %18s %19s %18s %10s\n", "strategy", "input per output", "output per output", "exact documents", "stalled")
	for _, s := range strategies {
		t := per[string(s)]
		fmt.Printf("%-10s %18.2f %19.3f %17.1f%% %10d\n", s, float64(t.input)/float64(t.delivered), float64(t.output)/float64(t.delivered),
			100*float64(t.exact)/float64(t.jobs), t.stalled)
	}
	fmt.Printf("(billed tokens per delivered output token; exact = the merged document equals the model's byte for byte;\n" +
		" stalled = stopped with no_progress: the model's restarted or echoed lines filled every reply, so no document to merge)\n")
	fmt.Printf("\nexact documents by strategy and behavior of the model\n%-16s", "behavior")
	for _, s := range strategies {
		fmt.Printf(" %9s", s)
	}
	fmt.Println()
	for _, beh := range behaviors {
		fmt.Printf("%-16s", beh)
		for _, s := range strategies {
			t := cell[string(s)+"|"+beh]
			fmt.Printf(" %8.1f%%", 100*float64(t.exact)/float64(t.jobs))
		}
		fmt.Println()
	}
	fmt.Println(strings.Repeat("-", 16+10*len(strategies)))
	// A model that continues exactly merges exactly under every strategy
	// (the e2e tests hold it): less is a broken pipeline, not a figure.
	for _, s := range strategies {
		if t := cell[string(s)+"|exact"]; t.exact != t.jobs {
			b.Errorf("%s: %d of %d documents of the exact model merged exactly", s, t.exact, t.jobs)
		}
	}
}
