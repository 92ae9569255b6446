package carryovertype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrorType classifies a failed model call.
type ErrorType string

const (
	ErrTool       ErrorType = "tool"
	ErrModel      ErrorType = "model"      // the provider failed (5xx, status failed, malformed body)
	ErrValidation ErrorType = "validation" // the request was refused (4xx other than 408/429)
	ErrRateLimit  ErrorType = "rate_limit" // 429
	ErrTimeout    ErrorType = "timeout"    // deadline, 408, 504
	ErrUnknown    ErrorType = "unknown"    // transport and anything else
)

// Action is what an error policy does with one failed call.
type Action string

const (
	ActionStop   Action = "stop"   // end the job's generation (error_forbade); on_failure decides the rest
	ActionRetry  Action = "retry"  // make the call again, up to the rule's max consecutive retries
	ActionIgnore Action = "ignore" // do not fail the job for it (see ErrorPolicy)
)

// Presets of an error policy.
const (
	// PresetRetryTransient retries the errors a second try may clear — a
	// failed or malformed response or a 5xx (model), a timeout, a transport
	// failure (unknown) — up to n consecutive times each, with backoff,
	// then stops (retry_limit_reached); a refused request (validation) or
	// an unusable tool call (tool) stops at once, since the same call would
	// fail the same way. It is the default, as every durable queue and
	// openai-go itself retry transient failures by default.
	PresetRetryTransient  = "retry_transient_errors"
	PresetStopOnAnyError  = "stop_on_any_error"
	PresetRetryToolErrors = "retry_tool_errors"
	PresetIgnoreToolErrs  = "ignore_tool_errors"
	PresetRetryAll        = "retry_all"

	// DefaultPreset is the preset of a policy that names none (and of a job
	// with no error policy).
	DefaultPreset = PresetRetryTransient
	// DefaultPresetRetries is n for retry_transient_errors,
	// retry_tool_errors and retry_all when the preset names none.
	DefaultPresetRetries = 3
	// MaxPolicyRetries bounds any rule's consecutive retries.
	MaxPolicyRetries = 20
)

// ErrorTypes lists every error type a policy can name.
func ErrorTypes() []ErrorType {
	return []ErrorType{ErrTool, ErrModel, ErrValidation, ErrRateLimit, ErrTimeout, ErrUnknown}
}

// Rule is a policy's action for one error type.
type Rule struct {
	Action Action `json:"action"`
	// MaxConsecutiveRetries bounds retries of one chunk for this error type
	// (with Action retry); once spent the job stops with retry_limit_reached.
	MaxConsecutiveRetries int `json:"max_consecutive_retries,omitempty"`
}

// ErrorPolicy decides what a failed model call does to its job: a preset,
// refined by per-type rules. The default preset is retry_transient_errors(3):
//
//	error type   action
//	model        retry, up to 3 times per chunk (5xx, failed or malformed response)
//	timeout      retry, up to 3 times per chunk (call timeout, 408, 504)
//	unknown      retry, up to 3 times per chunk (transport: connection refused, reset, dropped)
//	validation   stop (4xx other than 408 and 429)
//	tool         stop (an unusable tool call)
//	rate_limit   wait as Retry-After says, outside the retry budget (every preset)
//
// stop_on_any_error, the default before, stops at the first error.
//
// A rate limit is the provider asking to wait, not a failure: under every
// preset a 429 waits as its Retry-After says, without using up any retry
// budget; only an explicit rate_limit rule changes that.
//
// Ignore means the error does not fail the job: a tool error's response is
// kept as the chunk, its calls marked truncated or invalid, and the criteria
// decide as for any response; any other ignored error ends generation there
// and what is stored is merged as a partial result, whatever on_failure says.
type ErrorPolicy struct {
	Preset     string             `json:"preset,omitempty"`      // "" is DefaultPreset
	MaxRetries int                `json:"max_retries,omitempty"` // n of retry_transient_errors(n), retry_tool_errors(n) and retry_all(n); 0 (Go) is DefaultPresetRetries
	Rules      map[ErrorType]Rule `json:"rules,omitempty"`
}

