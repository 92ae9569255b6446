package simulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want Spec
		ok   bool
	}{
		{"no directive", DefaultSpec(), false},
		{"x [[sim]] y", DefaultSpec(), true},
		{"Write. [[sim format=csv size=500 seed=9 tag=a-1 reasoning=10 behavior=overlap]]",
			Spec{Format: "csv", Size: 500, Seed: 9, Tag: "a-1", Reasoning: 10, Behavior: "overlap"}, true},
		{"[[sim faults=429@0:2x3,slow@2:3s,500@1x2,cutoff@4]]", Spec{Format: "text", Size: 2000, Seed: 1, Reasoning: -1, Behavior: "exact",
			Faults: []Fault{{Kind: "429", Depth: 0, Arg: "2", Times: 3}, {Kind: "slow", Depth: 2, Arg: "3s", Times: 1},
				{Kind: "500", Depth: 1, Times: 2}, {Kind: "cutoff", Depth: 4, Times: 1}}}, true},
		{"[[sim tool=2 behavior=ignore_overlap faults=break@1x2]]", Spec{Format: "text", Size: 2000, Seed: 1, Reasoning: -1, Behavior: "ignore_overlap",
			Tool: &ToolSpec{Depth: 2, Mode: "ok"}, Faults: []Fault{{Kind: "break", Depth: 1, Times: 2}}}, true},
		{"[[sim tool=0:truncated]]", Spec{Format: "text", Size: 2000, Seed: 1, Reasoning: -1, Behavior: "exact", Tool: &ToolSpec{Depth: 0, Mode: "truncated"}}, true},
		{"[[sim tool=3:invalid]]", Spec{Format: "text", Size: 2000, Seed: 1, Reasoning: -1, Behavior: "exact", Tool: &ToolSpec{Depth: 3, Mode: "invalid"}}, true},
		{"[[sim tool=x]]", Spec{}, false},
		{"[[sim tool=-1]]", Spec{}, false},
		{"[[sim tool=1:maybe]]", Spec{}, false},
		{"[[sim format=yaml]]", Spec{}, false},
		{"[[sim size=-1]]", Spec{}, false},
		{"[[sim colour=red]]", Spec{}, false},
		{"[[sim faults=boom@1]]", Spec{}, false},
		{"[[sim faults=slow@1]]", Spec{}, false},
		{"[[sim format=csv", Spec{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseSpec(tt.text)
		if ok != tt.ok {
			t.Errorf("ParseSpec(%q) ok = %v, want %v", tt.text, ok, tt.ok)
			continue
		}
		if ok && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
	}
}

func TestBadDirectiveIsRefused(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	_, err := newResponse(context.Background(), client, "[[sim format=yaml]]", "", 10)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "format") {
		t.Fatalf("got %v", err)
	}
}

func TestDirectiveInInstructionsAndListInput(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:        "gpt-4o-mini",
		Instructions: openai.String("You are terse. [[sim format=code size=400 seed=3]]"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Write the code.", responses.EasyInputMessageRoleUser),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Document(Spec{Format: "code", Size: 400, Seed: 3})
	if resp.Status != "completed" || resp.OutputText() != want {
		t.Fatalf("status %q text %q", resp.Status, resp.OutputText())
	}
}

func TestHTTPSurface(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	tests := []struct {
		method, path, auth, body string
		status                   int
		contains                 string
	}{
		{"GET", "/healthz", "", "", 200, "ok"},
		{"GET", "/v1/models", "", "", 401, "invalid_api_key"},
		{"GET", "/v1/models", "Bearer ", "", 401, "invalid_api_key"},
		{"GET", "/v1/models", "Bearer k", "", 200, `"object":"list"`},
		{"GET", "/models", "Bearer k", "", 200, `"object":"list"`},
		{"POST", "/responses", "Bearer k", `{"model":"m","input":"[[sim size=10]]"}`, 200, `"status":"completed"`},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, 200, "data: [DONE]"},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`, 400, "tools"},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, 400, "response_format.json_schema.name"},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"yaml"}}`, 400, "response_format.type"},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"}],"continue_final_message":true,"add_generation_prompt":true}`, 400, "continue_final_message"},
		{"POST", "/v1/responses", "Bearer k", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`, 400, "text.format.name"},
		{"POST", "/v1/responses", "Bearer k", `{"model":"m","input":"[[sim size=10]]","stream":true}`, 200, "event: response.completed"},
		{"POST", "/v1/responses", "Bearer k", `{not json`, 400, "invalid_request_error"},
		{"POST", "/v1/chat/completions", "Bearer k", `{"model":"m","messages":[]}`, 400, "messages"},
		{"GET", "/v1/responses/resp_missing", "Bearer k", "", 404, "resp_missing"},
		{"GET", "/v1/responses/resp_missing?stream=true&starting_after=3", "Bearer k", "", 404, "resp_missing"},
		{"POST", "/v1/responses/resp_missing/cancel", "Bearer k", "", 404, "No response found with id 'resp_missing'."},
		{"POST", "/v1/responses", "Bearer k", `{"model":"m","input":"hi","background":true,"store":false}`, 400, `"param":"background"`},
		{"POST", "/v1/responses", "Bearer k", `{"model":"m","input":"[[sim size=10]]","background":true}`, 200, `"status":"queued"`},
		{"GET", "/sim/stats", "", "", 200, `{"created":1,"polls":0,"stream_resumes":0,"cancelled":0,"expired":0,"in_flight":0,"model_calls":0,"rate_limited":0,"rate_tokens":0}`},
		{"GET", "/v1/sim/stats", "Bearer k", "", 404, "unknown_url"},
		{"GET", "/v1/nope", "Bearer k", "", 404, "unknown_url"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status || !strings.Contains(string(body), tt.contains) {
			t.Errorf("%s %s: %d %s, want %d containing %q", tt.method, tt.path, res.StatusCode, body, tt.status, tt.contains)
		}
	}
}

func TestCallsByTag(t *testing.T) {
	t.Parallel()
	sim, client := newTestClient(t, Config{})
	ctx := context.Background()
	for _, tag := range []string{"a", "b", "a"} {
		if _, err := newResponse(ctx, client, "[[sim tag="+tag+"]]", "", 10); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(sim.Calls("a")); got != 2 {
		t.Errorf("Calls(a) = %d, want 2", got)
	}
	if got := len(sim.Calls("b")); got != 1 {
		t.Errorf("Calls(b) = %d, want 1", got)
	}
	if got := len(sim.Calls("none")); got != 0 {
		t.Errorf("Calls(none) = %d, want 0", got)
	}
	c := sim.Calls("b")[0]
	if c.API != "responses" || c.Status != 200 || c.ResponseID == "" || c.OutputTokens != 10 || c.At.IsZero() {
		t.Errorf("call = %+v", c)
	}
}
