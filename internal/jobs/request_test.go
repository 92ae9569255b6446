package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/store"
)

func TestNormalizeDefaults(t *testing.T) {
	t.Parallel()
	r, err := Normalize(carryovertype.Request{Model: " gpt-4.1-mini ", Input: carryovertype.Input{Prompt: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gpt-4.1-mini" || r.Format != "auto" || r.MaxOutputTokens != carryovertype.DefaultMaxOutputTokens ||
		!r.Continuation.EnabledOrDefault() || r.Continuation.MaxAttempts != 10 || r.Continuation.OnFailure != carryovertype.OnFailurePartial {
		t.Fatalf("defaults not applied: %+v", r)
	}
}

func TestNormalizeNamesEveryBadField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    carryovertype.Request
		fields []string
	}{
		{"nothing", carryovertype.Request{}, []string{"model", "input"}},
		{"max_attempts high", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Continuation: carryovertype.Continuation{MaxAttempts: 51}}, []string{"continuation.max_attempts"}},
		{"max_attempts negative", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Continuation: carryovertype.Continuation{MaxAttempts: -1}}, []string{"continuation.max_attempts"}},
		{"on_failure", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Continuation: carryovertype.Continuation{OnFailure: "retry"}}, []string{"continuation.on_failure"}},
		{"format", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Format: "xml"}, []string{"format"}},
		{"max_output_tokens", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, MaxOutputTokens: 5}, []string{"max_output_tokens"}},
		{"metadata", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Metadata: json.RawMessage(`{bad`)}, []string{"metadata"}},
		{"idempotency_key", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, IdempotencyKey: strings.Repeat("k", 300)}, []string{"idempotency_key"}},
		{"message role and content", carryovertype.Request{Model: "m", Input: carryovertype.Input{Messages: []carryovertype.Message{{Role: "robot", Content: " "}}}},
			[]string{"input[0].role", "input[0].content"}},
		{"budgets", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Continuation: carryovertype.Continuation{MaxTotalOutputTokens: -1, MaxCostUSD: -0.5,
			TimeLimitSeconds: -3, StopSequence: strings.Repeat("s", 201)}},
			[]string{"continuation.max_total_output_tokens", "continuation.max_cost_usd", "continuation.time_limit_seconds", "continuation.stop_sequence"}},
		{"every problem of an error policy", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, Continuation: carryovertype.Continuation{
			ErrorPolicy: &carryovertype.ErrorPolicy{Preset: "retry_all", MaxRetries: 21, Rules: map[carryovertype.ErrorType]carryovertype.Rule{
				"network": {Action: "retry"}, "model": {Action: "skip"}, "tool": {Action: "stop", MaxConsecutiveRetries: 2}}}}},
			[]string{"continuation.error_policy.max_retries", "continuation.error_policy.rules.model.action",
				"continuation.error_policy.rules.network", "continuation.error_policy.rules.tool.max_consecutive_retries"}},
		{"every tool at fault", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"},
			Tools: json.RawMessage(`[{"type":"fn","name":"ok"},{"type":"function","name":"a b","parameters":{"type":12}}]`)},
			[]string{"tools[0].type", "tools[1].name", "tools[1].parameters"}},
		{"prompt and messages", carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p", Messages: []carryovertype.Message{{Role: "user", Content: "x"}}}}, []string{"input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(tt.req)
			var ve *carryovertype.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
				if f.Message == "" {
					t.Errorf("field %s has no message", f.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("fields %v, want %v (%v)", got, tt.fields, err)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f) {
					t.Fatalf("message %q does not name %s", err, f)
				}
			}
		})
	}
}

func TestInputJSON(t *testing.T) {
	t.Parallel()
	var r carryovertype.Request
	if err := json.Unmarshal([]byte(`{"model":"m","input":"hello"}`), &r); err != nil || r.Input.Prompt != "hello" {
		t.Fatalf("string input: %+v %v", r.Input, err)
	}
	if err := json.Unmarshal([]byte(`{"model":"m","input":[{"role":"user","content":"hi"}]}`), &r); err != nil ||
		len(r.Input.Messages) != 1 || r.Input.Messages[0].Content != "hi" {
		t.Fatalf("message input: %+v %v", r.Input, err)
	}
	if err := json.Unmarshal([]byte(`{"model":"m","input":[{"role":"user","text":"hi"}]}`), &r); err == nil {
		t.Fatal("unknown message field accepted")
	}
	if err := json.Unmarshal([]byte(`{"model":"m","input":42}`), &r); err == nil {
		t.Fatal("number input accepted")
	}
	b, _ := json.Marshal(carryovertype.Input{Messages: []carryovertype.Message{{Role: "user", Content: "x"}}})
	if string(b) != `[{"role":"user","content":"x"}]` {
		t.Fatalf("marshal: %s", b)
	}
}

