package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
)

// goWords are encoding/json's words for a wrong type or an unknown field.
var goWords = regexp.MustCompile(`must be (u?int|int64|float64|bool|string|\[\]|map\[|\*|carryovertype\.)|unmarshal|Go struct|json:`)

// want is one field a refusal must name, and words its message must hold.
type want struct{ field, says string }

// checkRefusal checks a 400 problem document names exactly the fields
// wanted, in that order, each in plain words (never Go's: "int",
// "unmarshal", "Go struct field"), and that its detail names them too.
func checkRefusal(t *testing.T, resp *http.Response, body []byte, wants []want) {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var got, exp []string
	for _, fe := range p.Errors {
		got = append(got, fe.Field+": "+fe.Message)
	}
	for _, w := range wants {
		exp = append(exp, w.field+": …"+w.says+"…")
	}
	if len(p.Errors) != len(wants) {
		t.Fatalf("named\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(exp, "\n  "))
	}
	for i, w := range wants {
		fe := p.Errors[i]
		if fe.Field != w.field || !strings.Contains(fe.Message, w.says) {
			t.Fatalf("error %d is %q, want %q; all:\n  %s", i, got[i], exp[i], strings.Join(got, "\n  "))
		}
		if goWords.MatchString(fe.Message) {
			t.Errorf("%s: %q speaks Go", fe.Field, fe.Message)
		}
		if !strings.Contains(p.Detail, fe.Field+": ") {
			t.Errorf("detail %q does not name %s", p.Detail, fe.Field)
		}
	}
}

// A refused request names every bad field at once, with its full JSON path
// and in plain words: wrong types do not stop the check, every unknown field
// is named with its parent, and range, enum and explicit-zero problems come
// in the same answer. Nothing is stored. (Before, the first wrong type or
// unknown field ended the check, a nested unknown field lost its parent, and
// messages read "must be int".)
func TestRefusalsNameEveryField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tests := []struct {
		name, body string
		wants      []want
	}{
		{"a newcomer's first body", `{"prompt":"x","max_output_tokens":"1000","format":"yaml"}`, []want{
			{"model", "is required"},
			{"input", "is required"},
			{"max_output_tokens", `must be an integer, got the string "1000"`},
			{"format", `must be one of`},
			{"prompt", "is not a field of this request"},
		}},
		{"nested unknown field, range, enum and zero", `{"model":"m","input":"p","continuation":{"max_attempt":3,"max_attempts":99,"on_failure":"maybe","max_records":0}}`, []want{
			{"continuation.max_attempts", "must be between 1 and 50, got 99"},
			{"continuation.on_failure", `must be return_partial or raise_error, got "maybe"`},
			{"continuation.max_records", "got 0"},
			{"continuation.max_attempt", "is not a field of continuation (did you mean max_attempts?)"},
		}},
		{"wrong types at every depth", `{"model":5,"input":[{"role":"user","content":"c","nam":"x"}],"stream":"yes",
			"continuation":{"enabled":1,"error_policy":{"preset":"retry_all","max_retries":"3"}}}`, []want{
			{"model", "must be a string, got 5"},
			{"input[0].nam", "is not a field of input[0]"},
			{"continuation.enabled", "must be true or false, got 1"},
			{"continuation.error_policy.max_retries", `must be an integer, got the string "3"`},
			{"stream", `must be true or false, got the string "yes"`},
		}},
		{"every problem of a policy and of tools", `{"model":"m","input":"p","tools":[{"type":"fn","name":"a b"},{"type":"function","name":"ok"}],
			"continuation":{"error_policy":{"preset":"stop_on_any_error","max_retries":2,"rules":{"network":{"action":"retry"},"model":{"action":"skip"}}}}}`, []want{
			{"continuation.error_policy.max_retries", "takes no retry count"},
			{"continuation.error_policy.rules.model.action", `must be stop, retry or ignore, got "skip"`},
			{"continuation.error_policy.rules.network", "unknown error type"},
			{"tools[0].type", `must be "function"`},
			{"tools[0].name", "must be 1-64 letters"},
		}},
		{"the idempotency header and key differ", `{"model":"m","input":"p","format":"xml","idempotency_key":"other"}`, []want{
			{"format", "must be one of"},
			{"idempotency_key", "differs from the Idempotency-Key header"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := testenv.RandomName("every-")
			resp, b := e.do("POST", "/v1/jobs", tt.body, "Idempotency-Key", key)
			checkRefusal(t, resp, b, tt.wants)
			if n := e.jobsWithKey(t, key); n != 0 {
				t.Fatalf("%d jobs stored for a refused request", n)
			}
		})
	}
}

// Resume options are checked the same way, named as the caller sent them
// (max_attempts, not continuation.max_attempts); a refused resume leaves the
// job as it was.
func TestResumeRefusalsNameEveryField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	a := e.cancelledJob(t)
	tests := []struct {
		name, body string
		wants      []want
	}{
		{"types, ranges and an unknown field", `{"max_attempts":"100","max_cost_usd":-1,"max_record":5,"error_policy":{"preset":"retry_all","max_retries":99}}`, []want{
			{"max_attempts", `must be an integer, got the string "100"`},
			{"max_cost_usd", "must be a positive amount"},
			{"error_policy.max_retries", "must be between 1 and 20, got 99"},
			{"max_record", "(did you mean max_records?)"},
		}},
		{"a negative limit and a zero", `{"max_attempts":-2,"time_limit_seconds":0}`, []want{
			{"max_attempts", "must be positive"},
			{"time_limit_seconds", "got 0"},
		}},
		{"a policy's nested unknown field", `{"error_policy":{"rules":{"model":{"action":"retry","max_retries":2}}}}`, []want{
			{"error_policy.rules.model.max_retries", "is not a field of error_policy.rules.model"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := e.do("POST", a.Links.Resume, tt.body)
			checkRefusal(t, resp, b, tt.wants)
		})
	}
	var st client.Status
	if resp, b := e.do("GET", a.Links.Self, ""); resp.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Status != "cancelled" {
		t.Fatalf("a refused resume changed the job: %s", b)
	}
}

// A job that used all 50 attempts resumes: a resume's max_attempts counts
// the job's chunks, those stored included, and may rise up to 50 more than
// them (the cap is per execution). A value at or under the stored chunks, or
// past the new cap, is refused naming max_attempts with the range it takes;
// so is leaving it out when the job's limit is used up. (Before, 100 was
// "must be between 1 and 50" and 30 "must be more than the 50 chunks already
// stored", both naming continuation.max_attempts.)
func TestResumePastTheAttemptCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	const directive = "[[sim format=csv size=5000 seed=83]]"
	doc, _, _ := simulator.DocumentFor(directive)
	resp, b := e.do("POST", "/v1/jobs", fmt.Sprintf(`{"model":"gpt-4.1-mini","input":"%s rows","format":"csv","max_output_tokens":16,
		"continuation":{"max_attempts":50}}`, directive))
	var a api.Accepted
	if err := json.Unmarshal(b, &a); err != nil || resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	st := e.pollUntil(t, a.Links.Self, 90*time.Second)
	if st.Status != "partial" || st.StopReason != "steps_limit_reached" || st.Chunks != 50 {
		t.Fatalf("before the resume: %s %s %d chunks", st.Status, st.StopReason, st.Chunks)
	}
	for _, tt := range []struct {
		body string
		says string
	}{
		{`{"max_attempts":30}`, "must be between 51 and 100, got 30: it counts the 50 chunks already stored"},
		{`{"max_attempts":50}`, "must be between 51 and 100, got 50"},
		{`{"max_attempts":101}`, "must be between 51 and 100, got 101"},
		{`{"max_records":100000}`, "is needed: the job's limit of 50 chunks is used up; give a new limit between 51 and 100"},
	} {
		resp, b := e.do("POST", a.Links.Resume, tt.body)
		checkRefusal(t, resp, b, []want{{"max_attempts", tt.says}})
	}
	if resp, b := e.do("POST", a.Links.Resume, `{"max_attempts":100}`); resp.StatusCode != 202 {
		t.Fatalf("resume past 50: %d %s", resp.StatusCode, b)
	}
	st = e.pollUntil(t, a.Links.Self, 90*time.Second)
	if st.Status != "succeeded" || st.Chunks <= 50 {
		t.Fatalf("after the resume: %s %s %d chunks", st.Status, st.StopReason, st.Chunks)
	}
	if resp, b := e.do("GET", a.Links.Result, ""); resp.StatusCode != 200 || string(b) != doc {
		t.Fatalf("result after the resume: %d, equal to the document: %v", resp.StatusCode, string(b) == doc)
	}
}