// presetForm is a preset written as a call: "retry_all(3)".
var presetForm = regexp.MustCompile(`^([a-z_]+)(?:\((\d+)\))?$`)

// ParseErrorPolicy reads the short form used on command lines: a preset
// ("retry_transient_errors(3)", "stop_on_any_error", "retry_tool_errors(2)",
// "ignore_tool_errors", "retry_all(3)"), optionally followed by per-type
// rules, comma separated: "retry_all(3),validation=stop,tool=ignore,model=retry:5".
// Rules alone refine the default preset: "model=retry:5". A retry count
// written as 0 ("retry_all(0)", "model=retry:0") is refused, wrapping
// ErrExplicitZero: leave the count out for the default.
func ParseErrorPolicy(s string) (ErrorPolicy, error) {
	p, err := parsePolicy(s)
	if err != nil {
		return p, err
	}
	return p, p.Validate()
}

// parsePolicy reads the short form without validating it (a request's
// validation names the field).
func parsePolicy(s string) (ErrorPolicy, error) {
	var p ErrorPolicy
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, rule, isRule := strings.Cut(part, "=")
		if !isRule {
			if i != 0 {
				return p, fmt.Errorf("%q: a preset comes first; rules are TYPE=ACTION[:N]", part)
			}
			m := presetForm.FindStringSubmatch(part)
			if m == nil {
				return p, fmt.Errorf("%q is not a preset", part)
			}
			p.Preset = m[1]
			if m[2] != "" {
				p.MaxRetries, _ = strconv.Atoi(m[2])
				if isZeroCount(m[2]) {
					return p, explicitZeroError(fmt.Sprintf("max_retries: must be between 1 and %d, got 0 in %q; write %s for the default (%d)",
						MaxPolicyRetries, part, m[1], DefaultPresetRetries))
				}
			}
			continue
		}
		action, n, _ := strings.Cut(rule, ":")
		r := Rule{Action: Action(action)}
		if n != "" {
			v, err := strconv.Atoi(n)
			if err != nil {
				return p, fmt.Errorf("%q: retries must be an integer", part)
			}
			r.MaxConsecutiveRetries = v
			if v == 0 {
				return p, explicitZeroError(fmt.Sprintf("rules.%s.max_consecutive_retries: must be between 1 and %d, got 0 in %q; write %s=%s for the default (%d)",
					typ, MaxPolicyRetries, part, typ, action, DefaultPresetRetries))
			}
		}
		if p.Rules == nil {
			p.Rules = map[ErrorType]Rule{}
		}
		p.Rules[ErrorType(typ)] = r
	}
	return p, nil
}

// UnmarshalJSON accepts the object form or the short string form.
func (p *ErrorPolicy) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		parsed, err := parsePolicy(s)
		*p = parsed
		return err
	}
	type plain ErrorPolicy
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(p))
}

// Validate reports the first of a policy's Problems, naming the part at
// fault ("max_retries: must be between 1 and 20, got 99").
func (p ErrorPolicy) Validate() error {
	if ps := p.Problems(); len(ps) > 0 {
		return fmt.Errorf("%s: %s", ps[0].Field, ps[0].Message)
	}
	return nil
}

