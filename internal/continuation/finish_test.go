package continuation

import "testing"

func TestNormalizeResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status, reason string
		tools          bool
		want           FinishReason
	}{
		{"completed", "", false, FinishStop},
		{"completed", "", true, FinishToolCalls},
		{"incomplete", "max_output_tokens", false, FinishLength},
		{"incomplete", "content_filter", false, FinishContentFilter},
		{"incomplete", "interrupted", false, FinishIncomplete},
		{"incomplete", "", false, FinishIncomplete},
		{"failed", "", false, FinishError},
		{"cancelled", "", false, FinishError},
		{"", "", false, FinishMalformed},
		{"in_progress", "", false, FinishPending},
		{"queued", "", false, FinishPending},
		{"COMPLETED", "", false, FinishMalformed},
	}
	for _, tt := range tests {
		if got := NormalizeResponses(tt.status, tt.reason, tt.tools); got != tt.want {
			t.Errorf("NormalizeResponses(%q, %q, %v) = %s, want %s", tt.status, tt.reason, tt.tools, got, tt.want)
		}
	}
}

func TestNormalizeChat(t *testing.T) {
	t.Parallel()
	tests := map[string]FinishReason{
		"stop": FinishStop, "length": FinishLength, "tool_calls": FinishToolCalls, "function_call": FinishToolCalls,
		"content_filter": FinishContentFilter, "": FinishMalformed, "eos": FinishMalformed,
	}
	for in, want := range tests {
		if got := NormalizeChat(in); got != want {
			t.Errorf("NormalizeChat(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestContinuePromptCoversEveryFormat(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range []string{"csv", "json", "jsonl", "markdown", "code", "diff", "text"} {
		p := ContinuePrompt(f)
		if p == "" || seen[p] {
			t.Errorf("format %s: missing or shared prompt %q", f, p)
		}
		seen[p] = true
	}
	if ContinuePrompt("auto") != ContinuePrompt("text") {
		t.Error("auto should get the plain-text prompt")
	}
}
