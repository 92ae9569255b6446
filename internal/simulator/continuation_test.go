package simulator

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestResponsesIncompleteAndUsage(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	ctx := context.Background()
	prompt := "[[sim format=text size=2000]]"
	first, err := newResponse(ctx, client, prompt, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "incomplete" || first.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("status %q reason %q", first.Status, first.IncompleteDetails.Reason)
	}
	if first.Usage.OutputTokens != 10 || first.Usage.InputTokens != int64(tokensOf(len(prompt))) || first.Usage.InputTokensDetails.CachedTokens != 0 {
		t.Fatalf("usage = %+v", first.Usage)
	}
	if !strings.HasPrefix(first.ID, "resp_") || first.Output[0].Type != "message" || !strings.HasPrefix(first.Output[0].ID, "msg_") {
		t.Fatalf("ids: %q %+v", first.ID, first.Output[0])
	}
	second, err := newResponse(ctx, client, "go on", first.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	prevTurns := len(prompt) + len(first.OutputText())
	// The stored conversation is cached, in whole 16-token blocks.
	if second.Usage.InputTokensDetails.CachedTokens != int64(cachedTokens(tokensOf(prevTurns))) ||
		second.Usage.InputTokens != int64(tokensOf(prevTurns+len("go on"))) {
		t.Fatalf("usage = %+v", second.Usage)
	}
	if second.PreviousResponseID != first.ID {
		t.Fatalf("previous_response_id = %q", second.PreviousResponseID)
	}
	got, err := client.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != second.OutputText() || got.Status != second.Status {
		t.Fatalf("GET returned a different response")
	}
}

func TestResponsesUnknownPrevious(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	_, err := newResponse(context.Background(), client, "continue", "resp_nope", 10)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Param != "previous_response_id" {
		t.Fatalf("got %v", err)
	}
}

func TestResponsesEviction(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{MaxResponses: 2})
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		r, err := newResponse(ctx, client, "[[sim]]", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if _, err := newResponse(ctx, client, "go", ids[0], 10); err == nil {
		t.Fatal("oldest response was not evicted")
	}
	if _, err := newResponse(ctx, client, "go", ids[2], 10); err != nil {
		t.Fatalf("newest response: %v", err)
	}
}

func TestReasoningBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		prompt, model string
		maxTokens     int64
		wantReasoning int64
		wantText      bool
		wantItem      bool
	}{
		{"explicit", "[[sim reasoning=30]]", "gpt-4o-mini", 100, 30, true, true},
		{"model default", "[[sim]]", "o3-mini", 100, 64, true, true},
		{"gpt-5 default", "[[sim]]", "gpt-5", 100, 64, true, true},
		{"exhausted", "[[sim reasoning=200]]", "gpt-4o-mini", 100, 100, false, true},
		{"model default exhausted", "[[sim]]", "o4-mini", 64, 64, false, true},
		{"none", "[[sim]]", "gpt-4o-mini", 100, 0, true, false},
		{"explicit zero on reasoning model", "[[sim reasoning=0]]", "o3", 100, 0, true, false},
	}
	_, client := newTestClient(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
				Model:           tt.model,
				MaxOutputTokens: openai.Int(tt.maxTokens),
				Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(tt.prompt)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" {
				t.Fatalf("status %q reason %q", resp.Status, resp.IncompleteDetails.Reason)
			}
			if resp.Usage.OutputTokensDetails.ReasoningTokens != tt.wantReasoning || resp.Usage.OutputTokens != tt.maxTokens {
				t.Fatalf("usage = %+v", resp.Usage)
			}
			if (resp.OutputText() != "") != tt.wantText {
				t.Fatalf("text = %q", resp.OutputText())
			}
			if hasItem := len(resp.Output) > 0 && resp.Output[0].Type == "reasoning"; hasItem != tt.wantItem {
				t.Fatalf("output = %+v", resp.Output)
			}
			if tt.wantText {
				if got := len(resp.OutputText()); got > 4*int(tt.maxTokens-tt.wantReasoning) {
					t.Fatalf("%d bytes of text over a %d-token visible budget", got, tt.maxTokens-tt.wantReasoning)
				}
			}
		})
	}
}

// tokens counts text with the simulator's tokenizer.
func tokens(s string) int {
	_, n := advance(s, 0, len(s))
	return n
}

