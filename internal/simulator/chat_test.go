package simulator

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func TestChatHistoryReassemblesDocument(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"csv", "json", "markdown", "diff"} {
		t.Run(format, func(t *testing.T) {
			sim, client := newTestClient(t, Config{})
			prompt := "[[sim format=" + format + " size=1500 tag=h]]"
			want, _, _ := DocumentFor(prompt)
			system := "You write documents. " + strings.Repeat("Keep the format. ", 30)
			msgs := []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage(system),
				openai.UserMessage(prompt),
			}
			sent := len(system) + len(prompt) // every message sent, history included
			prefix := 0                       // what the previous request's prompt was
			var got strings.Builder
			for i := 0; ; i++ {
				cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model:     "gpt-4o-mini",
					Messages:  msgs,
					MaxTokens: openai.Int(100),
				})
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				choice := cc.Choices[0]
				got.WriteString(choice.Message.Content)
				if choice.FinishReason == "stop" {
					break
				}
				if choice.FinishReason != "length" {
					t.Fatalf("call %d: finish_reason %q", i, choice.FinishReason)
				}
				u := cc.Usage
				if u.PromptTokens != int64(tokensOf(sent)) {
					t.Errorf("call %d: prompt tokens %d, want %d (every message)", i, u.PromptTokens, tokensOf(sent))
				}
				if want := int64(cachedTokens(tokensOf(prefix))); i > 0 && (want == 0 || u.PromptTokensDetails.CachedTokens != want) {
					t.Errorf("call %d: cached tokens %d, want %d", i, u.PromptTokensDetails.CachedTokens, want)
				}
				if i == 0 && u.PromptTokensDetails.CachedTokens != 0 {
					t.Errorf("first call: cached tokens %d", u.PromptTokensDetails.CachedTokens)
				}
				prefix = sent
				sent += len(choice.Message.Content) + len("continue")
				msgs = append(msgs, openai.AssistantMessage(choice.Message.Content), openai.UserMessage("continue"))
			}
			if got.String() != want {
				t.Fatalf("reassembled %d bytes, want %d", got.Len(), len(want))
			}
			calls := sim.Calls("h")
			for i, c := range calls {
				if c.Depth != i || c.API != "chat" {
					t.Fatalf("call %d = %+v", i, c)
				}
			}
		})
	}
}

func TestChatContinueFinalMessage(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	prompt := "[[sim format=jsonl size=800 behavior=preamble]]"
	want, _, _ := DocumentFor(prompt)
	partial := ""
	for i := 0; ; i++ {
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}
		var opts []option.RequestOption
		if partial != "" {
			msgs = append(msgs, openai.AssistantMessage(partial))
			opts = append(opts, option.WithJSONSet("continue_final_message", true))
		}
		cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:               "gpt-4o-mini",
			Messages:            msgs,
			MaxCompletionTokens: openai.Int(64),
		}, opts...)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		// Prefill continues in place: no preamble even though the behaviour asks for one.
		partial += cc.Choices[0].Message.Content
		if cc.Choices[0].FinishReason == "stop" {
			break
		}
	}
	if partial != want {
		t.Fatalf("got %d bytes, want %d", len(partial), len(want))
	}
}

func TestChatFaults(t *testing.T) {
	t.Parallel()
	sim, client := newTestClient(t, Config{})
	prompt := "[[sim tag=cf faults=429@1:3,content_filter@2,failed@3]]"
	doc, _, _ := DocumentFor(prompt)
	ctx := context.Background()
	call := func(assistant ...string) (*openai.ChatCompletion, error) {
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}
		for _, a := range assistant {
			msgs = append(msgs, openai.AssistantMessage(a), openai.UserMessage("continue"))
		}
		return client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: openai.Int(10)})
	}
	first, err := call()
	if err != nil {
		t.Fatal(err)
	}
	a1 := first.Choices[0].Message.Content
	var apiErr *openai.Error
	if _, err := call(a1); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Response.Header.Get("Retry-After") != "3" {
		t.Fatalf("depth 1: %v", err)
	}
	second, err := call(a1)
	if err != nil {
		t.Fatal(err)
	}
	a2 := second.Choices[0].Message.Content
	if a1+a2 != doc[:len(a1+a2)] {
		t.Fatal("depth 1 retry did not continue the document")
	}
	third, err := call(a1, a2)
	if err != nil || third.Choices[0].FinishReason != "content_filter" {
		t.Fatalf("depth 2: %v %+v", err, third)
	}
	if _, err := call(a1, a2, third.Choices[0].Message.Content); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Fatalf("depth 3: %v", err)
	}
	var outcomes []string
	for _, c := range sim.Calls("cf") {
		outcomes = append(outcomes, c.Outcome)
	}
	want := "incomplete:max_output_tokens error:429 incomplete:max_output_tokens incomplete:content_filter error:500"
	if got := strings.Join(outcomes, " "); got != want {
		t.Fatalf("outcomes = %s\nwant %s", got, want)
	}
}

func TestChatReasoningUsage(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:     "o3",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("[[sim]]")},
		MaxTokens: openai.Int(64),
	})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "" || cc.Choices[0].FinishReason != "length" ||
		cc.Usage.CompletionTokensDetails.ReasoningTokens != 64 || cc.Usage.CompletionTokens != 64 {
		t.Fatalf("got %+v usage %+v", cc.Choices[0], cc.Usage)
	}
}
