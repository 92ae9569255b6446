package simulator

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestDocumentsParse checks the structured formats are valid, so a merged
// result that fails to parse is the pipeline's fault, not the simulator's.
func TestDocumentsParse(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 42} {
		if _, err := csv.NewReader(strings.NewReader(Document(Spec{Format: "csv", Size: 4000, Seed: seed}))).ReadAll(); err != nil {
			t.Errorf("csv seed %d: %v", seed, err)
		}
		var obj struct{ Items []map[string]any }
		if err := json.Unmarshal([]byte(Document(Spec{Format: "json", Size: 4000, Seed: seed})), &obj); err != nil || len(obj.Items) == 0 {
			t.Errorf("json seed %d: %v (%d items)", seed, err, len(obj.Items))
		}
		sc := bufio.NewScanner(strings.NewReader(Document(Spec{Format: "jsonl", Size: 4000, Seed: seed})))
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Errorf("jsonl seed %d: invalid line %q", seed, sc.Text())
			}
		}
	}
	md := Document(Spec{Format: "markdown", Size: 3000, Seed: 1})
	if strings.Count(md, "\n## Notes\n") < 2 || !strings.Contains(md, "| --- |") || !strings.Contains(md, "```") {
		t.Errorf("markdown lacks repeated Notes, a table or a fence")
	}
	if d := Document(Spec{Format: "diff", Size: 2000, Seed: 1}); !strings.HasPrefix(d, "diff --git ") || !strings.Contains(d, "\n@@ -") {
		t.Errorf("diff lacks headers or hunks")
	}
}

// TestConcurrentChains runs 16 response chains of one directive at once: each
// must reassemble the whole document, and the directive's one 500 must reach
// exactly one of them, once. Any other error, or a 500 that persists, fails
// the test with the error instead of retrying forever.
func TestConcurrentChains(t *testing.T) {
	t.Parallel()
	const (
		chains     = 16
		maxRetries = 3   // consecutive 500s one chain may retry
		maxCalls   = 500 // far more than a 3000-byte document needs at 40 tokens a call
	)
	_, client := newTestClient(t, Config{})
	prompt := "[[sim format=jsonl size=3000 faults=500@1]]"
	want, _, _ := DocumentFor(prompt)
	var wg sync.WaitGroup
	var faults atomic.Int32
	for i := range chains {
		wg.Go(func() {
			got, retried, err := chain(client, prompt, maxRetries, maxCalls)
			faults.Add(int32(retried))
			switch {
			case err != nil:
				t.Errorf("chain %d: %v", i, err)
			case got != want:
				t.Errorf("chain %d: the document differs (%d bytes, want %d)", i, len(got), len(want))
			}
		})
	}
	wg.Wait()
	if n := faults.Load(); n != 1 {
		t.Errorf("the directive's one 500 was met %d times, want 1", n)
	}
}

// chain asks for prompt's answer 40 tokens at a time, continuing by
// previous_response_id until it is completed, and returns the text. A 500
// is retried up to maxRetries times in a row (retried counts them); any
// other error ends the chain.
func chain(client openai.Client, prompt string, maxRetries, maxCalls int) (text string, retried int, err error) {
	var got strings.Builder
	prev, consecutive := "", 0
	for range maxCalls {
		resp, err := newResponse(context.Background(), client, prompt, prev, 40)
		var apiErr *openai.Error
		switch {
		case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusInternalServerError && consecutive < maxRetries:
			consecutive++
			retried++
			continue
		case err != nil:
			return got.String(), retried, fmt.Errorf("after %d consecutive retries: %w", consecutive, err)
		}
		consecutive = 0
		got.WriteString(resp.OutputText())
		if resp.Status == "completed" {
			return got.String(), retried, nil
		}
		prev = resp.ID
	}
	return got.String(), retried, fmt.Errorf("not completed after %d calls", maxCalls)
}

