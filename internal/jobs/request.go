// Package jobs owns the job lifecycle on the queue: the request every producer
// submits, the enqueuer they share, the asynq task types, payloads and
// dispatcher, and the chunk, merge and webhook handlers. The loops that look
// after jobs between tasks (reconciler, retention) are in package
// maintenance.
package jobs

import (
	"bytes"
	"cmp"
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

// Defaults of a request: Normalize fills each field left at its zero value.
const (
	DefaultFormat          = "auto"
	DefaultMaxOutputTokens = 4096
	DefaultMaxAttempts     = 10
	DefaultOnFailure       = OnFailurePartial
	DefaultTenant          = "default"
)

// What continuation.on_failure may say.
const (
	OnFailurePartial = "return_partial"
	OnFailureRaise   = "raise_error"
)

// Limits of a request.
const (
	MinMaxOutputTokens  = 16
	MaxMaxOutputTokens  = 200_000
	MaxMaxAttempts      = 50
	maxMetadataBytes    = 16 << 10
	maxIdempotencyKey   = 255
	maxModelName        = 200
	maxStopSequence     = 200
	maxOverlapLines     = 200
	maxTimeLimitSeconds = 7 * 24 * 3600
	maxWebhookURL       = 2048
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
// naming every bad field, in the order of the request's sections.
func (r Request) Normalize() (Request, error) {
	r = r.withDefaults()
	var v fieldErrors
	v.model(r.Model)
	v.input(r.Input)
	v.output(r.MaxOutputTokens, r.Format)
	r.Continuation.ErrorPolicy = v.continuation(r.Continuation, r.MaxOutputTokens)
	v.options(r)
	v.producer(r)
	if len(v) > 0 {
		return r, &ValidationError{Fields: v}
	}
	return r, nil
}

// withDefaults fills every field a producer may leave out, once, so the
// validators below see the request as it will be run.
func (r Request) withDefaults() Request {
	r.Model = strings.TrimSpace(r.Model)
	r.MaxOutputTokens = cmp.Or(r.MaxOutputTokens, DefaultMaxOutputTokens)
	r.Format = cmp.Or(r.Format, DefaultFormat)
	r.Continuation = r.Continuation.withDefaults()
	r.Tenant = cmp.Or(r.Tenant, DefaultTenant)
	return r
}

// withDefaults fills the continuation settings left out. A job stored before
// a default was filled here gets it on reading, too.
func (c Continuation) withDefaults() Continuation {
	if c.Enabled == nil {
		on := true
		c.Enabled = &on
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.OnFailure = cmp.Or(c.OnFailure, DefaultOnFailure)
	return c
}

// fieldErrors collects the invalid fields of a request, one validator per
// section; Normalize reports them all at once.
type fieldErrors []FieldError

func (v *fieldErrors) add(field, format string, args ...any) {
	*v = append(*v, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *fieldErrors) model(model string) {
	switch {
	case model == "":
		v.add("model", "is required")
	case len(model) > maxModelName:
		v.add("model", "is longer than %d characters", maxModelName)
	}
}

func (v *fieldErrors) input(in Input) {
	if len(in.Messages) == 0 {
		if strings.TrimSpace(in.Prompt) == "" {
			v.add("input", "is required: a prompt string or a list of messages")
		}
		return
	}
	if in.Prompt != "" {
		v.add("input", "give a prompt or messages, not both")
	}
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant":
		default:
			v.add(fmt.Sprintf("input[%d].role", i), "must be system, developer, user or assistant, not %q", m.Role)
		}
		if strings.TrimSpace(m.Content) == "" {
			v.add(fmt.Sprintf("input[%d].content", i), "is empty")
		}
	}
}

func (v *fieldErrors) output(maxOutputTokens int, format string) {
	if maxOutputTokens < MinMaxOutputTokens || maxOutputTokens > MaxMaxOutputTokens {
		v.add("max_output_tokens", "must be between %d and %d, got %d", MinMaxOutputTokens, MaxMaxOutputTokens, maxOutputTokens)
	}
	if !merge.ValidFormat(format) {
		v.add("format", "must be one of %s, got %q", strings.Join(merge.Formats(), ", "), format)
	}
}

// continuation checks the continuation settings and returns the error
// policy in its normalized form (unchanged when it is invalid).
func (v *fieldErrors) continuation(c Continuation, maxOutputTokens int) *continuation.ErrorPolicy {
	if c.MaxAttempts < 1 || c.MaxAttempts > MaxMaxAttempts {
		v.add("continuation.max_attempts", "must be between 1 and %d, got %d", MaxMaxAttempts, c.MaxAttempts)
	}
	if c.OnFailure != OnFailurePartial && c.OnFailure != OnFailureRaise {
		v.add("continuation.on_failure", "must be %s or %s, got %q", OnFailurePartial, OnFailureRaise, c.OnFailure)
	}
	v.budgets(c)
	policy := c.ErrorPolicy
	if p := c.ErrorPolicy; p != nil {
		if err := p.Validate(); err != nil {
			v.add("continuation.error_policy", "%v", err)
		} else {
			n := p.Normalized()
			policy = &n
		}
	}
	if s := c.Strategy; s != "" && !continuation.ValidStrategy(s) {
		v.add("continuation.strategy", "must be one of %v; got %q", continuation.Strategies(), s)
	}
	if n := c.OverlapLines; n < 0 || n > maxOverlapLines {
		v.add("continuation.overlap_lines", "must be between 1 and %d (0 for the content type's default), got %d", maxOverlapLines, n)
	}
	if m := c.MaxOutputTokensCeiling; m != 0 && (m < maxOutputTokens || m > MaxMaxOutputTokens) {
		v.add("continuation.max_output_tokens_ceiling", "must be between max_output_tokens (%d) and %d, got %d", maxOutputTokens, MaxMaxOutputTokens, m)
	}
	return policy
}

// budgets checks the budgets and guards (zero means none).
func (v *fieldErrors) budgets(c Continuation) {
	if c.MaxTotalOutputTokens < 0 {
		v.add("continuation.max_total_output_tokens", "must not be negative, got %d", c.MaxTotalOutputTokens)
	}
	if c.MaxCostUSD < 0 || math.IsNaN(c.MaxCostUSD) || math.IsInf(c.MaxCostUSD, 0) {
		v.add("continuation.max_cost_usd", "must be a positive amount of USD, got %v", c.MaxCostUSD)
	}
	if t := c.TimeLimitSeconds; t < 0 || math.IsNaN(t) || t > maxTimeLimitSeconds {
		v.add("continuation.time_limit_seconds", "must be between 0 and %d, got %v", maxTimeLimitSeconds, t)
	}
	if len(c.StopSequence) > maxStopSequence {
		v.add("continuation.stop_sequence", "is longer than %d bytes", maxStopSequence)
	}
	if c.MaxRecords < 0 {
		v.add("continuation.max_records", "must not be negative, got %d", c.MaxRecords)
	}
}

// options checks what the request asks of the model beyond the prompt, and
// the producer's metadata.
func (v *fieldErrors) options(r Request) {
	if len(r.Tools) > 0 {
		if msg := checkTools(r.Tools); msg != "" {
			v.add("tools", "%s", msg)
		}
	}
	if r.JSONSchema != nil {
		for _, fe := range checkJSONSchema(r.JSONSchema) {
			v.add(fe.Field, "%s", fe.Message)
		}
	}
	if len(r.Metadata) > 0 {
		switch {
		case len(r.Metadata) > maxMetadataBytes:
			v.add("metadata", "is larger than %d bytes", maxMetadataBytes)
		case !json.Valid(r.Metadata):
			v.add("metadata", "is not valid JSON")
		}
	}
}

// producer checks who the job is for and how it reports back.
func (v *fieldErrors) producer(r Request) {
	if !tenantName.MatchString(r.Tenant) {
		v.add("tenant", "must be 1-63 lowercase letters, digits, '-' or '_', got %q", r.Tenant)
	}
	if r.WebhookURL != "" && !validWebhookURL(r.WebhookURL) {
		v.add("webhook_url", "must be an absolute http or https URL of at most %d bytes", maxWebhookURL)
	}
	if len(r.IdempotencyKey) > maxIdempotencyKey {
		v.add("idempotency_key", "is longer than %d characters", maxIdempotencyKey)
	}
}

func validWebhookURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && len(s) <= maxWebhookURL
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
