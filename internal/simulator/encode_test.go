package simulator

import (
	"encoding/json"
	"testing"
)

// appendJSON writes the bytes json.Marshal writes.
func TestAppendJSONIsJSONMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	n := 64
	text := "plain, \"quoted\" \\ <a href='x'>&amp;</a>\n\t\r\b\f\x00\x1f\x7f é 東京 🚀 \u2028\u2029 bad:\xff\xfe end"
	full := &response{ID: "resp_1", Object: "response", CreatedAt: 1700000000, Status: "incomplete", Instructions: str("Be <brief> & exact"),
		MaxOutputTokens: &n, Model: "gpt-4.1-mini", PreviousResponseID: str("resp_0"), ServiceTier: "default", Store: true,
		Temperature: 0.7, Text: json.RawMessage(`{"format":{"type":"json_schema","name":"x y"}}`), ToolChoice: "auto", Tools: json.RawMessage(`[{"type":"function","name":"lookup"}]`),
		TopP: 1, Truncation: "disabled", IncompleteDetails: &incompleteDetails{Reason: "max_output_tokens"},
		Output: []any{reasoningItem{Type: "reasoning", ID: "rs_1", Summary: []struct{}{}},
			messageItem{Type: "message", ID: "msg_1", Status: "incomplete", Role: "assistant",
				Content: []outputText{{Type: "output_text", Text: text, Annotations: []struct{}{}}}},
			functionCallItem{Type: "function_call", ID: "fc_1", CallID: "call_1", Name: "look<up>", Arguments: `{"q":"` + text + `"}`, Status: "incomplete"}},
		Usage: &responseUsage{InputTokens: 10, OutputTokens: 64, TotalTokens: 74}}
	full.Reasoning.Effort = str("medium")
	full.Usage.InputTokensDetails.CachedTokens = 3
	full.Usage.OutputTokensDetails.ReasoningTokens = 5
	cases := map[string]*response{
		"full":    full,
		"empty":   {Text: defaultTextConfig},
		"failed":  {ID: "resp_2", Status: "failed", Error: &responseError{Code: "server_error", Message: "x"}, Output: []any{}, Text: defaultTextConfig},
		"floats":  {Temperature: 1e-7, TopP: 2.5e21, Text: defaultTextConfig},
		"floats2": {Temperature: -0.000001, TopP: 123456.789, Text: defaultTextConfig},
		"nils":    {Output: []any{messageItem{Type: "message"}, functionCallItem{}}, Text: defaultTextConfig},
	}
	for name, r := range cases {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	// What it does not write itself, it leaves to json.Marshal.
	for name, r := range map[string]*response{
		"spaced text config": {Text: json.RawMessage(`{"format": {"type":"text"}}`)},
		"no text config":     {},
		"another item":       {Output: []any{map[string]string{"type": "function_call"}}, Text: defaultTextConfig},
	} {
		if got := r.appendJSON(nil); got != nil {
			t.Errorf("%s: wrote %s", name, got)
		}
	}
}

// Any text and any numbers are written as json.Marshal writes them.
func FuzzAppendJSON(f *testing.F) {
	f.Add("text \"q\" <&> \n é \xff \u2028", 0.7, 1.0, 12, 64)
	f.Fuzz(func(t *testing.T, text string, temp, topP float64, in, out int) {
		r := &response{ID: text, Status: "completed", Temperature: temp, TopP: topP, Text: defaultTextConfig,
			Output: []any{messageItem{Type: "message", Content: []outputText{{Type: "output_text", Text: text, Annotations: []struct{}{}}}},
				functionCallItem{Type: "function_call", Name: text, Arguments: text}},
			Instructions: &text, Usage: &responseUsage{InputTokens: in, OutputTokens: out}}
		want, err := json.Marshal(r)
		got := r.appendJSON(nil)
		if err != nil {
			if got != nil {
				t.Fatalf("wrote %s where json.Marshal fails: %v", got, err)
			}
			return
		}
		if string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
