package carryovertype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Explicit values are never defaults. A numeric field whose range excludes
// 0 (max_output_tokens 16..200000, continuation.max_attempts 1..50, a
// budget or guard that must be positive, ...) takes its default when it is
// absent; written as 0 it is refused, naming the field, since a caller who
// wrote 0 meant something — "no retries", "no budget", a computed value that
// came out 0 — that the default would silently not do.
//
// Where an absent field and a 0 can be told apart, a 0 is refused: JSON (the
// HTTP API runs RequestExplicitZeros and ResumeExplicitZeros on each body),
// command-line flags (the enqueue CLI refuses a flag given as 0), and the
// short form of an error policy ("retry_all(0)", "model=retry:0").
//
// In Go, a numeric field's zero value means "not given", as in
// net/http.Server, asynq.Config or river.Config: Request{MaxOutputTokens: 0}
// is the default 4096. Pointer fields would tell the two apart but break
// every producer's code and make request literals awkward, so the Go types
// keep plain numbers; a Go producer that takes requests as JSON from its own
// callers can run RequestExplicitZeros on the bytes, as the HTTP API does.

// ErrExplicitZero is wrapped by the error ParseErrorPolicy (and the JSON
// string form of an error policy) returns for a retry count written as 0.
var ErrExplicitZero = errors.New("an explicit 0 is not a default")

// explicitZeroError is a message naming a field given as 0; it is
// ErrExplicitZero.
type explicitZeroError string

func (e explicitZeroError) Error() string        { return string(e) }
func (e explicitZeroError) Is(target error) bool { return target == ErrExplicitZero }

// ExplicitZero is the error for field (a request's JSON path, e.g.
// "continuation.max_attempts") given as 0, or nil when 0 is within the
// field's range or the field is not numeric. Resume options' fields are
// named as in ResumeOptions' JSON ("max_attempts").
func ExplicitZero(field string) *FieldError {
	msg := zeroMessage(field)
	if msg == "" {
		return nil
	}
	return &FieldError{Field: field, Message: msg}
}

// zeroMessage says, for a field whose range excludes 0, what it must be and
// how to get what absence gives; "" when 0 is not refused.
func zeroMessage(field string) string {
	const policyRetries = "must be between 1 and %d, got 0; leave it out for the default (%d)"
	if strings.HasSuffix(field, ".max_retries") || strings.HasSuffix(field, ".max_consecutive_retries") {
		if strings.HasPrefix(field, "continuation.error_policy.") || strings.HasPrefix(field, "error_policy.") {
			return fmt.Sprintf(policyRetries, MaxPolicyRetries, DefaultPresetRetries)
		}
		return ""
	}
	switch field {
	case "max_output_tokens":
		return fmt.Sprintf("must be between %d and %d, got 0; leave it out for the default (%d)", MinMaxOutputTokens, MaxMaxOutputTokens, DefaultMaxOutputTokens)
	case "continuation.max_attempts":
		return fmt.Sprintf("must be between 1 and %d, got 0; leave it out for the default (%d)", MaxMaxAttempts, DefaultMaxAttempts)
	case "continuation.max_total_output_tokens":
		return "must be positive, got 0; leave it out for no output-token budget"
	case "continuation.max_cost_usd":
		return "must be positive, got 0; leave it out for no cost budget"
	case "continuation.time_limit_seconds":
		return "must be positive, got 0; leave it out for no time limit"
	case "continuation.max_records":
		return "must be positive, got 0; leave it out for no record guard"
	case "continuation.overlap_lines":
		return "must be at least 1, got 0; leave it out for the content type's default"
	case "continuation.max_output_tokens_ceiling":
		return "must be at least max_output_tokens, got 0; leave it out for no ceiling"
	// ResumeOptions: absent keeps the job's value.
	case "max_attempts":
		return fmt.Sprintf("must be more than the chunks the job has stored (and at most %d more), got 0; leave it out to keep the job's value", MaxMaxAttempts)
	case "max_total_output_tokens", "max_cost_usd", "time_limit_seconds", "max_records":
		return "must be positive, got 0; leave it out to keep the job's value"
	}
	return ""
}

// RequestExplicitZeros names every field of a JSON request given as 0
// where its range excludes 0, in the request's order. Bytes that are not
// one JSON object name nothing (decoding them reports that).
func RequestExplicitZeros(data []byte) []FieldError {
	return requestZeros(parseObject(data))
}

// requestZeros is RequestExplicitZeros of an already decoded body (nil
// names nothing): DecodeRequest parses the body once for both.
func requestZeros(doc map[string]any) []FieldError {
	return explicitZeros(doc, []string{"max_output_tokens", "continuation.max_attempts",
		"continuation.max_total_output_tokens", "continuation.max_cost_usd", "continuation.time_limit_seconds",
		"continuation.max_records", "continuation.overlap_lines", "continuation.max_output_tokens_ceiling"},
		"continuation.error_policy")
}

// ResumeExplicitZeros is RequestExplicitZeros for JSON resume options.
func ResumeExplicitZeros(data []byte) []FieldError {
	return resumeZeros(parseObject(data))
}

// resumeZeros is ResumeExplicitZeros of an already decoded body.
func resumeZeros(doc map[string]any) []FieldError {
	return explicitZeros(doc, []string{"max_attempts", "max_total_output_tokens", "max_cost_usd",
		"time_limit_seconds", "max_records"}, "error_policy")
}

// parseObject decodes a JSON object with its numbers as written; nil when
// data is not one.
func parseObject(data []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if dec.Decode(&doc) != nil {
		return nil
	}
	return doc
}

func explicitZeros(doc map[string]any, fields []string, policy string) []FieldError {
	if doc == nil {
		return nil
	}
	var out []FieldError
	add := func(field string) {
		if fe := ExplicitZero(field); fe != nil {
			out = append(out, *fe)
		}
	}
	for _, f := range fields {
		if v, ok := lookup(doc, f); ok && isZero(v) {
			add(f)
		}
	}
	p, ok := lookup(doc, policy)
	if !ok {
		return out
	}
	switch p := p.(type) {
	case string:
		for _, f := range shortFormZeros(p) {
			add(policy + "." + f)
		}
	case map[string]any:
		if isZero(p["max_retries"]) {
			add(policy + ".max_retries")
		}
		rules, _ := p["rules"].(map[string]any)
		for _, t := range slices.Sorted(maps.Keys(rules)) {
			if r, ok := rules[t].(map[string]any); ok && isZero(r["max_consecutive_retries"]) {
				add(policy + ".rules." + t + ".max_consecutive_retries")
			}
		}
	}
	return out
}

// lookup finds a dotted path in a decoded JSON object.
func lookup(doc map[string]any, path string) (any, bool) {
	var v any = doc
	for k := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// isZero reports whether v is a JSON number equal to 0 (0, 0.0, -0, 0e3).
func isZero(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return err == nil && f == 0
}

// shortFormZeros names the retry counts written as 0 in an error policy's
// short form: "max_retries" for "retry_all(0)", "rules.model.max_consecutive_retries"
// for "model=retry:0".
func shortFormZeros(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		typ, rule, isRule := strings.Cut(part, "=")
		if !isRule {
			if m := presetForm.FindStringSubmatch(part); m != nil && m[2] != "" && isZeroCount(m[2]) {
				out = append(out, "max_retries")
			}
			continue
		}
		if _, n, ok := strings.Cut(rule, ":"); ok && isZeroCount(n) {
			out = append(out, "rules."+typ+".max_consecutive_retries")
		}
	}
	return out
}

func isZeroCount(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n == 0
}
