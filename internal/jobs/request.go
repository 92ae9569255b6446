// Package jobs owns the job lifecycle on the queue: the request every producer
// submits, the enqueuer they share, the asynq task types and payloads, the
// chunk and merge handlers, and the reconciler that resumes jobs whose queue
// state was lost.
package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/merge"
)

// Defaults and limits of a request.
const (
	DefaultFormat          = "auto"
	DefaultMaxOutputTokens = 4096
	MinMaxOutputTokens     = 16
	MaxMaxOutputTokens     = 200_000
	DefaultMaxAttempts     = 10
	MaxMaxAttempts         = 50
	OnFailurePartial       = "return_partial"
	OnFailureRaise         = "raise_error"
	maxMetadataBytes       = 16 << 10
	maxIdempotencyKey      = 255
	maxModelName           = 200
)

// Request is a completion job as a producer submits it.
type Request struct {
	Model           string          `json:"model"`
	Input           Input           `json:"input"`
	Instructions    string          `json:"instructions,omitempty"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
	Format          string          `json:"format,omitempty"`
	Continuation    Continuation    `json:"continuation"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key,omitempty"`
	// WebhookURL, when set, receives a signed event when the job ends.
	WebhookURL string `json:"webhook_url,omitempty"`
	// Tools are function tools offered to the model, in the Responses API's
	// shape: [{"type":"function","name":...,"parameters":{...}}]. A response
	// that ends with tool calls is not continued; the calls are kept.
	Tools json.RawMessage `json:"tools,omitempty"`
	// JSONSchema asks for structured output: the first request carries it,
	// continuations do not, and the merged JSON is validated against it.
	JSONSchema *continuation.JSONSchema `json:"json_schema,omitempty"`
	// Stream asks for streamed model calls: a stream that breaks mid-answer
	// keeps what arrived as the chunk and the job continues from it.
	Stream bool `json:"stream,omitempty"`
	// Tenant owns the job; never read from a request body — the HTTP API
	// sets it from the caller's key, Go producers choose it. Default "default".
	Tenant string `json:"-"`
}

// Continuation are the settings that govern continuing a cut-off answer.
type Continuation struct {
	Enabled     *bool  `json:"enabled,omitempty"`      // default true
	MaxAttempts int    `json:"max_attempts,omitempty"` // most chunks (model responses) per job; default 10, 1..50
	OnFailure   string `json:"on_failure,omitempty"`   // return_partial (default) or raise_error
	// Budgets; zero means none. Each stops the job with its own stop reason.
	MaxTotalOutputTokens int64   `json:"max_total_output_tokens,omitempty"` // over all chunks, reasoning included
	MaxCostUSD           float64 `json:"max_cost_usd,omitempty"`            // estimated; needs a priced model
	TimeLimitSeconds     float64 `json:"time_limit_seconds,omitempty"`      // from this execution's start
	StopSequence         string  `json:"stop_sequence,omitempty"`           // a guard: stop once the answer contains it
	MaxRecords           int64   `json:"max_records,omitempty"`             // a guard: stop once the answer holds this many records
	// ErrorPolicy decides what a failed call does: a preset
	// (stop_on_any_error, the default; retry_tool_errors(n);
	// ignore_tool_errors; retry_all(n)) refined by per-type rules.
	ErrorPolicy *continuation.ErrorPolicy `json:"error_policy,omitempty"`
	// Strategy is how the answer is continued: stateful, history, prefill or
	// overlap; "" lets the worker choose its provider's default.
	Strategy continuation.Strategy `json:"strategy,omitempty"`
	// OverlapLines overrides how many lines the overlap strategy asks to be
	// repeated (default by content type).
	OverlapLines int `json:"overlap_lines,omitempty"`
	// MaxOutputTokensCeiling lets a call whose output budget was used up by
	// reasoning, with no visible text, be made again with a doubled budget up
	// to this ceiling; without it such a chunk stops the job (no_progress).
	MaxOutputTokensCeiling int `json:"max_output_tokens_ceiling,omitempty"`
}

