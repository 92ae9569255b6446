package simulator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

var itemsSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"items": map[string]any{"type": "array"}},
	"required":             []string{"items"},
	"additionalProperties": false,
}

// formatted makes a call carrying an output format of kind ("", json_object,
// json_schema, strict): the first call of a conversation, or a continuation
// of it (Responses: previous_response_id; chat: the history so far).
func formatted(t *testing.T, client openai.Client, api, kind, directive string, history []string, prev string, budget int64) (text, id string) {
	t.Helper()
	ctx := context.Background()
	if api == apiResponses {
		params := responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(budget),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(directive)}}
		if prev != "" {
			params.PreviousResponseID = openai.String(prev)
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("continue")}
		}
		switch kind {
		case "json_object":
			params.Text.Format.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		case "json_schema", "strict":
			params.Text.Format.OfJSONSchema = &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "items", Schema: itemsSchema,
				Strict: openai.Bool(kind == "strict")}
		}
		r, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return r.OutputText(), r.ID
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(directive)}
	for _, h := range history {
		msgs = append(msgs, openai.AssistantMessage(h), openai.UserMessage("continue"))
	}
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxTokens: openai.Int(budget), Messages: msgs}
	switch kind {
	case "json_object":
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	case "json_schema", "strict":
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: "items", Schema: itemsSchema, Strict: openai.Bool(kind == "strict")}}
	}
	cc, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	return cc.Choices[0].Message.Content, cc.ID
}

// TestStructuredOutputs: the format is accepted and recorded; a strict
// schema on a continuation makes the model start the document over, which
// is why continuations must drop it.
func TestStructuredOutputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind       string
		wantFormat string
		structured bool
	}{
		{"", "", false},
		{"json_object", "json_object", false},
		{"json_schema", "json_schema", false},
		{"strict", "json_schema", true},
	}
	for _, api := range []string{apiResponses, apiChat} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s", api, tt.kind), func(t *testing.T) {
				sim, client := newTestClient(t, Config{})
				directive := "[[sim format=json size=3000 tag=s]]"
				doc, _, _ := DocumentFor(directive)
				first, id := formatted(t, client, api, tt.kind, directive, nil, "", 60)
				if first != doc[:len(first)] {
					t.Fatal("first call is not the document's start")
				}
				second, _ := formatted(t, client, api, tt.kind, directive, []string{first}, id, 60)
				start := len(first)
				if tt.structured {
					start = 0 // a new document
				}
				end, _ := advance(doc, start, 60)
				if second != doc[start:end] {
					t.Fatalf("continuation %q, want %q", second, doc[start:end])
				}
				// Dropping the format continues properly again.
				third, _ := formatted(t, client, api, "", directive, []string{first}, id, 60)
				end, _ = advance(doc, len(first), 60)
				if third != doc[len(first):end] {
					t.Fatalf("continuation without a format %q", third)
				}
				calls := sim.Calls("s")
				for i, c := range calls[:2] {
					if c.Format != tt.wantFormat || c.Structured != tt.structured || c.MaxTokens != 60 || c.Depth != i {
						t.Fatalf("call %d = %+v", i, c)
					}
				}
				if calls[2].Structured || calls[2].Format != "" {
					t.Fatalf("call 2 = %+v", calls[2])
				}
			})
		}
	}
}

// TestCallRecordsRequest: the call log keeps what the client asked for.
func TestCallRecordsRequest(t *testing.T) {
	t.Parallel()
	sim, client := newTestClient(t, Config{})
	ctx := context.Background()
	long := "[[sim tag=rec]] " + strings.Repeat("é", 5000) // 10000 bytes: the log keeps 8 KiB, whole runes
	if _, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(long)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxCompletionTokens: openai.Int(33),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("[[sim tag=rec]]"), openai.UserMessage("write"),
			openai.AssistantMessage("x"), openai.UserMessage("go on")}}); err != nil {
		t.Fatal(err)
	}
	c := sim.Calls("rec")
	if len(c) != 2 {
		t.Fatalf("calls %+v", c)
	}
	if c[0].MaxTokens != 0 || c[0].Stream || len(c[0].Prompt) != maxPromptLog || !strings.HasPrefix(long, c[0].Prompt) {
		t.Fatalf("responses call: max %d stream %v prompt %d bytes", c[0].MaxTokens, c[0].Stream, len(c[0].Prompt))
	}
	if c[1].MaxTokens != 33 || c[1].Prompt != "go on" || c[1].Depth != 1 {
		t.Fatalf("chat call %+v", c[1])
	}
}

// TestReasoningRetryWithHigherBudget: reasoning that uses the whole budget
// leaves no text; the same request with a higher budget then yields text.
func TestReasoningRetryWithHigherBudget(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	ctx := context.Background()
	prompt := "[[sim format=csv size=3000 reasoning=100]]"
	doc, _, _ := DocumentFor(prompt)
	for _, api := range []string{apiResponses, apiChat} {
		for i, budget := range []int64{80, 300} {
			var text string
			var reasoning, out int64
			if api == apiResponses {
				r, err := newResponse(ctx, client, prompt, "", budget)
				if err != nil {
					t.Fatal(err)
				}
				text, reasoning, out = r.OutputText(), r.Usage.OutputTokensDetails.ReasoningTokens, r.Usage.OutputTokens
			} else {
				cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "o3", MaxCompletionTokens: openai.Int(budget),
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
				if err != nil {
					t.Fatal(err)
				}
				text, reasoning, out = cc.Choices[0].Message.Content, cc.Usage.CompletionTokensDetails.ReasoningTokens, cc.Usage.CompletionTokens
			}
			if out != budget || reasoning != min(budget, 100) {
				t.Fatalf("%s budget %d: output %d reasoning %d", api, budget, out, reasoning)
			}
			if (text != "") != (i == 1) || text != doc[:len(text)] {
				t.Fatalf("%s budget %d: text %q", api, budget, text)
			}
			if end, _ := advance(doc, 0, int(budget-reasoning)); text != doc[:end] {
				t.Fatalf("%s budget %d: %d bytes of text, want %d", api, budget, len(text), end)
			}
		}
	}
}

// TestResponsesCachedTokens: a continuation's stored conversation (with the
// instructions re-sent ahead of it) is served from the prompt cache, in
// 16-token blocks; a first call has nothing cached.
func TestResponsesCachedTokens(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	ctx := context.Background()
	prompt := "[[sim format=text size=20000]] " + strings.Repeat("Write carefully. ", 30)
	instructions := "Be terse."
	call := func(input, prev string) *responses.Response {
		params := responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(200), Instructions: openai.String(instructions),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
		if prev != "" {
			params.PreviousResponseID = openai.String(prev)
		}
		r, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r0 := call(prompt, "")
	if r0.Usage.InputTokensDetails.CachedTokens != 0 {
		t.Fatalf("first call cached %d", r0.Usage.InputTokensDetails.CachedTokens)
	}
	r1 := call("continue", r0.ID)
	stored := tokensOf(len(instructions) + len(prompt) + len(r0.OutputText()))
	if u := r1.Usage; u.InputTokensDetails.CachedTokens != int64(cachedTokens(stored)) ||
		u.InputTokens != int64(tokensOf(len(instructions)+len(prompt)+len(r0.OutputText())+len("continue"))) {
		t.Fatalf("usage %+v, stored conversation %d tokens", u, stored)
	}
}
