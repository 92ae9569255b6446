// Package jobs owns the job lifecycle on the queue: validating the request
// every producer submits (its types are in carryovertype), the enqueuer
// they share, the asynq task types, payloads and
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
	"slices"
	"strings"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/merge"
)

// Limits of a request that producers need not know by name.
const (
	maxMetadataBytes    = 16 << 10
	maxIdempotencyKey   = 255
	maxModelName        = 200
	maxStopSequence     = 200
	maxOverlapLines     = 200
	maxTimeLimitSeconds = 7 * 24 * 3600
	maxWebhookURL       = 2048
)

// budgets converts a job's continuation settings for the criteria.
func budgets(c carryovertype.Continuation) continuation.Budgets {
	return continuation.Budgets{MaxOutputTokens: c.MaxTotalOutputTokens, MaxCostUSD: c.MaxCostUSD,
		TimeLimit: time.Duration(c.TimeLimitSeconds * float64(time.Second)), StopSequence: c.StopSequence,
		MaxRecords: c.MaxRecords}
}

// Normalize fills a request's defaults and validates it. It returns a
// *carryovertype.ValidationError naming every bad field, in the order of the
// request's sections. A webhook_url must be https, without credentials, and
// not a reserved literal address (the default egress policy).
func Normalize(r carryovertype.Request) (carryovertype.Request, error) {
	return NormalizeFor(r, egress.Policy{})
}

// NormalizeFor is Normalize with webhook_url checked against an operator's
// egress policy (CARRYOVER_WEBHOOK_ALLOW). Only what the URL says can be
// checked here; the worker checks the addresses a name resolves to when it
// connects.
func NormalizeFor(r carryovertype.Request, webhooks egress.Policy) (carryovertype.Request, error) {
	r = withDefaults(r)
	var v fieldErrors
	v.model(r.Model)
	v.input(r.Input)
	v.output(r.MaxOutputTokens, r.Format)
	r.Continuation.ErrorPolicy = v.continuation(r.Continuation, r.MaxOutputTokens)
	v.options(r)
	v.producer(r, webhooks)
	v.noNUL(r)
	if len(v) > 0 {
		return r, &carryovertype.ValidationError{Fields: v}
	}
	return r, nil
}

// withDefaults fills every field a producer may leave out, once, so the
// validators below see the request as it will be run.
func withDefaults(r carryovertype.Request) carryovertype.Request {
	r.Model = strings.TrimSpace(r.Model)
	r.MaxOutputTokens = cmp.Or(r.MaxOutputTokens, carryovertype.DefaultMaxOutputTokens)
	r.Format = cmp.Or(r.Format, carryovertype.DefaultFormat)
	r.Continuation = continuationDefaults(r.Continuation)
	r.Tenant = cmp.Or(r.Tenant, carryovertype.DefaultTenant)
	return r
}

// continuationDefaults fills the continuation settings left out. A job stored before
// a default was filled here gets it on reading, too.
func continuationDefaults(c carryovertype.Continuation) carryovertype.Continuation {
	if c.Enabled == nil {
		on := true
		c.Enabled = &on
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, carryovertype.DefaultMaxAttempts)
	c.OnFailure = cmp.Or(c.OnFailure, carryovertype.DefaultOnFailure)
	return c
}

// fieldErrors collects the invalid fields of a request, one validator per
// section; Normalize reports them all at once.
type fieldErrors []carryovertype.FieldError

