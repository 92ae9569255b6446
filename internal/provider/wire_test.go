package provider

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Replies as the simulator and the OpenAI API send them, and some they do not.
var responseSeeds = []string{
	`{"id":"resp_1","object":"response","created_at":1,"status":"incomplete","background":false,"error":null,
	 "incomplete_details":{"reason":"max_output_tokens"},"instructions":null,"max_output_tokens":64,"metadata":{},
	 "model":"gpt-4.1-mini","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1",
	 "status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"a \"quoted\"\nline\t\\ \u003c\u00e9\ud83d\ude80 end","annotations":[]}]}],
	 "parallel_tool_calls":true,"previous_response_id":"resp_0","reasoning":{"effort":"medium","summary":null},
	 "service_tier":"default","store":true,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto",
	 "tools":[],"top_p":1.0e0,"truncation":"disabled","usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},
	 "output_tokens":64,"output_tokens_details":{"reasoning_tokens":-0},"total_tokens":76},"user":null}`,
	`{"id":"resp_2","status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}"},{"type":"message","content":[{"type":"refusal","refusal":"no"},{"type":"output_text","text":"x"}]}]}`,
	`{"id":"resp_3","status":"failed","error":{"code":"server_error","message":"boom"},"output":[],"usage":null}`,
	`{"id":"resp_4","status":"completed","output":null,"incomplete_details":null}`,
	`null`,
	`{}`,
	`{"ID":"upper","Status":"completed"}`,
	`{"id":"a","id":"b","output":[{"type":"message"}],"output":[{}]}`,
	`{"id":"\ud800\u0041 \udc00 \ud800"}`,
	`{"id":"bad \x01 control"}`,
	`{"id":"bad \ud80"}`,
	`{"id":"bad utf-8 ` + "\xff" + `"}`,
	`{"usage":{"input_tokens":1.5}}`,
	`{"usage":{"input_tokens":"1"}}`,
	`{"usage":{"input_tokens":99999999999999999999}}`,
	`{"usage":{"input_tokens":01}}`,
	`{"status":5}`,
	`{"output":{}}`,
	`{"id":"x"} trailing`,
	`{"id":"x",}`,
	`{"a":[1,2,{"b":[true,false,null,-1.5e+3]}],"id":"x"}`,
	`[{"id":"x"}]`,
	`{"output":[null,{"type":"message","content":[null]}]}`,
	` {"id" : "spaced" } `,
	`{"id":"resp_9","status":"completed","error":null,"incomplete_details":null,"output":[{"type":"message","id":"msg_9","status":"completed","role":"assistant","content":[{"type":"output_text","text":"before the call","annotations":[]}]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"query\":\"x\",\"page\":2}","status":"completed"}],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}}`,
}

// The fast decoder handles what the simulator and the API send.
func TestFastDecodeTakesTheUsualReplies(t *testing.T) {
	for _, s := range responseSeeds[:4] {
		var w wireResponse
		if !fastDecode([]byte(s), &w) {
			t.Fatalf("fast decoder gave up on %s", s)
		}
	}
	var w wireResponse
	_ = fastDecode([]byte(responseSeeds[0]), &w)
	text, _ := w.output()
	if want := "a \"quoted\"\nline\t\\ <é🚀 end"; text != want || w.Usage.InputTokensDetails.CachedTokens != 4 || w.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("decoded %q %+v", text, w)
	}
	// A function call's fields are read by the fast path too.
	w = wireResponse{}
	if !fastDecode([]byte(responseSeeds[len(responseSeeds)-1]), &w) {
		t.Fatal("fast decoder gave up on a function call")
	}
	if _, calls := w.output(); len(calls) != 1 || calls[0].CallID != "call_1" || calls[0].Arguments != `{"query":"x","page":2}` {
		t.Fatalf("function call decoded as %+v", calls)
	}
}

// Whatever the fast decoder accepts, encoding/json accepts too, with the same
// result; and decodeResponse always agrees with json.Unmarshal into a zero
// value, even into a wireResponse holding another document's data (nothing of
// it, nor of a fast pass that gave up, is left behind).
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want wireResponse
		wantErr := json.Unmarshal(b, &want)
		var fast wireResponse
		if fastDecode(b, &fast) {
			if wantErr != nil {
				t.Fatalf("fast decoder accepted what encoding/json refuses (%v): %q", wantErr, b)
			}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("fast decoder differs on %q:\n%+v\n%+v", b, fast, want)
			}
		}
		var got wireResponse
		if err := json.Unmarshal([]byte(otherResponse), &got); err != nil {
			t.Fatal(err)
		}
		err := decodeResponse(b, &got)
		if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("decodeResponse(%q) = %+v, %v; json.Unmarshal: %+v, %v", b, got, err, want, wantErr)
		}
	})
}

// otherResponse sets every field a wireResponse has.
const otherResponse = `{"id":"resp_old","status":"completed","incomplete_details":{"reason":"old_reason"},
 "error":{"code":"old_code","message":"old message"},"output":[{"type":"message","id":"msg_old","call_id":"call_old",
 "name":"old","arguments":"{}","input":"old input","status":"completed","content":[{"type":"output_text","text":"old text"}]}],
 "usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":3},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":2}}}`
