// Package carryovertype holds the types a producer shares with carryover:
// the request (its input, continuation settings, error policy, strategy,
// structured-output schema), the validation error that names a bad field,
// resume options, and the tool calls a result may report. The client
// package, the HTTP API and the worker all speak these; nothing here talks
// to Postgres, Redis or a model. Like riverqueue/river's rivertype, it
// imports nothing else of carryover's, so any package may import it.
package carryovertype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Defaults of a request: validation (client.Validate, and every enqueue)
// fills each field left at its zero value with these.
const (
	DefaultFormat          = "auto"
	DefaultMaxOutputTokens = 4096
	DefaultMaxAttempts     = 10
	DefaultOnFailure       = OnFailurePartial
	DefaultTenant          = "default"
)

// What on_failure may say.
const (
	OnFailurePartial = "return_partial"
	OnFailureRaise   = "raise_error"
)

// Limits of a request.
const (
	MinMaxOutputTokens = 16
	MaxMaxOutputTokens = 200_000
	MaxMaxAttempts     = 50
)

// Request is a completion job as a producer submits it. Validation refuses
// a request with a *ValidationError naming every bad field, before anything
// is stored or enqueued.
//
// In Go, a numeric field left at its zero value is "not given": it takes
// its default (or, for a budget or guard, none). In JSON and on the command
// line, where a 0 can be told from an absent field, a 0 for a field whose
// range excludes it is refused instead of read as the default (see
// RequestExplicitZeros).
type Request struct {
	// Model names the model every call of the job asks (required).
	Model string `json:"model"`
	// Input is the prompt, or the conversation, the answer is for (required).
	Input Input `json:"input"`
	// Instructions are the system instructions sent with every call.
	Instructions string `json:"instructions,omitempty"`
	// MaxOutputTokens is the output budget of each call, not of the job
	// (MinMaxOutputTokens..MaxMaxOutputTokens; default DefaultMaxOutputTokens).
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// Format is the document's format, which decides how the chunks are
	// merged: csv, json, jsonl, markdown, code, diff, text, or auto (the
	// default) to detect it from the request and the answer.
	Format string `json:"format,omitempty"`
	// Continuation governs continuing the answer when it is cut off.
	Continuation Continuation `json:"continuation"`
	// Metadata is the producer's own JSON (at most 16 KiB), kept with the job.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// IdempotencyKey, when set, makes a repeated submission return the job
	// the first one created; reusing it with a different request is refused.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// WebhookURL, when set, receives a signed event when the job ends. It
	// must be https, carry no credentials (receivers check the signature),
	// and lead to a public address: loopback, private, link-local and other
	// reserved addresses are refused unless the operator allows them
	// (CARRYOVER_WEBHOOK_ALLOW). Redirects are not followed.
	WebhookURL string `json:"webhook_url,omitempty"`
	// Tools are function tools offered to the model, in the Responses API's
	// shape: [{"type":"function","name":...,"parameters":{...}}]. A response
	// that ends with tool calls is not continued; the calls are kept.
	Tools json.RawMessage `json:"tools,omitempty"`
	// JSONSchema asks for structured output: the first request carries it,
	// continuations do not, and the merged JSON is validated against it.
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
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
	MaxAttempts int    `json:"max_attempts,omitempty"` // most chunks (model responses) per job; default 10, 1..50 (a resume may raise it MaxMaxAttempts past the chunks stored)
	OnFailure   string `json:"on_failure,omitempty"`   // return_partial (default) or raise_error
	// Budgets; zero (absent) means none, a 0 in JSON is refused. Each
	// stops the job with its own stop reason.
	MaxTotalOutputTokens int64   `json:"max_total_output_tokens,omitempty"` // over all chunks, reasoning included
	MaxCostUSD           float64 `json:"max_cost_usd,omitempty"`            // estimated; needs a priced model
	TimeLimitSeconds     float64 `json:"time_limit_seconds,omitempty"`      // from this execution's start
	StopSequence         string  `json:"stop_sequence,omitempty"`           // a guard: stop once the answer contains it
	MaxRecords           int64   `json:"max_records,omitempty"`             // a guard: stop once the answer holds this many records
	// ErrorPolicy decides what a failed call does: a preset
	// (retry_transient_errors(n), the default with n=3: model, timeout and
	// unknown errors retried, validation and tool errors stopping;
	// stop_on_any_error; retry_tool_errors(n); ignore_tool_errors;
	// retry_all(n)) refined by per-type rules. nil is the default preset.
	ErrorPolicy *ErrorPolicy `json:"error_policy,omitempty"`
	// Strategy is how the answer is continued: stateful, history, prefill or
	// overlap; "" lets the worker choose its provider's default.
	Strategy Strategy `json:"strategy,omitempty"`
	// OverlapLines overrides how many lines the overlap strategy asks to be
	// repeated (default by content type).
	OverlapLines int `json:"overlap_lines,omitempty"`
	// MaxOutputTokensCeiling lets a call whose output budget was used up by
	// reasoning, with no visible text, be made again with a doubled budget up
	// to this ceiling; without it such a chunk stops the job (no_progress).
	MaxOutputTokensCeiling int `json:"max_output_tokens_ceiling,omitempty"`
	// Background runs this job's stateful calls detached (the Responses
	// API's background mode: a crash never pays for a chunk twice, and the
	// wait holds no worker slot); nil follows the worker (on by default).
	// false makes every call synchronous.
	Background *bool `json:"background,omitempty"`
}

// Policy is the job's error policy (the zero policy is the default preset,
// retry_transient_errors(3); RuleFor fills every default).
func (c Continuation) Policy() ErrorPolicy {
	if c.ErrorPolicy == nil {
		return ErrorPolicy{}
	}
	return *c.ErrorPolicy
}

// EnabledOrDefault reports whether continuation is on (the default).
func (c Continuation) EnabledOrDefault() bool { return c.Enabled == nil || *c.Enabled }

// Input is a prompt string or a list of messages. In JSON it is either a
// string or an array of {"role","content"} objects.
type Input struct {
	Prompt   string
	Messages []Message
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

// ResumeOptions raise a stopped job's limits; a field left at its zero
// value (in Go) or absent (in JSON, where a 0 is refused: see
// ResumeExplicitZeros) keeps the job's current value.
type ResumeOptions struct {
	// MaxAttempts is the job's new most chunks, those already stored
	// included: more than them, and at most MaxMaxAttempts more (the cap
	// applies per execution, so a job stopped at 50 chunks resumes with up
	// to 100).
	MaxAttempts          int     `json:"max_attempts,omitempty"`
	MaxTotalOutputTokens int64   `json:"max_total_output_tokens,omitempty"`
	MaxCostUSD           float64 `json:"max_cost_usd,omitempty"`
	TimeLimitSeconds     float64 `json:"time_limit_seconds,omitempty"`
	MaxRecords           int64   `json:"max_records,omitempty"`
	// ErrorPolicy replaces the job's error policy (nil keeps it).
	ErrorPolicy *ErrorPolicy `json:"error_policy,omitempty"`
}

// Message is one turn of a conversational input.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}