func TestBehaviors(t *testing.T) {
	t.Parallel()
	prompt := func(b string) string { return "[[sim format=csv size=1500 behavior=" + b + "]]" }
	doc, _, _ := DocumentFor(prompt("exact"))
	restartLine := func(e string) (string, string) { return e[strings.LastIndexByte(e, '\n')+1:], "" }
	tests := []struct {
		behavior string
		// extras builds what the behaviour adds around a continuation from what was emitted.
		extras func(emitted string) (pre, post string)
	}{
		{"exact", func(e string) (string, string) { return "", "" }},
		{"repeat_tail", func(e string) (string, string) { return e[runeStart(e, len(e)-40):], "" }}, // widened to a whole rune
		{"restart_line", restartLine},
		{"ignore_overlap", restartLine}, // without an overlap instruction, too
		{"preamble", func(e string) (string, string) { return "Sure, here is the continuation:\n\n", "" }},
		{"fence", func(e string) (string, string) { return "```\n", "" }}, // closed only by a turn that finishes
		{"overlap", func(e string) (string, string) {
			lines := strings.SplitAfter(e, "\n")
			tail := strings.Join(lines[len(lines)-3:], "")
			if !strings.HasSuffix(tail, "\n") {
				tail += "\n"
			}
			return "---BEGIN_OVERLAP---\n" + tail + "---END_OVERLAP---\n", ""
		}},
	}
	const budget = 120
	_, client := newTestClient(t, Config{})
	for _, tt := range tests {
		t.Run(tt.behavior, func(t *testing.T) {
			ctx := context.Background()
			first, err := newResponse(ctx, client, prompt(tt.behavior), "", budget)
			if err != nil {
				t.Fatal(err)
			}
			emitted := first.OutputText()
			if emitted != doc[:len(emitted)] {
				t.Fatal("depth 0 must be exact")
			}
			prev, end := first, len(emitted)
			// Extras do not advance the offset: each depth starts where the previous chunk ended.
			for depth := 1; depth <= 2; depth++ {
				resp, err := newResponse(ctx, client, "continue", prev.ID, budget)
				if err != nil {
					t.Fatal(err)
				}
				// Extras are written tokens too: they take their share of the budget.
				pre, post := tt.extras(doc[:end])
				next, _ := advance(doc, end, budget-tokens(pre)-tokens(post))
				if want := pre + doc[end:next] + post; resp.OutputText() != want {
					t.Fatalf("depth %d: got  %q\nwant %q", depth, resp.OutputText(), want)
				}
				if resp.Usage.OutputTokens != budget {
					t.Fatalf("depth %d: %d output tokens, want the whole budget %d", depth, resp.Usage.OutputTokens, budget)
				}
				prev, end = resp, next
			}
		})
	}
}

func TestTokenCutsNeverSplitRunes(t *testing.T) {
	t.Parallel()
	doc := "a🚀b東京ccccé"
	for n := 1; n < 10; n++ {
		for off := 0; off < len(doc); off++ {
			if !utf8RuneStart(doc[off]) {
				continue
			}
			end, _ := advance(doc, off, n)
			if end < len(doc) && !utf8RuneStart(doc[end]) {
				t.Fatalf("advance(%d, %d) = %d splits a rune", off, n, end)
			}
			if end-off > 4*n {
				t.Fatalf("advance(%d, %d) = %d exceeds budget", off, n, end)
			}
		}
	}
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// A fenced continuation is closed only by the turn that finishes the
// document, on a line of its own: a turn cut by the limit never got there.
func TestFenceClosesOnlyAFinishedDocument(t *testing.T) {
	t.Parallel()
	spec, _ := ParseSpec("[[sim format=csv size=1500 behavior=fence]]")
	doc := Document(spec)
	for _, budget := range []int{60, 120, 300} {
		offset := 0
		for depth := 0; ; depth++ {
			tr := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: budget})
			if depth == 0 {
				if tr.text != doc[:tr.end] {
					t.Fatalf("budget %d: depth 0 must be exact", budget)
				}
			} else {
				want := "```\n" + doc[offset:tr.end]
				if tr.status == statusCompleted {
					want += "```\n"
				}
				if tr.text != want {
					t.Fatalf("budget %d depth %d (%s): got %q, want %q", budget, depth, tr.status, tr.text, want)
				}
			}
			if tr.outputTokens > budget {
				t.Fatalf("budget %d depth %d: %d output tokens", budget, depth, tr.outputTokens)
			}
			if tr.status == statusCompleted {
				if tr.end != len(doc) {
					t.Fatalf("budget %d: completed at %d of %d", budget, tr.end, len(doc))
				}
				break
			}
			offset = tr.end
		}
	}
}
