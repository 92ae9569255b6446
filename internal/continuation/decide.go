package continuation

import (
	"fmt"
	"strings"
	"time"

	"github.com/carryover/carryover/carryovertype"
)

// Decision is what one criterion says after a chunk. When several speak,
// they are resolved in this priority: any forbid wins; else any request;
// else any allow-stop; else continue.
type Decision string

const (
	ForbidContinuation  Decision = "forbid_continuation"
	RequestContinuation Decision = "request_continuation"
	AllowStop           Decision = "allow_stop"
	AllowContinuation   Decision = "allow_continuation"
)

// StopReason is the closed set of reasons a job's generation ended, for UIs.
type StopReason string

const (
	StopCompleted     StopReason = "completed"
	StopStepsLimit    StopReason = "steps_limit_reached"
	StopTokenLimit    StopReason = "token_limit_reached"
	StopCostLimit     StopReason = "cost_limit_reached"
	StopTimeLimit     StopReason = "time_limit_reached"
	StopRetryLimit    StopReason = "retry_limit_reached"
	StopErrorForbade  StopReason = "error_forbade"
	StopFinishReason  StopReason = "finish_reason_received"
	StopGuardForbade  StopReason = "guard_forbade"
	StopNoProgress    StopReason = "no_progress"
	StopUserRequested StopReason = "user_requested"
)

// Evaluation is one criterion's verdict with its reason and context.
type Evaluation struct {
	Criterion  string         `json:"criterion"`
	Decision   Decision       `json:"decision"`
	Reason     string         `json:"reason"`
	StopReason StopReason     `json:"stop_reason,omitempty"` // what a stop caused by this verdict is called
	Context    map[string]any `json:"context,omitempty"`
}

// Outcome is the resolved decision after a chunk, with every evaluation.
type Outcome struct {
	Decision       Decision     `json:"decision"`
	ShouldContinue bool         `json:"should_continue"`
	ResolvedBy     string       `json:"resolved_by"`
	StopReason     StopReason   `json:"stop_reason,omitempty"`
	Evaluations    []Evaluation `json:"evaluations"`
}

// State is what the criteria see after a chunk.
type State struct {
	Seq         int // the chunk just produced, from 0
	Finish      FinishReason
	Text        string // the chunk's visible text
	TextSHA     string // sha256 of Text
	PreviousSHA string // sha256 of the chunk before it ("" for the first)
	Enabled     bool   // continuation enabled for the job
	MaxAttempts int    // most chunks a job may have
	// Totals after this chunk, and how long this execution has run.
	OutputTokens int64
	CostUSD      *float64 // nil when the model has no price
	Elapsed      time.Duration
	PreviousTail string // the end of the previous chunk, for a guard straddling the cut
	Budgets      Budgets
	// Records is how many records (CSV rows, JSON Lines, lines) chunks
	// 0..Seq hold, for the max_records guard.
	Records int64
	// StreamBroken: the chunk is what arrived before its stream broke.
	StreamBroken bool
	// ToolTruncated: the response ends in a tool call cut off by the limit.
	ToolTruncated bool
	// ToolError describes an unusable tool call ("" when none), and
	// ToolRule is what the job's error policy does with it. A retry rule
	// whose retries remain never gets here (the handler makes the call
	// again), so a retry rule here means its retries are spent.
	ToolError string
	ToolRule  carryovertype.Rule
	// Cancelled: the user cancelled the job while this chunk's call ran.
	Cancelled bool
}

// wantsMore reports whether the response asks to be continued: it was cut
// off by the limit (not inside a tool call), or its stream broke mid-answer.
func (s State) wantsMore() bool {
	return (s.Finish == FinishLength && !s.ToolTruncated) || (s.Finish == FinishIncomplete && s.StreamBroken)
}

