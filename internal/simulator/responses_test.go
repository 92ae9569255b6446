package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	t.Parallel()
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
	t.Parallel()
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

// discardWriter is a ResponseWriter that keeps only the status, so a
// benchmark measures the handler and not a recorder's buffers.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkResponsesRequest is one non-streaming Responses call as the
// pipeline benchmark makes them: a first turn from a directive, and a
// continuation by previous_response_id.
func BenchmarkResponsesRequest(b *testing.B) {
	const first = `{"model":"gpt-4.1-mini","input":"[[sim format=text size=10084 seed=7]] Write.","max_output_tokens":64,"store":true}`
	sim := New(Config{MaxResponses: 4096})
	// continuation starts a conversation and returns the body of a request
	// continuing it. The stored response is evicted after MaxResponses
	// others, so the benchmark starts a new one well before.
	continuation := func() string {
		rec := newRecorder()
		sim.ServeHTTP(rec, newRequest("POST", "/v1/responses", first))
		var prev struct{ ID string }
		if err := json.Unmarshal(rec.Body.Bytes(), &prev); err != nil || prev.ID == "" {
			b.Fatal(err, rec.Body.String())
		}
		return `{"model":"gpt-4.1-mini","input":"Continue exactly where you stopped.","max_output_tokens":64,` +
			`"previous_response_id":"` + prev.ID + `","store":true}`
	}
	for _, bc := range []struct {
		name string
		body func() string
	}{
		{"first", func() string { return first }},
		{"continuation", continuation},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			req := newRequest("POST", "/v1/responses", "")
			body := strings.NewReader("")
			rc := io.NopCloser(body)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if n%1024 == 0 {
					b.StopTimer()
					body.Reset(bc.body())
					b.StartTimer()
				} else {
					_, _ = body.Seek(0, io.SeekStart)
				}
				n++
				req.Body, req.ContentLength = rc, body.Size()
				clear(w.h)
				sim.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatal(w.status)
				}
			}
		})
	}
}
