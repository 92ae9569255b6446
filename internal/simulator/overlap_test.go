package simulator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// overlapPrompt is the kind of continuation prompt the overlap strategy sends.
func overlapPrompt(n int) string {
	return fmt.Sprintf("First repeat the last %d lines you wrote, exactly, between a line ---BEGIN_OVERLAP--- and a line "+
		"---END_OVERLAP---, then continue exactly where you stopped.", n)
}

func TestOverlapRequested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt string
		want   int
	}{
		{overlapPrompt(6), 6},
		{"Repeat The Last 1 line, then go on.", 1},
		{"REPEAT THE LAST 12 LINES", 12},
		{"repeat the last lines", 0},
		{"repeat the last 0 lines", 0},
		{"repeat the last 12 words", 0},
		{"continue", 0},
		{"", 0},
		{"do not repeat the last x lines; repeat the last 4 lines", 4},
	}
	for _, tt := range tests {
		if got := overlapRequested(tt.prompt); got != tt.want {
			t.Errorf("overlapRequested(%q) = %d, want %d", tt.prompt, got, tt.want)
		}
	}
}

// lastNLines is the test's own reading of "the last n lines": the last one
// possibly partial, always ending with a newline.
func lastNLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	tail := strings.Join(lines[max(0, len(lines)-n):], "")
	if !strings.HasSuffix(tail, "\n") {
		tail += "\n"
	}
	return tail
}

// continueOnce makes a depth-0 call and one continuation with prompt, over
// the Responses API (previous_response_id) or chat (history), and returns the
// first text, the second text and its output tokens.
func continueOnce(t *testing.T, client openai.Client, api, directive, prompt string, budget0, budget1 int64) (first, second string, outTokens int64) {
	t.Helper()
	ctx := context.Background()
	switch api {
	case apiResponses:
		r0, err := newResponse(ctx, client, directive, "", budget0)
		if err != nil {
			t.Fatal(err)
		}
		r1, err := newResponse(ctx, client, prompt, r0.ID, budget1)
		if err != nil {
			t.Fatal(err)
		}
		return r0.OutputText(), r1.OutputText(), r1.Usage.OutputTokens
	default:
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(directive)}
		c0, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: openai.Int(budget0)})
		if err != nil {
			t.Fatal(err)
		}
		a0 := c0.Choices[0].Message.Content
		msgs = append(msgs, openai.AssistantMessage(a0), openai.UserMessage(prompt))
		c1, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: openai.Int(budget1)})
		if err != nil {
			t.Fatal(err)
		}
		return a0, c1.Choices[0].Message.Content, c1.Usage.CompletionTokens
	}
}

func TestOverlapInstruction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behavior string
		n        int // N of the instruction; 0 sends a plain "continue"
		// pre is what the continuation writes before the document's next bytes.
		pre func(emitted string) string
	}{
		{"exact", 6, func(e string) string { return overlapBegin + lastNLines(e, 6) + overlapEnd }},
		{"exact", 1, func(e string) string { return overlapBegin + lastNLines(e, 1) + overlapEnd }},
		{"exact", 0, func(e string) string { return "" }},
		{"overlap", 6, func(e string) string { return overlapBegin + lastNLines(e, 6) + overlapEnd }},
		{"overlap", 0, func(e string) string { return overlapBegin + lastNLines(e, 3) + overlapEnd }},
		{"ignore_overlap", 6, func(e string) string { return e[strings.LastIndexByte(e, '\n')+1:] }},
		{"repeat_tail", 6, func(e string) string { return e[runeStart(e, len(e)-40):] }}, // other misbehaviours ignore it too
	}
	const budget = 400
	for _, api := range []string{apiResponses, apiChat} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s/%d", api, tt.behavior, tt.n), func(t *testing.T) {
				sim, client := newTestClient(t, Config{})
				directive := "[[sim format=csv size=6000 seed=4 tag=o behavior=" + tt.behavior + "]]"
				doc, _, _ := DocumentFor(directive)
				prompt := "continue"
				if tt.n > 0 {
					prompt = overlapPrompt(tt.n)
				}
				first, second, out := continueOnce(t, client, api, directive, prompt, 300, budget)
				pre := tt.pre(first)
				next, _ := advance(doc, len(first), budget-tokens(pre))
				if want := pre + doc[len(first):next]; second != want {
					t.Fatalf("got  %q\nwant %q", second, want)
				}
				if out != budget {
					t.Fatalf("output tokens %d, want %d: the repeated lines and markers are paid for", out, budget)
				}
				if c := sim.Calls("o"); len(c) != 2 || c[1].Prompt != prompt || c[0].Prompt != directive {
					t.Fatalf("calls = %+v", c)
				}
			})
		}
	}
}

