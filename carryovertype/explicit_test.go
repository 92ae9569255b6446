package carryovertype

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// An explicit 0 is named wherever a field's range excludes it; an absent
// field, a 0 where 0 is in range and a non-zero value are not.
func TestExplicitZeros(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		resume     bool
		want       []string
	}{
		{"absent fields", `{"model":"m","input":"p","continuation":{}}`, false, nil},
		{"non-zero values", `{"max_output_tokens":100,"continuation":{"max_attempts":3,"max_cost_usd":0.5,"error_policy":"retry_all(2)"}}`, false, nil},
		{"null is absent", `{"max_output_tokens":null,"continuation":{"max_attempts":null}}`, false, nil},
		{"max_output_tokens", `{"max_output_tokens":0}`, false, []string{"max_output_tokens"}},
		{"every continuation number", `{"continuation":{"max_attempts":0,"max_total_output_tokens":0,"max_cost_usd":0.0,
			"time_limit_seconds":-0,"max_records":0,"overlap_lines":0,"max_output_tokens_ceiling":0e3}}`, false,
			[]string{"continuation.max_attempts", "continuation.max_total_output_tokens", "continuation.max_cost_usd",
				"continuation.time_limit_seconds", "continuation.max_records", "continuation.overlap_lines",
				"continuation.max_output_tokens_ceiling"}},
		{"error policy object", `{"continuation":{"error_policy":{"preset":"retry_all","max_retries":0,
			"rules":{"model":{"action":"retry","max_consecutive_retries":0},"tool":{"action":"retry","max_consecutive_retries":2}}}}}`, false,
			[]string{"continuation.error_policy.max_retries", "continuation.error_policy.rules.model.max_consecutive_retries"}},
		{"error policy short form", `{"continuation":{"error_policy":"retry_all(0),timeout=retry:0,model=retry:2"}}`, false,
			[]string{"continuation.error_policy.max_retries", "continuation.error_policy.rules.timeout.max_consecutive_retries"}},
		{"zeros elsewhere are not ours", `{"metadata":{"max_attempts":0},"continuation":{"max_attempts":5}}`, false, nil},
		{"resume", `{"max_attempts":0,"max_total_output_tokens":0,"max_cost_usd":0,"time_limit_seconds":0,"max_records":0,
			"error_policy":{"max_retries":0}}`, true,
			[]string{"max_attempts", "max_total_output_tokens", "max_cost_usd", "time_limit_seconds", "max_records", "error_policy.max_retries"}},
		{"resume, absent", `{}`, true, nil},
		{"not an object", `[0]`, false, nil},
		{"not JSON", `{"max_output_tokens":0`, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := RequestExplicitZeros
			if c.resume {
				check = ResumeExplicitZeros
			}
			var got []string
			for _, fe := range check([]byte(c.body)) {
				got = append(got, fe.Field)
				if !strings.Contains(fe.Message, "got 0") || !strings.Contains(fe.Message, "leave it out") {
					t.Errorf("%s: message %q does not say what 0 is and what to do", fe.Field, fe.Message)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("named %v, want %v", got, c.want)
			}
		})
	}
}

// A retry count written as 0 in the short form is refused, naming it; left
// out it is the default.
func TestParseErrorPolicyExplicitZero(t *testing.T) {
	t.Parallel()
	for in, field := range map[string]string{
		"retry_all(0)":                    "max_retries",
		"retry_transient_errors(0)":       "max_retries",
		"retry_tool_errors(00)":           "max_retries",
		"stop_on_any_error,model=retry:0": "rules.model.max_consecutive_retries",
	} {
		_, err := ParseErrorPolicy(in)
		if !errors.Is(err, ErrExplicitZero) || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: %v; want an explicit-zero error naming %s", in, err, field)
		}
	}
	p, err := ParseErrorPolicy("retry_all,model=retry")
	if err != nil || p.String() != "retry_all(3),model=retry:3" {
		t.Fatalf("counts left out: %q %v", p.String(), err)
	}
}
