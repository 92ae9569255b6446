package merge

import (
	"encoding/json"
	"regexp"
	"strings"
)

// detectSample bounds how much of the first chunk detection reads.
const detectSample = 8 << 10

// hintWords map words of a request to the format they ask for, strongest
// first: the request says what the user wants before the content shows it.
var hintWords = []struct {
	re     *regexp.Regexp
	format string
}{
	{regexp.MustCompile(`(?i)\b(jsonl|json lines|ndjson|newline-delimited json)\b`), "jsonl"},
	{regexp.MustCompile(`(?i)\b(unified diff|patch|git diff|diff)\b`), "diff"},
	{regexp.MustCompile(`(?i)\b(json)\b`), "json"},
	{regexp.MustCompile(`(?i)\b(csv|tsv|comma-separated|spreadsheet)\b`), "csv"},
	{regexp.MustCompile(`(?i)\b(markdown|readme)\b`), "markdown"},
	{regexp.MustCompile(`(?i)\b(code|function|program|script|class|go|golang|python|javascript|typescript|rust|java|c\+\+|sql|implementation)\b`), "code"},
}

// Detect chooses a format from the request text and the first chunk, and
// says how sure it is. Content evidence that is unambiguous (a diff header,
// a document that parses as JSON) outranks the request; a request that names
// a format decides between weaker content signals.
func Detect(hint string, chunks []Chunk) Detection {
	var sample string
	if len(chunks) > 0 {
		sample = head(chunks[0].Text, detectSample)
	}
	s := strings.TrimSpace(stripLeadingFence(sample))
	hinted := ""
	for _, h := range hintWords {
		if h.re.MatchString(hint) {
			hinted = h.format
			break
		}
	}
	switch {
	case looksLikeDiff(s):
		return Detection{Format: "diff", Confidence: 0.95, Reason: "diff headers in content"}
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		return detectJSON(s, hinted)
	}
	if hinted == "csv" || hinted == "markdown" || hinted == "code" || hinted == "diff" {
		return Detection{Format: hinted, Confidence: 0.8, Reason: "requested in the prompt"}
	}
	if hinted == "json" || hinted == "jsonl" {
		return Detection{Format: hinted, Confidence: 0.6, Reason: "requested in the prompt, content not yet JSON"}
	}
	switch {
	case looksLikeCode(s):
		return Detection{Format: "code", Confidence: 0.75, Reason: "code syntax in content"}
	case looksLikeMarkdown(s):
		return Detection{Format: "markdown", Confidence: 0.7, Reason: "markdown structure in content"}
	case looksLikeCSV(s):
		return Detection{Format: "csv", Confidence: 0.7, Reason: "consistent delimited columns"}
	}
	return Detection{Format: "text", Confidence: 0.5, Reason: "no structure recognized"}
}

// detectJSON reads content s that opens a JSON value: JSON Lines when its
// first lines are whole values, else a JSON document, said to carry diffs
// or code when it looks so.
func detectJSON(s, hinted string) Detection {
	if isJSONLines(s) {
		return Detection{Format: "jsonl", Confidence: 0.95, Reason: "one JSON value per line"}
	}
	reason := "content opens a JSON value"
	switch {
	case strings.Contains(s, `"diff"`) || strings.Contains(s, `"patch"`) || strings.Contains(s, `@@ -`):
		reason = "JSON document carrying file diffs"
	case hinted == "code" || strings.Contains(s, `\n\t`) || strings.Contains(s, `func `) || strings.Contains(s, `def `):
		reason = "JSON document carrying code"
	}
	conf := 0.85
	if hinted == "json" || hinted == "jsonl" {
		conf = 0.95
	}
	return Detection{Format: "json", Confidence: conf, Reason: reason}
}

// stripLeadingFence drops a code fence opening the content, so that a fenced
// JSON or diff is recognized by what is inside.
func stripLeadingFence(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		if _, ok := fenceLine(t[:i]); ok {
			return t[i+1:]
		}
	}
	return s
}

func looksLikeDiff(s string) bool {
	if strings.HasPrefix(s, "diff --git ") || strings.HasPrefix(s, "Index: ") {
		return true
	}
	if strings.HasPrefix(s, "--- ") && strings.Contains(s, "\n+++ ") {
		return true
	}
	return strings.HasPrefix(s, "From ") && strings.Contains(s, "\n--- ") && strings.Contains(s, "\n+++ ") && strings.Contains(s, "\n@@ ")
}

// isJSONLines reports whether the first two lines are each a whole JSON value.
func isJSONLines(s string) bool {
	lines := strings.SplitN(s, "\n", 3)
	if len(lines) < 3 {
		return false
	}
	return json.Valid([]byte(lines[0])) && json.Valid([]byte(lines[1]))
}

var codeSignals = regexp.MustCompile(`(?m)^(package |import |func |def |class |#include|using |public |fn |let |const |var |from \S+ import|//|/\*|\s*(if|for|while|return)\b.*[{:;]\s*$)`)

func looksLikeCode(s string) bool {
	if strings.HasPrefix(strings.TrimSpace(s), "#!") {
		return true
	}
	lines := strings.Split(s, "\n")
	hits := 0
	for _, l := range lines {
		if codeLine(l) {
			hits++
		}
	}
	return hits >= 3 && hits*5 >= len(lines)
}

// codeLine reports whether a line has a code signal: a declaration, an
// import, a comment, a control statement, or a line ending a statement or
// opening a block.
func codeLine(l string) bool {
	t := strings.TrimSpace(l)
	return codeSignals.MatchString(l) || strings.HasSuffix(t, ";") || strings.HasSuffix(t, "{")
}

var markdownSignals = regexp.MustCompile(`(?m)^(#{1,6} |[-*+] |\d+\. |> |\|.*\||` + "```" + `)`)

func looksLikeMarkdown(s string) bool {
	return len(markdownSignals.FindAllStringIndex(s, 4)) >= 2
}

func looksLikeCSV(s string) bool {
	lines := strings.Split(s, "\n")
	if len(lines) < 3 {
		return false
	}
	d := detectDelimiter(lines[0])
	n := countFields(lines[0], d)
	if n < 2 {
		return false
	}
	for _, l := range lines[1 : len(lines)-1] {
		if countFields(l, d) != n {
			return false
		}
	}
	return true
}