// TestOverlapBlockCostsBudget: a budget smaller than the block writes part
// of the block and nothing of the document, so the next call starts from the
// same place.
func TestOverlapBlockCostsBudget(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	ctx := context.Background()
	directive := "[[sim format=markdown size=4000 seed=2]]"
	doc, _, _ := DocumentFor(directive)
	r0, err := newResponse(ctx, client, directive, "", 200)
	if err != nil {
		t.Fatal(err)
	}
	emitted := r0.OutputText()
	block := overlapBegin + lastNLines(emitted, 6) + overlapEnd
	r1, err := newResponse(ctx, client, overlapPrompt(6), r0.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r1.OutputText() != block[:len(r1.OutputText())] || r1.Usage.OutputTokens != 5 || r1.Status != "incomplete" {
		t.Fatalf("got %q (%d tokens, %s)", r1.OutputText(), r1.Usage.OutputTokens, r1.Status)
	}
	r2, err := newResponse(ctx, client, overlapPrompt(6), r1.ID, 400)
	if err != nil {
		t.Fatal(err)
	}
	next, _ := advance(doc, len(emitted), 400-tokens(block))
	if want := block + doc[len(emitted):next]; r2.OutputText() != want {
		t.Fatalf("got  %q\nwant %q", r2.OutputText(), want)
	}
}

// joinOverlap merges a continuation into got the way the overlap strategy
// means it: an overlap block must repeat the end of got and is dropped; a
// restarted line (a model ignoring the instruction) is dropped too.
func joinOverlap(t *testing.T, got, chunk string) string {
	t.Helper()
	if rest, ok := strings.CutPrefix(chunk, overlapBegin); ok {
		block, after, ok := strings.Cut(rest, overlapEnd)
		if !ok {
			t.Fatalf("unterminated overlap block in %q", chunk)
		}
		if strings.HasSuffix(got, "\n") && !strings.HasSuffix(got, block) ||
			!strings.HasSuffix(got, "\n") && !strings.HasSuffix(got+"\n", block) {
			t.Fatalf("overlap block %q does not repeat the end of the text", block)
		}
		return got + after
	}
	partial := got[strings.LastIndexByte(got, '\n')+1:]
	if partial != "" && strings.HasPrefix(chunk, partial) {
		return got + chunk[len(partial):]
	}
	return got + chunk
}

// TestOverlapStrategyReassembles runs whole conversations with the overlap
// prompt, over both APIs, and merges them back into the document: the
// simulator follows its own earlier turns, blocks and restarted lines
// included.
func TestOverlapStrategyReassembles(t *testing.T) {
	t.Parallel()
	for _, api := range []string{apiResponses, apiChat} {
		for _, behavior := range []string{"exact", "overlap", "ignore_overlap"} {
			t.Run(api+"/"+behavior, func(t *testing.T) {
				_, client := newTestClient(t, Config{})
				ctx := context.Background()
				directive := "[[sim format=json size=5000 seed=9 behavior=" + behavior + "]]"
				want, _, _ := DocumentFor(directive)
				got := ""
				msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(directive)}
				prev := ""
				for i := 0; ; i++ {
					if i > 200 {
						t.Fatal("no end")
					}
					var text string
					var done bool
					if api == apiResponses {
						input := directive
						if i > 0 {
							input = overlapPrompt(4)
						}
						r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(150),
							Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}, PreviousResponseID: optString(prev)})
						if err != nil {
							t.Fatal(err)
						}
						text, done, prev = r.OutputText(), r.Status == "completed", r.ID
					} else {
						c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: openai.Int(150)})
						if err != nil {
							t.Fatal(err)
						}
						text, done = c.Choices[0].Message.Content, c.Choices[0].FinishReason == "stop"
						msgs = append(msgs, openai.AssistantMessage(text), openai.UserMessage(overlapPrompt(4)))
					}
					if i == 0 {
						got = text
					} else {
						got = joinOverlap(t, got, text)
					}
					if !strings.HasPrefix(want, got) {
						t.Fatalf("call %d: merged text left the document", i)
					}
					if done {
						break
					}
				}
				if got != want {
					t.Fatalf("merged %d bytes, want %d", len(got), len(want))
				}
			})
		}
	}
}

func optString(s string) param.Opt[string] {
	if s == "" {
		return param.Opt[string]{}
	}
	return openai.String(s)
}
