package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/testenv"
)

// An explicit 0 for a field whose range excludes it is refused with a 400
// naming the field, and nothing is stored; absent, the field takes its
// default. (Before, every such 0 was read as "absent".)
func TestExplicitZerosRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tests := []struct {
		name   string
		fields string // the request's fields besides model, input and idempotency_key
		want   []string
	}{
		{"max_output_tokens", `"max_output_tokens":0`, []string{"max_output_tokens"}},
		{"max_attempts", `"continuation":{"max_attempts":0}`, []string{"continuation.max_attempts"}},
		{"token budget", `"continuation":{"max_total_output_tokens":0}`, []string{"continuation.max_total_output_tokens"}},
		{"cost budget", `"continuation":{"max_cost_usd":0.0}`, []string{"continuation.max_cost_usd"}},
		{"time limit", `"continuation":{"time_limit_seconds":0}`, []string{"continuation.time_limit_seconds"}},
		{"record guard", `"continuation":{"max_records":0}`, []string{"continuation.max_records"}},
		{"overlap lines", `"continuation":{"strategy":"overlap","overlap_lines":0}`, []string{"continuation.overlap_lines"}},
		{"output-token ceiling", `"continuation":{"max_output_tokens_ceiling":0}`, []string{"continuation.max_output_tokens_ceiling"}},
		{"policy retries", `"continuation":{"error_policy":{"preset":"retry_all","max_retries":0}}`, []string{"continuation.error_policy.max_retries"}},
		{"policy rule retries", `"continuation":{"error_policy":{"rules":{"model":{"action":"retry","max_consecutive_retries":0}}}}`,
			[]string{"continuation.error_policy.rules.model.max_consecutive_retries"}},
		{"policy short form", `"continuation":{"error_policy":"retry_all(0),timeout=retry:0"}`,
			[]string{"continuation.error_policy.max_retries", "continuation.error_policy.rules.timeout.max_consecutive_retries"}},
		{"several at once", `"max_output_tokens":0,"continuation":{"max_attempts":0,"max_records":0}`,
			[]string{"max_output_tokens", "continuation.max_attempts", "continuation.max_records"}},
		{"with an unknown field", `"temperature":0,"continuation":{"max_attempts":0}`, []string{"continuation.max_attempts", "temperature"}},
		{"absent", ``, nil},
		{"absent inside continuation", `"continuation":{}`, nil},
		{"values in range", `"max_output_tokens":100,"continuation":{"max_attempts":1,"max_cost_usd":0.01,"time_limit_seconds":0.5,
			"max_records":1,"max_total_output_tokens":1,"max_output_tokens_ceiling":200,"error_policy":"retry_all(1)"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := testenv.RandomName("zero-")
			body := fmt.Sprintf(`{"model":"gpt-4.1-mini","input":"p","idempotency_key":%q`, key)
			if tt.fields != "" {
				body += "," + tt.fields
			}
			resp, b := e.do("POST", "/v1/jobs", body+"}")
			stored := e.jobsWithKey(t, key)
			if tt.want == nil {
				if resp.StatusCode != 202 || stored != 1 {
					t.Fatalf("%d %s (%d stored); want it accepted", resp.StatusCode, b, stored)
				}
				return
			}
			var p api.Problem
			if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 400 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var got []string
			for _, fe := range p.Errors {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tt.want) || !strings.Contains(p.Detail, tt.want[len(tt.want)-1]) {
				t.Fatalf("named %v (%s), want %v", got, p.Detail, tt.want)
			}
			if stored != 0 {
				t.Fatalf("%d jobs stored for a refused request", stored)
			}
		})
	}
}

// Resume options given as 0 are refused, naming the field; the job is
// left as it was. Absent, a field keeps the job's value.
func TestResumeExplicitZerosRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	a := e.cancelledJob(t)
	for _, tt := range []struct{ body, field string }{
		{`{"max_attempts":0}`, "max_attempts"},
		{`{"max_total_output_tokens":0}`, "max_total_output_tokens"},
		{`{"max_cost_usd":0}`, "max_cost_usd"},
		{`{"time_limit_seconds":0}`, "time_limit_seconds"},
		{`{"max_records":0}`, "max_records"},
		{`{"error_policy":{"preset":"retry_all","max_retries":0}}`, "error_policy.max_retries"},
		{`{"error_policy":"model=retry:0"}`, "error_policy.rules.model.max_consecutive_retries"},
	} {
		resp, b := e.do("POST", a.Links.Resume, tt.body)
		var p api.Problem
		if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 400 || len(p.Errors) != 1 || p.Errors[0].Field != tt.field {
			t.Errorf("resume %s: %d %s; want a 400 naming %s", tt.body, resp.StatusCode, b, tt.field)
		}
	}
	var st struct{ Status string }
	if resp, b := e.do("GET", a.Links.Self, ""); resp.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Status != "cancelled" {
		t.Fatalf("a refused resume changed the job: %s", b)
	}
	if resp, b := e.do("POST", a.Links.Resume, `{"max_records":5}`); resp.StatusCode != 202 {
		t.Fatalf("resume with max_attempts absent: %d %s", resp.StatusCode, b)
	}
}

// jobsWithKey counts the jobs stored under an idempotency key.
func (e env) jobsWithKey(t *testing.T, key string) int {
	t.Helper()
	var n int
	if err := e.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE idempotency_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