// Budgets are a job's limits beyond max_attempts; zero means none.
type Budgets struct {
	MaxOutputTokens int64         // total output tokens (reasoning included) over all chunks
	MaxCostUSD      float64       // total estimated cost
	TimeLimit       time.Duration // from this execution's start, never from the job's creation
	StopSequence    string        // a guard: stop once the answer contains this text
	MaxRecords      int64         // a guard: stop once the answer holds this many records
}

// Criterion judges whether to continue after a chunk. It returns ok=false
// when it has nothing to say.
type Criterion interface {
	Name() string
	Evaluate(s State) (Evaluation, bool)
}

// DefaultCriteria are the criteria every job is judged by.
func DefaultCriteria() []Criterion {
	return []Criterion{finishCriterion{}, enabledCriterion{}, maxAttemptsCriterion{}, progressCriterion{},
		tokenBudgetCriterion{}, costBudgetCriterion{}, timeLimitCriterion{}, stopSequenceCriterion{},
		maxRecordsCriterion{}, errorPolicyCriterion{}, cancelCriterion{}}
}

// Decide evaluates every criterion and resolves their verdicts.
func Decide(s State, criteria []Criterion) Outcome {
	out := Outcome{Evaluations: make([]Evaluation, 0, len(criteria))}
	for _, c := range criteria {
		if ev, ok := c.Evaluate(s); ok {
			ev.Criterion = c.Name()
			out.Evaluations = append(out.Evaluations, ev)
		}
	}
	for _, want := range []Decision{ForbidContinuation, RequestContinuation, AllowStop} {
		for _, ev := range out.Evaluations {
			if ev.Decision != want {
				continue
			}
			out.Decision, out.ResolvedBy = want, ev.Criterion
			out.ShouldContinue = want == RequestContinuation
			if !out.ShouldContinue {
				out.StopReason = ev.StopReason
			}
			return out
		}
	}
	out.Decision, out.ResolvedBy, out.ShouldContinue = AllowContinuation, "default", true
	return out
}

// finishCriterion reads the finish reason: length asks for more; stop and
// tool calls allow a stop; a content filter or another incompleteness forbid.
type finishCriterion struct{}

func (finishCriterion) Name() string { return "finish_reason" }

func (finishCriterion) Evaluate(s State) (Evaluation, bool) {
	ctx := map[string]any{"finish_reason": string(s.Finish)}
	switch {
	case s.Finish == FinishLength && s.ToolTruncated:
		return Evaluation{Decision: ForbidContinuation, StopReason: StopFinishReason,
			Reason: "a tool call was cut off by the output-token limit; it is kept, marked truncated, and cannot be continued", Context: ctx}, true
	case s.StreamBroken && s.Finish == FinishIncomplete:
		return Evaluation{Decision: RequestContinuation, Reason: "the stream broke mid-answer; continuing from the text received", Context: ctx}, true
	}
	switch s.Finish {
	case FinishLength:
		return Evaluation{Decision: RequestContinuation, Reason: "cut off by the output-token limit", Context: ctx}, true
	case FinishStop:
		return Evaluation{Decision: AllowStop, StopReason: StopCompleted, Reason: "the model finished its answer", Context: ctx}, true
	case FinishToolCalls:
		return Evaluation{Decision: AllowStop, StopReason: StopCompleted, Reason: "the model asked for tool calls; they are kept, not continued", Context: ctx}, true
	case FinishContentFilter:
		return Evaluation{Decision: ForbidContinuation, StopReason: StopFinishReason, Reason: "stopped by the content filter", Context: ctx}, true
	default:
		return Evaluation{Decision: ForbidContinuation, StopReason: StopFinishReason, Reason: fmt.Sprintf("response ended %s and cannot be continued", s.Finish), Context: ctx}, true
	}
}

// enabledCriterion forbids continuing a job that turned continuation off.
type enabledCriterion struct{}

func (enabledCriterion) Name() string { return "continuation_enabled" }

