package carryovertype

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseErrorPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    string // String() of the parsed policy
		wantErr string
	}{
		{in: "", want: "retry_transient_errors(3)"},
		{in: "retry_transient_errors", want: "retry_transient_errors(3)"},
		{in: "retry_transient_errors(5),tool=ignore", want: "retry_transient_errors(5),tool=ignore"},
		{in: "model=retry:5", want: "retry_transient_errors(3),model=retry:5"},
		{in: "stop_on_any_error", want: "stop_on_any_error"},
		{in: "retry_tool_errors(2)", want: "retry_tool_errors(2)"},
		{in: "retry_tool_errors", want: "retry_tool_errors(3)"},
		{in: "ignore_tool_errors", want: "ignore_tool_errors"},
		{in: "retry_all(5),validation=stop,tool=ignore", want: "retry_all(5),tool=ignore,validation=stop"},
		{in: "stop_on_any_error,model=retry:4,timeout=retry", want: "stop_on_any_error,model=retry:4,timeout=retry:3"},
		{in: "retry_all(21)", wantErr: "max_retries"},
		{in: "stop_on_any_error(2)", wantErr: "takes no retry count"},
		{in: "retry_everything", wantErr: "preset"},
		{in: "model=retry:2,retry_all", wantErr: "a preset comes first"},
		{in: "network=retry", wantErr: "unknown error type"},
		{in: "model=skip", wantErr: "rules.model.action"},
		{in: "model=stop:2", wantErr: "only a retry takes a count"},
		{in: "model=retry:x", wantErr: "integer"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			p, err := ParseErrorPolicy(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one about %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != c.want {
				t.Fatalf("parsed as %q, want %q", got, c.want)
			}
		})
	}
}

func TestRuleFor(t *testing.T) {
	t.Parallel()
	type want map[ErrorType]string // action[:n]
	rule := func(r Rule) string {
		if r.Action == ActionRetry && r.MaxConsecutiveRetries > 0 {
			return string(r.Action) + ":" + string(rune('0'+r.MaxConsecutiveRetries))
		}
		return string(r.Action)
	}
	cases := []struct {
		policy string
		want   want
	}{
		// The default: transient errors retried, a refused request or an
		// unusable tool call stopping at once, a rate limit waiting.
		{"", want{ErrModel: "retry:3", ErrTimeout: "retry:3", ErrUnknown: "retry:3", ErrValidation: "stop", ErrTool: "stop", ErrRateLimit: "retry"}},
		{"retry_transient_errors(2)", want{ErrModel: "retry:2", ErrTimeout: "retry:2", ErrUnknown: "retry:2", ErrValidation: "stop", ErrTool: "stop", ErrRateLimit: "retry"}},
		{"validation=retry:1", want{ErrModel: "retry:3", ErrValidation: "retry:1", ErrTool: "stop"}},
		{"stop_on_any_error", want{ErrTool: "stop", ErrModel: "stop", ErrValidation: "stop", ErrTimeout: "stop", ErrUnknown: "stop", ErrRateLimit: "retry"}},
		{"retry_tool_errors(2)", want{ErrTool: "retry:2", ErrModel: "stop", ErrRateLimit: "retry"}},
		{"ignore_tool_errors", want{ErrTool: "ignore", ErrTimeout: "stop"}},
		{"retry_all(4)", want{ErrTool: "retry:4", ErrModel: "retry:4", ErrValidation: "retry:4", ErrUnknown: "retry:4", ErrRateLimit: "retry"}},
		{"retry_all(4),validation=stop,rate_limit=stop", want{ErrValidation: "stop", ErrRateLimit: "stop", ErrTimeout: "retry:4"}},
		{"stop_on_any_error,model=retry:2,tool=ignore", want{ErrModel: "retry:2", ErrTool: "ignore", ErrUnknown: "stop"}},
	}
	for _, c := range cases {
		p, err := ParseErrorPolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		for typ, w := range c.want {
			if got := rule(p.RuleFor(typ)); got != w {
				t.Errorf("%s: %s → %s, want %s", c.policy, typ, got, w)
			}
		}
	}
}

// The JSON form accepts the object and the short string; unknown fields are refused.
func TestErrorPolicyJSON(t *testing.T) {
	t.Parallel()
	var a, b ErrorPolicy
	if err := json.Unmarshal([]byte(`"retry_all(2),tool=ignore"`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"preset":"retry_all","max_retries":2,"rules":{"tool":{"action":"ignore"}}}`), &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || a.String() != "retry_all(2),tool=ignore" {
		t.Fatalf("%q vs %q", a.String(), b.String())
	}
	if err := json.Unmarshal([]byte(`{"preset":"retry_all","retries":2}`), &b); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}