func TestHashIgnoresIdempotencyKeyOnly(t *testing.T) {
	t.Parallel()
	a := carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, IdempotencyKey: "k1"}
	b := a
	b.IdempotencyKey = "k2"
	if requestHash(a) != requestHash(b) {
		t.Fatal("the key must not change the request hash")
	}
	b.Input.Prompt = "q"
	if requestHash(a) == requestHash(b) {
		t.Fatal("a different prompt must change the hash")
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	cached := 0.5
	p := &store.Price{Input: 2, CachedInput: &cached, Output: 8}
	// 1000 input of which 400 cached, 500 output of which 200 reasoning (inside output, billed once).
	got := Cost(p, store.Usage{Input: 1000, Cached: 400, Output: 500, Reasoning: 200})
	want := (600*2 + 400*0.5 + 500*8) / 1e6
	if got == nil || *got != want {
		t.Fatalf("cost %v, want %v", got, want)
	}
	if Cost(nil, store.Usage{Input: 1}) != nil {
		t.Fatal("an unpriced model must get no cost")
	}
	noCached := &store.Price{Input: 1, Output: 1}
	if c := Cost(noCached, store.Usage{Input: 10, Cached: 10}); *c != 10.0/1e6 {
		t.Fatalf("cached input without a cached price is billed at the input price: %v", *c)
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		d := RetryDelay(n, errors.New("500"), nil)
		if d < want*8/10 || d > want*12/10 {
			t.Errorf("retry %d: %s, want about %s", n, d, want)
		}
	}
	if d := RetryDelay(30, errors.New("500"), nil); d > 6*time.Minute {
		t.Errorf("backoff not capped: %s", d)
	}
	if d := RetryDelay(3, &RetryLater{Delay: 1500 * time.Millisecond}, nil); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("RetryLater delay not honored: %s", d)
	}
	// asynq keeps whole seconds, rounded down: the wait must end on a whole second at or after the asked time.
	now := time.Date(2026, 1, 1, 0, 0, 10, 900_000_000, time.UTC)
	for _, d := range []time.Duration{time.Second, 1500 * time.Millisecond, 100 * time.Millisecond} {
		got := roundUpToSecond(now, d)
		at := now.Add(got)
		if got < d || at.Nanosecond() != 0 || got-d >= time.Second {
			t.Errorf("roundUpToSecond(%s) = %s (ends at %s)", d, got, at.Format("15:04:05.000"))
		}
	}
	if IsFailure(&RetryLater{Delay: time.Second}) || !IsFailure(errors.New("x")) {
		t.Error("waiting must not count as failing; errors must")
	}
}

// Resume options are named as the caller sends them, and max_attempts
// counts the job's chunks: more than those stored, at most 50 more (the cap
// applies per execution).
func TestResumeOptionsChecked(t *testing.T) {
	t.Parallel()
	usedUp := &storedChunks{limit: 50, stored: 50}
	tests := []struct {
		name string
		o    carryovertype.ResumeOptions
		job  *storedChunks
		want []string // "field: words of its message"
	}{
		{"past the first cap", carryovertype.ResumeOptions{MaxAttempts: 100}, usedUp, nil},
		{"one more", carryovertype.ResumeOptions{MaxAttempts: 51}, usedUp, nil},
		{"under the stored chunks", carryovertype.ResumeOptions{MaxAttempts: 30}, usedUp, []string{"max_attempts: must be between 51 and 100, got 30"}},
		{"past the new cap", carryovertype.ResumeOptions{MaxAttempts: 101}, usedUp, []string{"max_attempts: must be between 51 and 100, got 101"}},
		{"a limit used up, left out", carryovertype.ResumeOptions{MaxRecords: 9}, usedUp, []string{"max_attempts: is needed"}},
		{"a limit not used up, left out", carryovertype.ResumeOptions{MaxRecords: 9}, &storedChunks{limit: 10, stored: 4}, nil},
		{"a resumed job's cap rises again", carryovertype.ResumeOptions{MaxAttempts: 150}, &storedChunks{limit: 100, stored: 100}, nil},
		{"without the job", carryovertype.ResumeOptions{MaxAttempts: 500}, nil, nil},
		{"every bad field", carryovertype.ResumeOptions{MaxAttempts: -1, MaxTotalOutputTokens: -1, MaxCostUSD: -1, TimeLimitSeconds: 1e9, MaxRecords: -1,
			ErrorPolicy: &carryovertype.ErrorPolicy{Preset: "often"}}, nil,
			[]string{"max_attempts: must be positive", "max_total_output_tokens: must not be negative", "max_cost_usd: must be a positive amount",
				"time_limit_seconds: must be between 0", "max_records: must not be negative", "error_policy.preset: must be one of"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v fieldErrors
			// As Enqueuer.Resume checks them: on their own, then against the job.
			v.resume(tt.o)
			if tt.job != nil {
				v.resumeAttempts(tt.o.MaxAttempts, tt.job)
			}
			if len(v) != len(tt.want) {
				t.Fatalf("got %v, want %v", v, tt.want)
			}
			for i, w := range tt.want {
				field, words, _ := strings.Cut(w, ": ")
				if v[i].Field != field || !strings.Contains(v[i].Message, words) {
					t.Fatalf("error %d is %s: %s, want %s", i, v[i].Field, v[i].Message, w)
				}
			}
		})
	}
}