func (v *fieldErrors) add(field, format string, args ...any) {
	*v = append(*v, carryovertype.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *fieldErrors) model(model string) {
	switch {
	case model == "":
		v.add("model", "is required")
	case len(model) > maxModelName:
		v.add("model", "is longer than %d characters", maxModelName)
	}
}

func (v *fieldErrors) input(in carryovertype.Input) {
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
	if maxOutputTokens < carryovertype.MinMaxOutputTokens || maxOutputTokens > carryovertype.MaxMaxOutputTokens {
		v.add("max_output_tokens", "must be between %d and %d, got %d", carryovertype.MinMaxOutputTokens, carryovertype.MaxMaxOutputTokens, maxOutputTokens)
	}
	if !merge.ValidFormat(format) {
		v.add("format", "must be one of %s, got %q", strings.Join(merge.Formats(), ", "), format)
	}
}

// continuation checks the continuation settings and returns the error
// policy in its normalized form (unchanged when it is invalid).
func (v *fieldErrors) continuation(c carryovertype.Continuation, maxOutputTokens int) *carryovertype.ErrorPolicy {
	if c.MaxAttempts < 1 || c.MaxAttempts > carryovertype.MaxMaxAttempts {
		v.add("continuation.max_attempts", "must be between 1 and %d, got %d", carryovertype.MaxMaxAttempts, c.MaxAttempts)
	}
	if c.OnFailure != carryovertype.OnFailurePartial && c.OnFailure != carryovertype.OnFailureRaise {
		v.add("continuation.on_failure", "must be %s or %s, got %q", carryovertype.OnFailurePartial, carryovertype.OnFailureRaise, c.OnFailure)
	}
	v.budgets(c, "continuation.")
	policy := c.ErrorPolicy
	if p := c.ErrorPolicy; p != nil {
		if v.policy("continuation.error_policy", *p) {
			n := p.Normalized()
			policy = &n
		}
	}
	if s := c.Strategy; s != "" && !carryovertype.ValidStrategy(s) {
		v.add("continuation.strategy", "must be one of %v; got %q", carryovertype.Strategies(), s)
	}
	if n := c.OverlapLines; n < 0 || n > maxOverlapLines {
		v.add("continuation.overlap_lines", "must be between 1 and %d (0 for the content type's default), got %d", maxOverlapLines, n)
	}
	if m := c.MaxOutputTokensCeiling; m != 0 && (m < maxOutputTokens || m > carryovertype.MaxMaxOutputTokens) {
		v.add("continuation.max_output_tokens_ceiling", "must be between max_output_tokens (%d) and %d, got %d", maxOutputTokens, carryovertype.MaxMaxOutputTokens, m)
	}
	return policy
}

// policy names every problem of an error policy at field (its JSON path),
// reporting whether it is sound.
func (v *fieldErrors) policy(field string, p carryovertype.ErrorPolicy) bool {
	problems := p.Problems()
	for _, fe := range problems {
		v.add(field+"."+fe.Field, "%s", fe.Message)
	}
	return len(problems) == 0
}

// budgets checks the budgets and guards (zero means none), naming each
// field with prefix ("continuation." in a request, "" in resume options).
func (v *fieldErrors) budgets(c carryovertype.Continuation, prefix string) {
	if c.MaxTotalOutputTokens < 0 {
		v.add(prefix+"max_total_output_tokens", "must not be negative, got %d", c.MaxTotalOutputTokens)
	}
	if c.MaxCostUSD < 0 || math.IsNaN(c.MaxCostUSD) || math.IsInf(c.MaxCostUSD, 0) {
		v.add(prefix+"max_cost_usd", "must be a positive amount of USD, got %v", c.MaxCostUSD)
	}
	if t := c.TimeLimitSeconds; t < 0 || math.IsNaN(t) || t > maxTimeLimitSeconds {
		v.add(prefix+"time_limit_seconds", "must be between 0 and %d, got %v", maxTimeLimitSeconds, t)
	}
	if len(c.StopSequence) > maxStopSequence {
		v.add(prefix+"stop_sequence", "is longer than %d bytes", maxStopSequence)
	}
	if c.MaxRecords < 0 {
		v.add(prefix+"max_records", "must not be negative, got %d", c.MaxRecords)
	}
}

// options checks what the request asks of the model beyond the prompt, and
// the producer's metadata.
func (v *fieldErrors) options(r carryovertype.Request) {
	if len(r.Tools) > 0 {
		*v = append(*v, checkTools(r.Tools)...)
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
func (v *fieldErrors) producer(r carryovertype.Request, webhooks egress.Policy) {
	if !carryovertype.ValidTenant(r.Tenant) {
		v.add("tenant", "must be %s, got %q", carryovertype.TenantRule, r.Tenant)
	}
	if r.WebhookURL != "" {
		if len(r.WebhookURL) > maxWebhookURL {
			v.add("webhook_url", "is longer than %d bytes", maxWebhookURL)
		} else if err := webhooks.CheckURL(r.WebhookURL); err != nil {
			v.add("webhook_url", "%s", err.Error())
		}
	}
	if len(r.IdempotencyKey) > maxIdempotencyKey {
		v.add("idempotency_key", "is longer than %d characters", maxIdempotencyKey)
	}
}

// maxNULFields bounds how many fields holding a NUL one request reports.
const maxNULFields = 10

// noNUL names every field of the request holding a NUL character (U+0000):
// Postgres refuses it in text and in jsonb, so such a request would fail at
// the insert with an error the producer cannot act on. Strings nested in
// metadata, tools and the JSON Schema count too, keys as well as values.
func (v *fieldErrors) noNUL(r carryovertype.Request) {
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`\u0000`)) {
		// json.Marshal writes a NUL as \u0000, in raw JSON as well (a raw NUL
		// byte is invalid JSON, which options reports); without that text
		// there is none. A marshal error is an invalid raw field, reported too.
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return
	}
	n := 0
	findNUL(doc, "", func(path string) bool {
		v.add(path, "contains a NUL character (\\u0000), which cannot be stored")
		n++
		return n < maxNULFields
	})
}

// findNUL calls found with the path (input[0].content, metadata.a.b) of
// each string or key under doc holding a NUL, until found returns false.
func findNUL(doc any, path string, found func(string) bool) bool {
	switch d := doc.(type) {
	case string:
		if strings.ContainsRune(d, 0) {
			return found(path)
		}
	case []any:
		for i, e := range d {
			if !findNUL(e, fmt.Sprintf("%s[%d]", path, i), found) {
				return false
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.ContainsRune(k, 0) && !found(p) {
				return false
			}
			if !findNUL(d[k], p, found) {
				return false
			}
		}
	}
	return true
}

// requestHash identifies a normalized request (without its idempotency key), so a
// reused key with a different request is refused rather than silently
// answered with another job.
func requestHash(r carryovertype.Request) string {
	r.IdempotencyKey = ""
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ownWords is the request's own words (instructions and input), which auto format
// detection reads.
func ownWords(r carryovertype.Request) string {
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
