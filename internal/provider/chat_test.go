package provider

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// Prefill calls carry the deployment's fields, encoded once; other calls do
// not, and fields that cannot be encoded fail only prefill calls.
func TestChatPrefillFields(t *testing.T) {
	req := continuation.CallRequest{Model: "m", Input: continuation.Input{Prompt: "go"}, Partial: "so far", Strategy: carryovertype.StrategyPrefill}
	p := newChat(newClient(Config{}), DefaultPrefillFields())
	for range 2 {
		body, err := p.encode(req)
		var got map[string]any
		if err != nil || json.Unmarshal(body, &got) != nil || got["continue_final_message"] != true ||
			got["add_generation_prompt"] != false || got["model"] != "m" {
			t.Fatalf("prefill body %s, %v", body, err)
		}
	}
	history := req
	history.Strategy, history.Prompt = carryovertype.StrategyHistory, "continue"
	if body, err := p.encode(history); err != nil || strings.Contains(string(body), "continue_final_message") {
		t.Fatalf("history body %s, %v", body, err)
	}
	if body, err := newChat(newClient(Config{}), map[string]any{}).encode(req); err != nil || !json.Valid(body) {
		t.Fatalf("no fields: %s, %v", body, err)
	}

	bad := newChat(newClient(Config{}), map[string]any{"f": func() {}})
	if _, err := bad.encode(req); err == nil || !strings.Contains(err.Error(), "prefill fields") {
		t.Fatalf("unencodable fields: %v", err)
	}
	if _, err := bad.encode(history); err != nil {
		t.Fatalf("a history call needs no prefill fields: %v", err)
	}
}