func (enabledCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.Enabled || !s.wantsMore() {
		return Evaluation{}, false
	}
	return Evaluation{Decision: ForbidContinuation, StopReason: StopStepsLimit, Reason: "continuation is disabled for this job"}, true
}

// maxAttemptsCriterion forbids a chunk beyond max_attempts. It speaks only
// when more was asked for, so a job whose last allowed chunk completed is
// reported as completed.
type maxAttemptsCriterion struct{}

func (maxAttemptsCriterion) Name() string { return "max_attempts" }

func (maxAttemptsCriterion) Evaluate(s State) (Evaluation, bool) {
	if !s.wantsMore() {
		return Evaluation{}, false
	}
	ctx := map[string]any{"chunks": s.Seq + 1, "max_attempts": s.MaxAttempts}
	if s.Seq+1 >= s.MaxAttempts {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopStepsLimit, Reason: "max_attempts reached", Context: ctx}, true
	}
	return Evaluation{Decision: AllowContinuation, Reason: "attempts remain", Context: ctx}, true
}

// progressCriterion forbids continuing after a chunk that added nothing: an
// empty chunk (e.g. a reasoning-only incomplete response), or one identical to
// the chunk before. Continuing would pay for the same nothing again.
type progressCriterion struct{}

func (progressCriterion) Name() string { return "no_progress" }

func (progressCriterion) Evaluate(s State) (Evaluation, bool) {
	if !s.wantsMore() {
		return Evaluation{}, false
	}
	switch {
	case s.Text == "":
		return Evaluation{Decision: ForbidContinuation, StopReason: StopNoProgress, Reason: "the chunk has no visible text"}, true
	case s.Seq > 0 && s.PreviousSHA != "" && s.TextSHA == s.PreviousSHA:
		return Evaluation{Decision: ForbidContinuation, StopReason: StopNoProgress, Reason: "the chunk repeats the previous one"}, true
	}
	return Evaluation{}, false
}

// tokenBudgetCriterion forbids another chunk once the job's output tokens
// reach its budget. Like every limit it speaks only when more was asked for.
type tokenBudgetCriterion struct{}

func (tokenBudgetCriterion) Name() string { return "token_budget" }

func (tokenBudgetCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.Budgets.MaxOutputTokens <= 0 || !s.wantsMore() {
		return Evaluation{}, false
	}
	ctx := map[string]any{"output_tokens": s.OutputTokens, "max_total_output_tokens": s.Budgets.MaxOutputTokens}
	if s.OutputTokens >= s.Budgets.MaxOutputTokens {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopTokenLimit, Reason: "the output-token budget is used up", Context: ctx}, true
	}
	return Evaluation{Decision: AllowContinuation, Reason: "output tokens remain in the budget", Context: ctx}, true
}

// costBudgetCriterion forbids another chunk once the estimated cost reaches
// the budget. A model with no price cannot be held to a cost budget: that is
// refused, not guessed.
type costBudgetCriterion struct{}

func (costBudgetCriterion) Name() string { return "cost_budget" }

func (costBudgetCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.Budgets.MaxCostUSD <= 0 || !s.wantsMore() {
		return Evaluation{}, false
	}
	if s.CostUSD == nil {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopCostLimit,
			Reason: "the model has no price, so the cost budget cannot be checked"}, true
	}
	ctx := map[string]any{"cost_usd": *s.CostUSD, "max_cost_usd": s.Budgets.MaxCostUSD}
	if *s.CostUSD >= s.Budgets.MaxCostUSD {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopCostLimit, Reason: "the cost budget is used up", Context: ctx}, true
	}
	return Evaluation{Decision: AllowContinuation, Reason: "cost remains in the budget", Context: ctx}, true
}

// timeLimitCriterion forbids another chunk once this execution has run for
// the time limit.
type timeLimitCriterion struct{}

func (timeLimitCriterion) Name() string { return "time_limit" }