func BenchmarkResponsesCall(b *testing.B) {
	sim := New(Config{})
	body := `{"model":"gpt-4o-mini","input":"[[sim format=csv size=20000]]","max_output_tokens":1024}`
	b.ReportAllocs()
	for b.Loop() {
		rec := newRecorder()
		req := newRequest("POST", "/v1/responses", body)
		sim.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkResponsesContinuation is a continuation by previous_response_id
// with an overlap prompt: the worker's hot path.
func BenchmarkResponsesContinuation(b *testing.B) {
	sim := New(Config{})
	rec := newRecorder()
	sim.ServeHTTP(rec, newRequest("POST", "/v1/responses", `{"model":"gpt-4o-mini","input":"[[sim format=csv size=200000]]","max_output_tokens":1024}`))
	var first struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &first); err != nil || first.ID == "" {
		b.Fatal(err, rec.Body.String())
	}
	body := `{"model":"gpt-4o-mini","previous_response_id":"` + first.ID + `","max_output_tokens":1024,` +
		`"input":"First repeat the last 6 lines you wrote, exactly, between markers, then continue."}`
	b.ReportAllocs()
	for b.Loop() {
		rec := newRecorder()
		sim.ServeHTTP(rec, newRequest("POST", "/v1/responses", body))
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkChatHistory is a chat continuation re-sending its history.
func BenchmarkChatHistory(b *testing.B) {
	doc, _, _ := DocumentFor("[[sim format=csv size=200000]]")
	a0, _ := json.Marshal(doc[:4096])
	body := `{"model":"gpt-4o-mini","max_tokens":1024,"messages":[{"role":"user","content":"[[sim format=csv size=200000]]"},` +
		`{"role":"assistant","content":` + string(a0) + `},{"role":"user","content":"continue"}]}`
	sim := New(Config{})
	b.ReportAllocs()
	for b.Loop() {
		rec := newRecorder()
		sim.ServeHTTP(rec, newRequest("POST", "/v1/chat/completions", body))
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

func TestStalls(t *testing.T) {
	t.Parallel()
	spec := func(format, behavior string) Spec {
		s, ok := ParseSpec("[[sim format=" + format + " size=3000 seed=1 behavior=" + behavior + "]]")
		if !ok {
			t.Fatal("bad directive")
		}
		return s
	}
	// The text's paragraphs are single lines of 400 bytes and more: a model
	// that restarts the line it was cut in never gets past one at 120
	// tokens (480 bytes at most), and one that echoes three never does.
	// restart_top reproduces at most half its budget, so it always gets on.
	// The whole-answer habits stall only when what they add fills the
	// budget: a fence line of two tokens, a remark before and after.
	for _, tt := range []struct {
		format, behavior string
		budget           int
		want             bool
	}{
		{"text", "exact", 120, false},
		{"text", "repeat_tail", 120, false},
		{"text", "fence", 120, false},
		{"text", "restart_line", 120, true},
		{"text", "overlap", 120, true},
		{"text", "restart_line", 300, false},
		{"text", "overlap", 300, false},
		{"text", "restart_top", 120, false},
		{"text", "restart_top", 2, false},
		{"text", "wrap", 120, false},
		{"text", "wrap_each", 2, false}, // text is never fenced
		{"csv", "wrap", 3, false},
		{"csv", "wrap", 2, true}, // the opening fence takes the whole first turn, every time
		{"csv", "wrap_each", 4, false},
		{"csv", "wrap_each", 3, true}, // the reopened fence leaves one token: the last one and the close never fit together
		{"text", "chatty", 120, false},
		{"text", "chatty", 5, true}, // a remark before, and one after that never fits
	} {
		if got := Stalls(spec(tt.format, tt.behavior), "gpt-4.1-mini", tt.budget); got != tt.want {
			t.Errorf("Stalls(%s, %s, %d) = %v, want %v", tt.format, tt.behavior, tt.budget, got, tt.want)
		}
	}
}
