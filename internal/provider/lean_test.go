package provider

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// leanBodies are Responses API objects of the common shape (lean: true)
// and of others, as providers and the simulator send them.
var leanBodies = []struct {
	name string
	body string
	lean bool
}{
	{"completed", `{"id":"resp_1","object":"response","created_at":1764000000,"completed_at":1764000020.5,"model":"gpt-4.1-mini","status":"completed",
		"output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hello ","annotations":[]},{"type":"output_text","text":"world","annotations":[],"logprobs":[]}]}],
		"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14},
		"incomplete_details":null,"error":null,"background":true,"store":true,"text":{"format":{"type":"text"}}}`, true},
	{"incomplete", `{"id":"resp_2","created_at":1764000000,"completed_at":null,"model":"gpt-4.1-mini","status":"incomplete",
		"incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"thinking"}]},
		{"type":"message","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"cut"}]}],
		"usage":{"input_tokens":5,"output_tokens":64,"output_tokens_details":{"reasoning_tokens":40}}}`, true},
	{"queued", `{"id":"resp_3","created_at":1764000000,"model":"gpt-4.1-mini","status":"queued","output":[],"usage":null,"background":true}`, true},
	{"in progress", `{"id":"resp_4","created_at":1764000000.25,"status":"in_progress","output":[]}`, true},
	{"failed", `{"id":"resp_5","created_at":1764000000,"status":"failed","error":{"code":"server_error","message":"the model broke"},"output":[]}`, true},
	{"cancelled", `{"id":"resp_6","created_at":1764000000,"status":"cancelled","output":[],"usage":{"input_tokens":9,"output_tokens":3}}`, true},
	{"refusal", `{"id":"resp_7","created_at":1764000000,"completed_at":1764000001,"status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`, true},
	{"unknown status", `{"id":"resp_8","created_at":1764000000,"status":"pondering","output":[]}`, true},
	{"function call", `{"id":"resp_9","created_at":1764000000,"status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"}]}`, false},
	{"custom tool call", `{"id":"resp_10","status":"completed","output":[{"type":"custom_tool_call","id":"ct_1","call_id":"c","name":"g","input":"x","status":"incomplete"}]}`, false},
	{"web search item", `{"id":"resp_11","status":"completed","output":[{"type":"web_search_call","id":"ws_1","status":"completed"}]}`, false},
	{"status of the wrong type", `{"id":"resp_12","status":7,"output":[]}`, false},
	{"not an object", `[1,2]`, false},
	{"truncated", `{"id":"resp_13","status":"comp`, false},
}

// TestLeanDecodeAgrees checks that the lean decoder takes the common shape
// and only it, and reads it exactly as openai-go's decoder does.
func TestLeanDecodeAgrees(t *testing.T) {
	for _, c := range leanBodies {
		t.Run(c.name, func(t *testing.T) {
			r, ok := decodeLean([]byte(c.body))
			if ok != c.lean {
				t.Fatalf("lean decode taken: %v, want %v", ok, c.lean)
			}
			if !ok {
				return
			}
			got, gerr := r.normalize(time.Second)
			want, werr := decodeFull([]byte(c.body), time.Second)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lean:\n%+v\nopenai-go:\n%+v", got, want)
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("lean error %v, openai-go error %v", gerr, werr)
			}
		})
	}
}

// BenchmarkDecodeResponse compares the two decoders on a completed
// response; run with -bench DecodeResponse ./internal/provider/.
func BenchmarkDecodeResponse(b *testing.B) {
	body := []byte(leanBodies[0].body)
	b.Run("openai-go", func(b *testing.B) {
		for b.Loop() {
			_, _ = decodeFull(body, 0)
		}
	})
	b.Run("lean", func(b *testing.B) {
		for b.Loop() {
			_, _ = decodeResponses(body, 0)
		}
	})
}
