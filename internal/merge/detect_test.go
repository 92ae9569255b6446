package merge

import "testing"

func TestDetect(t *testing.T) {
	cases := []struct {
		name, hint, content, want string
	}{
		{"diff", "", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "diff"},
		{"json", "", "{\"a\": [1, 2", "json"},
		{"json with code", "Write the Go code as JSON", "{\"file\": \"main.go\", \"code\": \"package main\\n\\tfunc", "json"},
		{"json carrying diffs", "", "{\"files\": [{\"path\": \"a\", \"diff\": \"--- a\\n", "json"},
		{"jsonl", "", "{\"a\":1}\n{\"a\":2}\n{\"a\"", "jsonl"},
		{"code", "", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(1)\n}\n", "code"},
		{"csv by hint", "Give me a CSV of cities", "name,pop\nParis,2\nRome,3\n", "csv"},
		{"csv by content", "", "name,pop,area\nParis,2,105\nRome,3,1285\nOslo", "csv"},
		{"markdown", "", "# Title\n\nSome text.\n\n## Part\n\n- a\n- b\n", "markdown"},
		{"text", "", "It was a bright cold day in April, and the clocks were striking thirteen.", "text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Detect(tc.hint, chunksOf(tc.content))
			if d.Format != tc.want {
				t.Errorf("Detect = %+v, want %s", d, tc.want)
			}
			if d.Confidence <= 0 || d.Confidence > 1 || d.Reason == "" {
				t.Errorf("Detection lacks confidence or reason: %+v", d)
			}
		})
	}
	res, err := Merge(Options{Format: "auto"}, chunksOf("{\"a\": [1, ", "2]}"))
	if err != nil || res.Detection == nil || res.Detection.Format != "json" || res.Content != "{\"a\": [1, 2]}" {
		t.Errorf("auto merge: %+v %v", res, err)
	}
}