// cancelledJob submits a job and cancels it, so it can be resumed.
func (e env) cancelledJob(t *testing.T) api.Accepted {
	t.Helper()
	_, b := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"p"}`)
	var a api.Accepted
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.do("POST", a.Links.Cancel, ""); resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	return a
}

// pollUntil polls a job's status until it is terminal, at most limit.
func (e env) pollUntil(t *testing.T, self string, limit time.Duration) client.Status {
	t.Helper()
	var st client.Status
	deadline := time.Now().Add(limit)
	for !st.Terminal() {
		if time.Now().After(deadline) {
			t.Fatalf("job did not finish: %s, %d chunks", st.Status, st.Chunks)
		}
		time.Sleep(100 * time.Millisecond)
		_, body := e.do("GET", self, "")
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// The README's example of a refusal is what the API answers.
func TestReadmeRefusalExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)`(\\{[^`]*\\})` gets:\n\n```json\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no example of a refusal")
	}
	var documented api.Problem
	if err := json.Unmarshal(m[2], &documented); err != nil {
		t.Fatalf("the README's example is not JSON: %v", err)
	}
	e := newEnv(t, false)
	resp, b := e.do("POST", "/v1/jobs", string(m[1]))
	var wants []want
	for _, fe := range documented.Errors {
		wants = append(wants, want{fe.Field, fe.Message})
	}
	checkRefusal(t, resp, b, wants)
}
