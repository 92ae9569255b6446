package continuation

import (
	"encoding/json"
	"strings"
	"testing"
)

// Prefill calls carry the deployment's fields, encoded once; other calls do
// not, and fields that cannot be encoded fail only prefill calls.
func TestChatPrefillFields(t *testing.T) {
	req := CallRequest{Model: "m", Input: Input{Prompt: "go"}, Partial: "so far", Strategy: StrategyPrefill}
	p := newChatProvider(newClient(ProviderConfig{}), DefaultPrefillFields())
	for range 2 {
		body, err := p.encode(req)
		var got map[string]any
		if err != nil || json.Unmarshal(body, &got) != nil || got["continue_final_message"] != true ||
			got["add_generation_prompt"] != false || got["model"] != "m" {
			t.Fatalf("prefill body %s, %v", body, err)
		}
	}
	history := req
	history.Strategy, history.Prompt = StrategyHistory, "continue"
	if body, err := p.encode(history); err != nil || strings.Contains(string(body), "continue_final_message") {
		t.Fatalf("history body %s, %v", body, err)
	}
	if body, err := newChatProvider(newClient(ProviderConfig{}), map[string]any{}).encode(req); err != nil || !json.Valid(body) {
		t.Fatalf("no fields: %s, %v", body, err)
	}

	bad := newChatProvider(newClient(ProviderConfig{}), map[string]any{"f": func() {}})
	if _, err := bad.encode(req); err == nil || !strings.Contains(err.Error(), "prefill fields") {
		t.Fatalf("unencodable fields: %v", err)
	}
	if _, err := bad.encode(history); err != nil {
		t.Fatalf("a history call needs no prefill fields: %v", err)
	}
}