// Policy is the job's error policy (the zero policy is stop_on_any_error;
// RuleFor fills every default).
func (c Continuation) Policy() continuation.ErrorPolicy {
	if c.ErrorPolicy == nil {
		return continuation.ErrorPolicy{}
	}
	return *c.ErrorPolicy
}

// Budgets converts the settings for the criteria.
func (c Continuation) Budgets() continuation.Budgets {
	return continuation.Budgets{MaxOutputTokens: c.MaxTotalOutputTokens, MaxCostUSD: c.MaxCostUSD,
		TimeLimit: time.Duration(c.TimeLimitSeconds * float64(time.Second)), StopSequence: c.StopSequence,
		MaxRecords: c.MaxRecords}
}

// EnabledOrDefault reports whether continuation is on (the default).
func (c Continuation) EnabledOrDefault() bool { return c.Enabled == nil || *c.Enabled }

// Input is a prompt string or a list of messages. In JSON it is either a
// string or an array of {"role","content"} objects.
type Input struct {
	Prompt   string
	Messages []continuation.Message
}

// MarshalJSON writes the string or array form.
func (in Input) MarshalJSON() ([]byte, error) {
	if len(in.Messages) > 0 {
		return json.Marshal(in.Messages)
	}
	return json.Marshal(in.Prompt)
}

// UnmarshalJSON reads the string or array form.
func (in *Input) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &in.Prompt)
	case len(b) > 0 && b[0] == '[':
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(&in.Messages)
	case string(b) == "null":
		return nil
	}
	return fmt.Errorf("input must be a string or a list of messages")
}