func (timeLimitCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.Budgets.TimeLimit <= 0 || !s.wantsMore() {
		return Evaluation{}, false
	}
	ctx := map[string]any{"elapsed_ms": s.Elapsed.Milliseconds(), "time_limit_ms": s.Budgets.TimeLimit.Milliseconds()}
	if s.Elapsed >= s.Budgets.TimeLimit {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopTimeLimit, Reason: "the time limit is reached", Context: ctx}, true
	}
	return Evaluation{Decision: AllowContinuation, Reason: "time remains", Context: ctx}, true
}

// stopSequenceCriterion is a guard: once the answer contains the job's stop
// sequence — even split across the cut — no more is asked for.
type stopSequenceCriterion struct{}

func (stopSequenceCriterion) Name() string { return "stop_sequence" }

func (stopSequenceCriterion) Evaluate(s State) (Evaluation, bool) {
	seq := s.Budgets.StopSequence
	if seq == "" || !s.wantsMore() {
		return Evaluation{}, false
	}
	tail := s.PreviousTail
	if len(tail) >= len(seq) {
		tail = tail[len(tail)-len(seq)+1:]
	}
	if strings.Contains(tail+s.Text, seq) {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopGuardForbade, Reason: "the answer contains the stop sequence",
			Context: map[string]any{"stop_sequence": seq}}, true
	}
	return Evaluation{}, false
}

// maxRecordsCriterion is a guard: once the answer holds the job's
// max_records records, no more is asked for.
type maxRecordsCriterion struct{}

func (maxRecordsCriterion) Name() string { return "max_records" }

func (maxRecordsCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.Budgets.MaxRecords <= 0 || !s.wantsMore() {
		return Evaluation{}, false
	}
	ctx := map[string]any{"records": s.Records, "max_records": s.Budgets.MaxRecords}
	if s.Records >= s.Budgets.MaxRecords {
		return Evaluation{Decision: ForbidContinuation, StopReason: StopGuardForbade, Reason: "the answer holds max_records records", Context: ctx}, true
	}
	return Evaluation{Decision: AllowContinuation, Reason: "fewer records than max_records", Context: ctx}, true
}

// errorPolicyCriterion applies the job's error policy to a response that
// came back with an unusable tool call (a tool error). Errors with no
// response never reach the criteria; the handler applies the same policy.
type errorPolicyCriterion struct{}

func (errorPolicyCriterion) Name() string { return "error_policy" }

func (errorPolicyCriterion) Evaluate(s State) (Evaluation, bool) {
	if s.ToolError == "" {
		return Evaluation{}, false
	}
	ctx := map[string]any{"error_type": string(carryovertype.ErrTool), "error": s.ToolError, "action": string(s.ToolRule.Action)}
	switch s.ToolRule.Action {
	case carryovertype.ActionIgnore:
		return Evaluation{Decision: AllowContinuation, Reason: "tool error ignored by the error policy; the call is kept, marked", Context: ctx}, true
	case carryovertype.ActionRetry:
		ctx["max_consecutive_retries"] = s.ToolRule.MaxConsecutiveRetries
		return Evaluation{Decision: ForbidContinuation, StopReason: StopRetryLimit, Reason: "tool error persisted through every retry the error policy allows", Context: ctx}, true
	}
	return Evaluation{Decision: ForbidContinuation, StopReason: StopErrorForbade, Reason: "the error policy stops on a tool error", Context: ctx}, true
}

// cancelCriterion forbids another chunk once the user cancelled the job: a
// call that completed as the cancel arrived is stored (it was paid for),
// and nothing more is asked for.
type cancelCriterion struct{}

func (cancelCriterion) Name() string { return "user_cancel" }

func (cancelCriterion) Evaluate(s State) (Evaluation, bool) {
	if !s.Cancelled {
		return Evaluation{}, false
	}
	return Evaluation{Decision: ForbidContinuation, StopReason: StopUserRequested, Reason: "the job was cancelled during the call"}, true
}
