package continuation

import (
	"strings"
	"testing"

	"github.com/carryover/carryover/carryovertype"
)

func TestDecideGuardsAndPolicy(t *testing.T) {
	t.Parallel()
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
		{"a truncated tool call is not continued", func(s *State) {
			s.ToolTruncated = true
			s.ToolError = "cut"
			s.ToolRule = carryovertype.Rule{Action: carryovertype.ActionIgnore}
		},
			false, "finish_reason", StopFinishReason},
		{"tool error stops by default", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", carryovertype.Rule{Action: carryovertype.ActionStop}
		}, false, "error_policy", StopErrorForbade},
		{"tool error ignored completes", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", carryovertype.Rule{Action: carryovertype.ActionIgnore}
		}, false, "finish_reason", StopCompleted},
		{"a cancel during the call stops", func(s *State) { s.Cancelled = true }, false, "user_cancel", StopUserRequested},
		{"tool error retries spent", func(s *State) {
			s.Finish, s.ToolError, s.ToolRule = FinishToolCalls, "bad args", carryovertype.Rule{Action: carryovertype.ActionRetry, MaxConsecutiveRetries: 2}
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
	t.Parallel()
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