// Problems lists every problem with a policy, each naming its part by its
// JSON path within the policy (preset, max_retries,
// rules.model.max_consecutive_retries), so a request's validation can name
// them all with their full paths.
func (p ErrorPolicy) Problems() []FieldError {
	var out []FieldError
	bad := func(field, format string, args ...any) {
		out = append(out, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch p.Preset {
	case PresetStopOnAnyError, PresetIgnoreToolErrs:
		if p.MaxRetries != 0 {
			bad("max_retries", "must be left out: %s takes no retry count", p.presetName())
		}
	case "", PresetRetryTransient, PresetRetryToolErrors, PresetRetryAll:
		if p.MaxRetries < 0 || p.MaxRetries > MaxPolicyRetries {
			bad("max_retries", "must be between 1 and %d, got %d", MaxPolicyRetries, p.MaxRetries)
		}
	default:
		bad("preset", "must be one of %s(n), %s, %s(n), %s, %s(n); got %q",
			PresetRetryTransient, PresetStopOnAnyError, PresetRetryToolErrors, PresetIgnoreToolErrs, PresetRetryAll, p.Preset)
	}
	for _, t := range slices.Sorted(maps.Keys(p.Rules)) {
		r, field := p.Rules[t], "rules."+string(t)
		if !slices.Contains(ErrorTypes(), t) {
			bad(field, "is an unknown error type (want tool, model, validation, rate_limit, timeout or unknown)")
			continue
		}
		switch r.Action {
		case ActionStop, ActionIgnore:
			if r.MaxConsecutiveRetries != 0 {
				bad(field+".max_consecutive_retries", "must be left out: only a retry takes a count")
			}
		case ActionRetry:
			if r.MaxConsecutiveRetries < 0 || r.MaxConsecutiveRetries > MaxPolicyRetries {
				bad(field+".max_consecutive_retries", "must be between 1 and %d, got %d", MaxPolicyRetries, r.MaxConsecutiveRetries)
			}
		default:
			bad(field+".action", "must be stop, retry or ignore, got %q", r.Action)
		}
	}
	return out
}

func (p ErrorPolicy) presetName() string {
	if p.Preset == "" {
		return DefaultPreset
	}
	return p.Preset
}

// retries reports whether a preset takes a retry count.
func retries(preset string) bool {
	return preset == PresetRetryTransient || preset == PresetRetryToolErrors || preset == PresetRetryAll
}

// retriesOrDefault is a count of retries with its default filled: 0 means
// DefaultPresetRetries.
func retriesOrDefault(n int) int {
	if n == 0 {
		return DefaultPresetRetries
	}
	return n
}

// Normalized fills the defaults: the preset, and n for presets that retry.
func (p ErrorPolicy) Normalized() ErrorPolicy {
	p.Preset = p.presetName()
	if retries(p.Preset) {
		p.MaxRetries = retriesOrDefault(p.MaxRetries)
	}
	if len(p.Rules) > 0 {
		rules := make(map[ErrorType]Rule, len(p.Rules)) // never the caller's map
		for t, r := range p.Rules {
			if r.Action == ActionRetry {
				r.MaxConsecutiveRetries = retriesOrDefault(r.MaxConsecutiveRetries)
			}
			rules[t] = r
		}
		p.Rules = rules
	}
	return p
}

// String is the short form.
func (p ErrorPolicy) String() string {
	p = p.Normalized()
	var b strings.Builder
	b.WriteString(p.Preset)
	if retries(p.Preset) {
		fmt.Fprintf(&b, "(%d)", p.MaxRetries)
	}
	for _, t := range slices.Sorted(maps.Keys(p.Rules)) {
		r := p.Rules[t]
		fmt.Fprintf(&b, ",%s=%s", t, r.Action)
		if r.Action == ActionRetry {
			fmt.Fprintf(&b, ":%d", r.MaxConsecutiveRetries)
		}
	}
	return b.String()
}

// RuleFor resolves the rule for an error type: a per-type rule wins over the
// preset. A rate limit waits (retry) under every preset; maxRetries is then
// 0, meaning waits are bounded elsewhere, not by the policy.
func (p ErrorPolicy) RuleFor(t ErrorType) Rule {
	if r, ok := p.Rules[t]; ok {
		if r.Action == ActionRetry {
			r.MaxConsecutiveRetries = retriesOrDefault(r.MaxConsecutiveRetries)
		}
		return r
	}
	if t == ErrRateLimit {
		return Rule{Action: ActionRetry}
	}
	retry := Rule{Action: ActionRetry, MaxConsecutiveRetries: retriesOrDefault(p.MaxRetries)}
	switch p.presetName() {
	case PresetRetryAll:
		return retry
	case PresetRetryTransient:
		if t == ErrModel || t == ErrTimeout || t == ErrUnknown {
			return retry
		}
	case PresetRetryToolErrors:
		if t == ErrTool {
			return retry
		}
	case PresetIgnoreToolErrs:
		if t == ErrTool {
			return Rule{Action: ActionIgnore}
		}
	}
	return Rule{Action: ActionStop}
}
