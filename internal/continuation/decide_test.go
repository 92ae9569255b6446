package continuation

import (
	"testing"
	"time"
)

func ptr(f float64) *float64 { return &f }

func TestDecide(t *testing.T) {
	t.Parallel()
	const shaA, shaB = "aaaa", "bbbb"
	tests := []struct {
		name           string
		s              State
		wantContinue   bool
		wantStop       StopReason
		wantResolvedBy string
	}{
		{"cut off: continue", State{Seq: 0, Finish: FinishLength, Text: "x", TextSHA: shaA, Enabled: true, MaxAttempts: 10},
			true, "", "finish_reason"},
		{"finished", State{Seq: 3, Finish: FinishStop, Text: "x", Enabled: true, MaxAttempts: 10},
			false, StopCompleted, "finish_reason"},
		{"last allowed chunk completed is completed, not a limit", State{Seq: 9, Finish: FinishStop, Text: "x", Enabled: true, MaxAttempts: 10},
			false, StopCompleted, "finish_reason"},
		{"max attempts reached while cut off", State{Seq: 9, Finish: FinishLength, Text: "x", TextSHA: shaA, PreviousSHA: shaB, Enabled: true, MaxAttempts: 10},
			false, StopStepsLimit, "max_attempts"},
		{"one attempt allowed", State{Seq: 0, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 1},
			false, StopStepsLimit, "max_attempts"},
		{"continuation disabled", State{Seq: 0, Finish: FinishLength, Text: "x", Enabled: false, MaxAttempts: 10},
			false, StopStepsLimit, "continuation_enabled"},
		{"content filter forbids", State{Seq: 1, Finish: FinishContentFilter, Text: "x", Enabled: true, MaxAttempts: 10},
			false, StopFinishReason, "finish_reason"},
		{"other incompleteness forbids", State{Seq: 1, Finish: FinishIncomplete, Text: "x", Enabled: true, MaxAttempts: 10},
			false, StopFinishReason, "finish_reason"},
		{"tool calls stop as completed", State{Seq: 0, Finish: FinishToolCalls, Enabled: true, MaxAttempts: 10},
			false, StopCompleted, "finish_reason"},
		{"empty cut-off chunk is no progress", State{Seq: 2, Finish: FinishLength, Text: "", Enabled: true, MaxAttempts: 10},
			false, StopNoProgress, "no_progress"},
		{"chunk identical to the previous is no progress", State{Seq: 2, Finish: FinishLength, Text: "x", TextSHA: shaA, PreviousSHA: shaA, Enabled: true, MaxAttempts: 10},
			false, StopNoProgress, "no_progress"},
		{"first chunk has no previous", State{Seq: 0, Finish: FinishLength, Text: "x", TextSHA: shaA, PreviousSHA: shaA, Enabled: true, MaxAttempts: 10},
			true, "", "finish_reason"},
		{"token budget used up", State{Seq: 2, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 10, OutputTokens: 300,
			Budgets: Budgets{MaxOutputTokens: 300}}, false, StopTokenLimit, "token_budget"},
		{"token budget left", State{Seq: 2, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 10, OutputTokens: 299,
			Budgets: Budgets{MaxOutputTokens: 300}}, true, "", "finish_reason"},
		{"a completed answer over budget is still completed", State{Seq: 2, Finish: FinishStop, Text: "x", Enabled: true, MaxAttempts: 10,
			OutputTokens: 900, Budgets: Budgets{MaxOutputTokens: 300}}, false, StopCompleted, "finish_reason"},
		{"cost budget used up", State{Seq: 1, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 10, CostUSD: ptr(0.02),
			Budgets: Budgets{MaxCostUSD: 0.01}}, false, StopCostLimit, "cost_budget"},
		{"cost budget on an unpriced model", State{Seq: 0, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 10,
			Budgets: Budgets{MaxCostUSD: 1}}, false, StopCostLimit, "cost_budget"},
		{"time limit reached", State{Seq: 1, Finish: FinishLength, Text: "x", Enabled: true, MaxAttempts: 10, Elapsed: 2 * time.Second,
			Budgets: Budgets{TimeLimit: time.Second}}, false, StopTimeLimit, "time_limit"},
		{"stop sequence in the chunk", State{Seq: 1, Finish: FinishLength, Text: "a END b", Enabled: true, MaxAttempts: 10,
			Budgets: Budgets{StopSequence: "END"}}, false, StopGuardForbade, "stop_sequence"},
		{"stop sequence across the cut", State{Seq: 1, Finish: FinishLength, Text: "D b", PreviousTail: "a EN", Enabled: true, MaxAttempts: 10,
			Budgets: Budgets{StopSequence: "END"}}, false, StopGuardForbade, "stop_sequence"},
		{"stop sequence wholly in the previous chunk is not seen again", State{Seq: 1, Finish: FinishLength, Text: "b", PreviousTail: "END a", Enabled: true, MaxAttempts: 10,
			Budgets: Budgets{StopSequence: "END"}}, true, "", "finish_reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Decide(tt.s, DefaultCriteria())
			if out.ShouldContinue != tt.wantContinue || out.StopReason != tt.wantStop || out.ResolvedBy != tt.wantResolvedBy {
				t.Fatalf("got continue=%v stop=%q resolved_by=%q, want %v %q %q (evaluations %+v)",
					out.ShouldContinue, out.StopReason, out.ResolvedBy, tt.wantContinue, tt.wantStop, tt.wantResolvedBy, out.Evaluations)
			}
			if len(out.Evaluations) == 0 {
				t.Fatal("every decision must record its evaluations")
			}
			for _, ev := range out.Evaluations {
				if ev.Criterion == "" || ev.Reason == "" {
					t.Fatalf("evaluation without criterion or reason: %+v", ev)
				}
			}
		})
	}
}

// fixed is a criterion that always says the same thing.
type fixed struct {
	name string
	d    Decision
}

func (f fixed) Name() string { return f.name }
func (f fixed) Evaluate(State) (Evaluation, bool) {
	return Evaluation{Decision: f.d, Reason: "fixed", StopReason: StopGuardForbade}, true
}

func TestDecidePriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		decisions []Decision
		want      Decision
		by        string
	}{
		{[]Decision{AllowContinuation, AllowStop, RequestContinuation, ForbidContinuation}, ForbidContinuation, "c3"},
		{[]Decision{AllowStop, RequestContinuation, AllowContinuation}, RequestContinuation, "c1"},
		{[]Decision{AllowContinuation, AllowStop}, AllowStop, "c1"},
		{[]Decision{AllowContinuation}, AllowContinuation, "default"},
		{nil, AllowContinuation, "default"},
	}
	for _, tt := range tests {
		var cs []Criterion
		for i, d := range tt.decisions {
			cs = append(cs, fixed{name: "c" + string(rune('0'+i)), d: d})
		}
		out := Decide(State{}, cs)
		if out.Decision != tt.want || out.ResolvedBy != tt.by {
			t.Errorf("%v: got %s by %s, want %s by %s", tt.decisions, out.Decision, out.ResolvedBy, tt.want, tt.by)
		}
		if len(out.Evaluations) != len(tt.decisions) {
			t.Errorf("%v: %d evaluations recorded", tt.decisions, len(out.Evaluations))
		}
	}
}
