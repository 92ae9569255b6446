package simulator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// continueAll drives a Responses API chain to completion and returns the
// concatenated text and every response.
func continueAll(t *testing.T, client openai.Client, prompt string, maxTokens int64, model string) (string, []*responses.Response) {
	t.Helper()
	ctx := context.Background()
	var (
		out   strings.Builder
		resps []*responses.Response
		prev  string
	)
	for i := 0; i < 10000; i++ {
		params := responses.ResponseNewParams{
			Model:           model,
			MaxOutputTokens: openai.Int(maxTokens),
		}
		if prev == "" {
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}
		} else {
			params.PreviousResponseID = openai.String(prev)
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("Continue exactly where you stopped.")}
		}
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		resps = append(resps, resp)
		out.WriteString(resp.OutputText())
		switch resp.Status {
		case "completed":
			return out.String(), resps
		case "incomplete":
			if resp.IncompleteDetails.Reason != "max_output_tokens" {
				t.Fatalf("call %d: incomplete reason %q", i, resp.IncompleteDetails.Reason)
			}
		default:
			t.Fatalf("call %d: status %q", i, resp.Status)
		}
		prev = resp.ID
	}
	t.Fatal("chain did not complete")
	return "", nil
}

func TestResponsesChainReassemblesDocument(t *testing.T) {
	_, client := newTestClient(t, Config{})
	for _, format := range []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"} {
		for _, maxTokens := range []int64{1, 7, 64, 4096} {
			t.Run(fmt.Sprintf("%s/max%d", format, maxTokens), func(t *testing.T) {
				prompt := fmt.Sprintf("Write it. [[sim format=%s size=3000 seed=7 tag=chain-%s-%d]]", format, format, maxTokens)
				want, _, ok := DocumentFor(prompt)
				if !ok {
					t.Fatal("DocumentFor: no directive found")
				}
				got, resps := continueAll(t, client, prompt, maxTokens, "gpt-4o-mini")
				if got != want {
					t.Fatalf("reassembled document differs (got %d bytes, want %d)", len(got), len(want))
				}
				wantCalls := 1
				if maxTokens < 4096 {
					wantCalls = (len(want) + 4*int(maxTokens) - 1) / (4 * int(maxTokens))
				}
				if maxTokens > 1 && len(resps) < wantCalls {
					t.Errorf("got %d calls, want at least %d", len(resps), wantCalls)
				}
				if resps[0].Usage.OutputTokens > maxTokens {
					t.Errorf("output tokens %d over budget %d", resps[0].Usage.OutputTokens, maxTokens)
				}
			})
		}
	}
}

func TestDocumentsAreValidUTF8AndEndWithNewline(t *testing.T) {
	for _, format := range []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"} {
		for _, seed := range []int64{1, 2, 3, 99} {
			for _, size := range []int{1, 100, 5000} {
				doc := Document(Spec{Format: format, Size: size, Seed: seed})
				if !utf8.ValidString(doc) {
					t.Errorf("%s seed=%d size=%d: invalid UTF-8", format, seed, size)
				}
				if !strings.HasSuffix(doc, "\n") {
					t.Errorf("%s seed=%d size=%d: no trailing newline", format, seed, size)
				}
				if size == 5000 && (len(doc) < size*8/10 || len(doc) > size*12/10) {
					t.Errorf("%s seed=%d: size %d far from %d", format, seed, len(doc), size)
				}
			}
		}
	}
}
