package continuation

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseErrorPolicy(t *testing.T) {
	cases := []struct {
		in      string
		want    string // String() of the parsed policy
		wantErr string
	}{
		{in: "", want: "stop_on_any_error"},
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

func TestDecideGuardsAndPolicy(t *testing.T) {
	base := State{Seq: 2, Finish: FinishLength, Text: "a,b\n", TextSHA: "x", Enabled: true, MaxAttempts: 10}
	cases := []struct {
		name     string
		mod      func(s *State)
		cont     bool
		resolved string
		stop     StopReason
	}{
		{"records below the guard", func(s *State) { s.Budgets.MaxRecords, s.Records = 10, 9 }, true, "finish_reason", ""},
		{"records reach the guard", func(s *State) { s.Budgets.MaxRecords, s.Records = 10, 10 }, false, "max_records", StopGuardForbade},
		{"a broken stream continues", func(s *State) { s.Finish, s.StreamBroken = FinishIncomplete, true }, true, "finish_reason", ""},
		{"a broken stream still meets limits", func(s *State) { s.Finish, s.StreamBroken, s.MaxAttempts = FinishIncomplete, true, 3 }, false, "max_attempts", StopStepsLimit},
		{"a truncated tool call is not continued", func(s *State) { s.ToolTruncated = true; s.ToolError = "cut"; s.ToolRule = Rule{Action: ActionIgnore} },
			false, "finish_reason", StopFinishReason},
		{"tool error stops by default", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", Rule{Action: ActionStop}
		}, false, "error_policy", StopErrorForbade},
		{"tool error ignored completes", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", Rule{Action: ActionIgnore}
		}, false, "finish_reason", StopCompleted},
		{"a cancel during the call stops", func(s *State) { s.Cancelled = true }, false, "user_cancel", StopUserRequested},
		{"tool error retries spent", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", Rule{Action: ActionRetry, MaxConsecutiveRetries: 2}
		}, false, "error_policy", StopRetryLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base
			c.mod(&s)
			o := Decide(s, DefaultCriteria())
			if o.ShouldContinue != c.cont || o.ResolvedBy != c.resolved || o.StopReason != c.stop {
				t.Fatalf("continue=%v resolved_by=%s stop=%s; want %v %s %s (%+v)", o.ShouldContinue, o.ResolvedBy, o.StopReason,
					c.cont, c.resolved, c.stop, o.Evaluations)
			}
		})
	}
}

func TestOverlapLines(t *testing.T) {
	csvDoc := "id,note\n1,plain\n2,\"a field\nspanning\nthree lines\"\n3,x\n4,y"
	jsonDoc := "{\n  \"files\": [\n    {\n      \"path\": \"a.go\",\n      \"diff\": \"@@ -1 +1 @@\\n-x\\n+y\",\n      \"mode\": \"m\",\n" +
		"      \"lines\": 3,\n      \"more\": 1,\n      \"k\": 2,\n      \"l\": 3,\n      \"m\": 4"
	diffDoc := "--- a/x\n+++ b/x\n@@ -1,9 +1,9 @@\n a\n b\n c\n d\n e\n f\n-g\n+h\n i"
	cases := []struct {
		name, format, doc string
		want              int
		n                 int
		budget            int
	}{
		{"text default", "text", "one\ntwo\nthree\nfour", 2, 0, 0},
		{"explicit count", "text", "one\ntwo\nthree\nfour", 3, 3, 0},
		{"short document", "json", "{\n", 8, 0, 0},
		// The last 3 lines start inside the quoted field: widen to its first line.
		{"csv quoted field", "csv", csvDoc[:len(csvDoc)-4], 4, 0, 0},
		{"csv quoted field further back", "csv", csvDoc, 5, 0, 0},
		{"csv plain", "csv", "a,b\n1,2\n3,4\n5,6\n7,8", 3, 0, 0},
		// The innermost open record began 9 lines from the end.
		{"json open record", "json", jsonDoc, 9, 0, 0},
		{"diff hunk header within reach", "diff", diffDoc, 10, 0, 0},
		{"narrowed to a quarter of the budget", "diff", diffDoc, 4, 0, 12},
		{"one line at least", "text", "a long first line\nshort", 1, 0, 6},
		{"no overlap when the last line is too long", "text", "a long first line\na long second line", 0, 0, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := OverlapLines(c.format, c.doc, c.n, c.budget); got != c.want {
				t.Fatalf("OverlapLines = %d, want %d", got, c.want)
			}
		})
	}
	p := OverlapPrompt("csv", 4)
	for _, want := range []string{"repeat the last 4 lines", OverlapBegin, OverlapEnd, "Output CSV only"} {
		if !strings.Contains(p, want) {
			t.Fatalf("overlap prompt lacks %q: %s", want, p)
		}
	}
}
