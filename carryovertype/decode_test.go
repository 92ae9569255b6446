package carryovertype

import (
	"fmt"
	"strings"
	"testing"
)

// fieldList writes field errors as "field: message" lines, for comparing.
func fieldList(fields []FieldError) string {
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%s: %s\n", f.Field, f.Message)
	}
	return b.String()
}

// A body is checked in one pass: every wrong type, unknown field (with its
// full path) and explicit 0 is named, in plain words, in the order of the
// request's fields; what is sound still decodes.
func TestDecodeRequestNamesEveryProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       []string // "field: message" lines
	}{
		{"types and an unknown field", `{"prompt":"x","max_output_tokens":"1000","format":7}`, []string{
			`max_output_tokens: must be an integer, got the string "1000"`,
			`format: must be a string, got 7`,
			`prompt: is not a field of this request (did you mean input?)`,
		}},
		{"nested unknown fields keep their parent", `{"model":"m","input":"p","continuation":{"max_attempt":3,"on_failur":"x","zzz":1}}`, []string{
			`continuation.max_attempt: is not a field of continuation (did you mean max_attempts?)`,
			`continuation.on_failur: is not a field of continuation (did you mean on_failure?)`,
			`continuation.zzz: is not a field of continuation`,
		}},
		{"every unknown field", `{"model":"m","input":"p","temperature":1,"top_p":1,"Model":"x","max_tokens":9}`, []string{
			`Model: is not a field of this request (did you mean model?)`,
			`max_tokens: is not a field of this request (did you mean max_output_tokens?)`,
			`temperature: is not a field of this request`,
			`top_p: is not a field of this request`,
		}},
		{"numbers", `{"model":"m","input":"p","max_output_tokens":1.5,"continuation":{"max_attempts":1e3,"max_cost_usd":"1","max_records":99999999999999999999,"enabled":"yes"}}`, []string{
			`max_output_tokens: must be an integer, got 1.5`,
			`continuation.enabled: must be true or false, got the string "yes"`,
			`continuation.max_attempts: must be an integer, got 1e3`,
			`continuation.max_cost_usd: must be a number, got the string "1"`,
			`continuation.max_records: is out of range, got 99999999999999999999`,
		}},
		{"input and messages", `{"model":"m","input":[{"role":"user","content":"a","name":"x"},7,{"role":1}]}`, []string{
			`input[0].name: is not a field of input[0]`,
			`input[1]: must be an object, got 7`,
			`input[2].role: must be a string, got 1`,
		}},
		{"input of the wrong kind", `{"model":"m","input":{"prompt":"p"}}`, []string{
			`input: must be a string (the prompt) or a list of messages, got an object`,
		}},
		{"error policy", `{"model":"m","input":"p","continuation":{"error_policy":{"preset":1,"rules":{"model":{"action":"retry","max_consecutive_retries":"2","tries":1}}}}}`, []string{
			`continuation.error_policy.preset: must be a string, got 1`,
			`continuation.error_policy.rules.model.max_consecutive_retries: must be an integer, got the string "2"`,
			`continuation.error_policy.rules.model.tries: is not a field of continuation.error_policy.rules.model`,
		}},
		{"error policy short form", `{"model":"m","input":"p","continuation":{"error_policy":"model=retry:2,retry_all"}}`, []string{
			`continuation.error_policy: "retry_all": a preset comes first; rules are TYPE=ACTION[:N]`,
		}},
		{"explicit zeros with the rest", `{"model":"m","input":"p","max_output_tokens":0,"format":[],"continuation":{"max_attempts":0,"error_policy":"retry_all(0)"}}`, []string{
			`max_output_tokens: must be between 16 and 200000, got 0; leave it out for the default (4096)`,
			`format: must be a string, got a list`,
			`continuation.max_attempts: must be between 1 and 50, got 0; leave it out for the default (10)`,
			`continuation.error_policy.max_retries: must be between 1 and 20, got 0; leave it out for the default (3)`,
		}},
		{"tenant is not read from a body", `{"model":"m","input":"p","tenant":"acme"}`, []string{
			`tenant: is not a field of this request`,
		}},
		{"nulls are absent", `{"model":"m","input":"p","format":null,"continuation":null,"metadata":null}`, nil},
		{"sound", `{"model":"m","input":[{"role":"user","content":"c"}],"metadata":{"any":["thing",1]},"tools":[{"type":"function","name":"f"}],
			"continuation":{"enabled":false,"error_policy":{"preset":"retry_all","max_retries":2,"rules":{"tool":{"action":"stop"}}}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, fields, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, w := range tt.want {
				want += w + "\n"
			}
			if got := fieldList(fields); got != want {
				t.Fatalf("got\n%swant\n%s", got, want)
			}
		})
	}
}

// What is sound decodes even when something else is not, so validation
// can name its own problems in the same answer.
func TestDecodeRequestKeepsTheSoundPart(t *testing.T) {
	t.Parallel()
	r, fields, err := DecodeRequest([]byte(`{"model":"m","input":"p","format":"yaml","max_output_tokens":"9","continuation":{"max_attempts":99,"bogus":1}}`))
	if err != nil || len(fields) != 2 {
		t.Fatalf("%v %v", fields, err)
	}
	if r.Model != "m" || r.Input.Prompt != "p" || r.Format != "yaml" || r.MaxOutputTokens != 0 || r.Continuation.MaxAttempts != 99 {
		t.Fatalf("decoded %+v", r)
	}
}

func TestDecodeRequestBodyErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ body, want string }{
		{``, "empty"},
		{`{"model":`, "cut off"},
		{`{"model":"m",}`, "at byte"},
		{`{"model":"m"} {}`, "more than one JSON value"},
		{`["model"]`, "must be a JSON object, got a list"},
	} {
		if _, _, err := DecodeRequest([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error saying %q", tt.body, err, tt.want)
		}
	}
}

func TestDecodeResumeOptions(t *testing.T) {
	t.Parallel()
	o, fields, err := DecodeResumeOptions([]byte(`{"max_attempts":"100","max_attempt":1,"max_cost_usd":0,"max_records":5,"error_policy":{"max_retries":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `max_attempts: must be an integer, got the string "100"
max_cost_usd: must be positive, got 0; leave it out to keep the job's value
error_policy.max_retries: must be true or false, got true
max_attempt: is not a field of this request (did you mean max_attempts?)
`
	want = strings.Replace(want, "must be true or false, got true", "must be an integer, got true", 1)
	if got := fieldList(fields); got != want || o.MaxRecords != 5 {
		t.Fatalf("got\n%swant\n%s(%+v)", got, want, o)
	}
}

// Merging keeps the first list's word on a field and on what lies under it.
func TestMergeRequestErrors(t *testing.T) {
	t.Parallel()
	decoded := []FieldError{{Field: "input", Message: "must be a string"}, {Field: "zzz", Message: "is not a field"}}
	validated := []FieldError{{Field: "model", Message: "is required"}, {Field: "input", Message: "is required"},
		{Field: "input[0].role", Message: "bad"}, {Field: "inputs", Message: "kept"}, {Field: "format", Message: "bad"}}
	got := fieldList(MergeRequestErrors(decoded, validated))
	want := "model: is required\ninput: must be a string\nformat: bad\nzzz: is not a field\ninputs: kept\n"
	if got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}

// Within a section, errors follow the section's fields, whichever check
// found them; a name that is not a field comes after those that are.
func TestMergeOrdersBySection(t *testing.T) {
	t.Parallel()
	decoded := []FieldError{{Field: "continuation.max_attempt", Message: "unknown"}, {Field: "continuation.max_records", Message: "zero"}}
	validated := []FieldError{{Field: "input[10].role", Message: "r"}, {Field: "input[2].content", Message: "c"},
		{Field: "continuation.max_attempts", Message: "range"}, {Field: "continuation.on_failure", Message: "enum"},
		{Field: "continuation.error_policy.rules.model.action", Message: "a"}, {Field: "continuation.error_policy.preset", Message: "p"}}
	got := fieldList(MergeRequestErrors(decoded, validated))
	want := "input[2].content: c\ninput[10].role: r\ncontinuation.max_attempts: range\ncontinuation.on_failure: enum\ncontinuation.max_records: zero\n" +
		"continuation.error_policy.preset: p\ncontinuation.error_policy.rules.model.action: a\ncontinuation.max_attempt: unknown\n"
	if got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}