// tenantName is the shape of a tenant ID (as the tenants table checks).
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// FieldError names one invalid field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every invalid field of a request. Nothing is stored
// or enqueued for a request that fails validation.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// Normalize fills defaults and validates. It returns a *ValidationError
// naming every bad field.
func (r Request) Normalize() (Request, error) {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	r.Model = strings.TrimSpace(r.Model)
	switch {
	case r.Model == "":
		bad("model", "is required")
	case len(r.Model) > maxModelName:
		bad("model", "is longer than %d characters", maxModelName)
	}
	if len(r.Input.Messages) > 0 {
		if r.Input.Prompt != "" {
			bad("input", "give a prompt or messages, not both")
		}
		for i, m := range r.Input.Messages {
			switch m.Role {
			case "system", "developer", "user", "assistant":
			default:
				bad(fmt.Sprintf("input[%d].role", i), "must be system, developer, user or assistant, not %q", m.Role)
			}
			if strings.TrimSpace(m.Content) == "" {
				bad(fmt.Sprintf("input[%d].content", i), "is empty")
			}
		}
	} else if strings.TrimSpace(r.Input.Prompt) == "" {
		bad("input", "is required: a prompt string or a list of messages")
	}
	if r.MaxOutputTokens == 0 {
		r.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if r.MaxOutputTokens < MinMaxOutputTokens || r.MaxOutputTokens > MaxMaxOutputTokens {
		bad("max_output_tokens", "must be between %d and %d, got %d", MinMaxOutputTokens, MaxMaxOutputTokens, r.MaxOutputTokens)
	}
	if r.Format == "" {
		r.Format = DefaultFormat
	}
	if !merge.ValidFormat(r.Format) {
		bad("format", "must be one of %s, got %q", strings.Join(merge.Formats(), ", "), r.Format)
	}
	if r.Continuation.Enabled == nil {
		on := true
		r.Continuation.Enabled = &on
	}
	if r.Continuation.MaxAttempts == 0 {
		r.Continuation.MaxAttempts = DefaultMaxAttempts
	}
	if r.Continuation.MaxAttempts < 1 || r.Continuation.MaxAttempts > MaxMaxAttempts {
		bad("continuation.max_attempts", "must be between 1 and %d, got %d", MaxMaxAttempts, r.Continuation.MaxAttempts)
	}
	if r.Continuation.OnFailure == "" {
		r.Continuation.OnFailure = OnFailurePartial
	}
	if r.Continuation.OnFailure != OnFailurePartial && r.Continuation.OnFailure != OnFailureRaise {
		bad("continuation.on_failure", "must be %s or %s, got %q", OnFailurePartial, OnFailureRaise, r.Continuation.OnFailure)
	}
	if r.Continuation.MaxTotalOutputTokens < 0 {
		bad("continuation.max_total_output_tokens", "must not be negative, got %d", r.Continuation.MaxTotalOutputTokens)
	}
	if r.Continuation.MaxCostUSD < 0 || math.IsNaN(r.Continuation.MaxCostUSD) || math.IsInf(r.Continuation.MaxCostUSD, 0) {
		bad("continuation.max_cost_usd", "must be a positive amount of USD, got %v", r.Continuation.MaxCostUSD)
	}
	if t := r.Continuation.TimeLimitSeconds; t < 0 || math.IsNaN(t) || t > 7*24*3600 {
		bad("continuation.time_limit_seconds", "must be between 0 and 604800, got %v", t)
	}
	if len(r.Continuation.StopSequence) > 200 {
		bad("continuation.stop_sequence", "is longer than 200 bytes")
	}
	if r.Continuation.MaxRecords < 0 {
		bad("continuation.max_records", "must not be negative, got %d", r.Continuation.MaxRecords)
	}
	if p := r.Continuation.ErrorPolicy; p != nil {
		if err := p.Validate(); err != nil {
			bad("continuation.error_policy", "%v", err)
		} else {
			n := p.Normalized()
			r.Continuation.ErrorPolicy = &n
		}
	}
	if s := r.Continuation.Strategy; s != "" && !continuation.ValidStrategy(s) {
		bad("continuation.strategy", "must be one of %v; got %q", continuation.Strategies(), s)
	}
	if n := r.Continuation.OverlapLines; n < 0 || n > 200 {
		bad("continuation.overlap_lines", "must be between 1 and 200 (0 for the content type's default), got %d", n)
	}
	if c := r.Continuation.MaxOutputTokensCeiling; c != 0 && (c < r.MaxOutputTokens || c > MaxMaxOutputTokens) {
		bad("continuation.max_output_tokens_ceiling", "must be between max_output_tokens (%d) and %d, got %d", r.MaxOutputTokens, MaxMaxOutputTokens, c)
	}
	if len(r.Tools) > 0 {
		if msg := checkTools(r.Tools); msg != "" {
			bad("tools", "%s", msg)
		}
	}
	if r.JSONSchema != nil {
		for _, fe := range checkJSONSchema(r.JSONSchema) {
			bad(fe.Field, "%s", fe.Message)
		}
	}
	if len(r.Metadata) > 0 {
		switch {
		case len(r.Metadata) > maxMetadataBytes:
			bad("metadata", "is larger than %d bytes", maxMetadataBytes)
		case !json.Valid(r.Metadata):
			bad("metadata", "is not valid JSON")
		}
	}
	if r.Tenant == "" {
		r.Tenant = "default"
	}
	if !tenantName.MatchString(r.Tenant) {
		bad("tenant", "must be 1-63 lowercase letters, digits, '-' or '_', got %q", r.Tenant)
	}
	if r.WebhookURL != "" {
		if u, err := url.Parse(r.WebhookURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(r.WebhookURL) > 2048 {
			bad("webhook_url", "must be an absolute http or https URL of at most 2048 bytes")
		}
	}
	if len(r.IdempotencyKey) > maxIdempotencyKey {
		bad("idempotency_key", "is longer than %d characters", maxIdempotencyKey)
	}
	if len(errs) > 0 {
		return r, &ValidationError{Fields: errs}
	}
	return r, nil
}

// hash identifies a normalized request (without its idempotency key), so a
// reused key with a different request is refused rather than silently
// answered with another job.
func (r Request) hash() string {
	r.IdempotencyKey = ""
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Text is the request's own words (instructions and input), which auto format
// detection reads.
func (r Request) Text() string {
	var b strings.Builder
	b.WriteString(r.Instructions)
	b.WriteString("\n")
	b.WriteString(r.Input.Prompt)
	for _, m := range r.Input.Messages {
		b.WriteString("\n")
		b.WriteString(m.Content)
	}
	return b.String()
}
