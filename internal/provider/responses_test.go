package provider

import (
	"testing"
	"time"

	"github.com/carryover/carryover/internal/continuation"
)

// A Responses object as the simulator and the OpenAI API send it is read
// for its text (escapes undone), reason, usage and function calls.
func TestDecodeResponses(t *testing.T) {
	cut := `{"id":"resp_1","object":"response","status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},
	 "output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","status":"incomplete","role":"assistant",
	 "content":[{"type":"output_text","text":"a \"quoted\"\nline\t\\ \u003c\u00e9\ud83d\ude80 end","annotations":[]}]}],
	 "usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":64,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":76}}`
	r, err := decodeResponses([]byte(cut), time.Second)
	if want := "a \"quoted\"\nline\t\\ <é🚀 end"; err != nil || r.Text != want || r.Usage.Cached != 4 || r.IncompleteReason != "max_output_tokens" ||
		r.Finish != continuation.FinishLength {
		t.Fatalf("decoded %+v, %v", r, err)
	}
	call := `{"id":"resp_9","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"before the call"}]},
	 {"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"query\":\"x\",\"page\":2}","status":"completed"}]}`
	r, err = decodeResponses([]byte(call), time.Second)
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].CallID != "call_1" || r.ToolCalls[0].Arguments != `{"query":"x","page":2}` {
		t.Fatalf("function call decoded as %+v, %v", r.ToolCalls, err)
	}
}
