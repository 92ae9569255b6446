package continuation

import (
	"fmt"
	"strings"
)

// FormatJSONDiffs names JSON documents that carry file diffs (a "diff" or
// "patch" string, or numbered line records), which need their own prompt:
// models tend to fall out of the JSON into raw diff lines.
const FormatJSONDiffs = "json_diffs"

// continuePrompts are sent as the user turn of every continuation. They are
// short on purpose: with previous_response_id the model already sees its own
// partial answer, and every word here is billed again on each continuation.
var continuePrompts = map[string]string{
	"csv": "Your previous answer was cut off by the output limit. Continue the CSV exactly where it stopped, " +
		"completing the incomplete row first. Do not repeat the header or earlier rows. Output CSV only.",
	"json": "Your previous answer was cut off by the output limit. Continue the JSON exactly where it stopped, " +
		"mid-string or mid-value if needed. Keep the structure, balance every bracket, escape properly, do not restart or repeat. Output JSON only.",
	FormatJSONDiffs: "Your previous answer was cut off by the output limit. Continue the JSON exactly where it stopped, " +
		"mid-string if needed. Never write raw diff lines outside the JSON: every diff line goes inside its escaped JSON string " +
		"(\\n between lines) or its numbered record, continuing the numbering. Balance every bracket. Output JSON only.",
	"jsonl": "Your previous answer was cut off by the output limit. Continue the JSON Lines exactly where they stopped, " +
		"completing the incomplete line first. Do not repeat earlier lines. Output JSON Lines only.",
	"markdown": "Your previous answer was cut off by the output limit. Continue the Markdown exactly where it stopped, " +
		"with the same formatting. No preamble, do not repeat what you wrote.",
	"code": "Your previous answer was cut off by the output limit. Continue the code exactly where it stopped, " +
		"with the same indentation. No fences, no commentary, do not repeat what you wrote.",
	"diff": "Your previous answer was cut off by the output limit. Continue the diff exactly where it stopped, " +
		"keeping every line's +/-/space prefix. Do not repeat file or hunk headers already written.",
	"text": "Your previous answer was cut off by the output limit. Continue exactly where it stopped, " +
		"mid-word if needed. No preamble, do not repeat what you wrote.",
}

// ContinuePrompt returns the continuation prompt for a content type (a
// format, or FormatJSONDiffs); unknown ones (and auto) get the plain-text prompt.
func ContinuePrompt(format string) string {
	if p, ok := continuePrompts[format]; ok {
		return p
	}
	return continuePrompts["text"]
}

// Overlap markers: the overlap strategy has the model repeat its last lines
// between them, and the merge uses the repeat to find the exact join.
const (
	OverlapBegin = "---BEGIN_OVERLAP---"
	OverlapEnd   = "---END_OVERLAP---"
)

// overlapLines is how many lines the overlap strategy asks to be repeated,
// by content type: more where a join is hard to place (JSON, file diffs),
// fewer for prose, where a line is long and distinctive.
var overlapLines = map[string]int{
	"csv": 3, "json": 8, FormatJSONDiffs: 10, "jsonl": 3, "markdown": 4, "code": 5, "diff": 6, "text": 2,
}

// OverlapPrompt asks the model to repeat the last n lines between markers,
// then continue; the format's own rules follow.
func OverlapPrompt(format string, n int) string {
	rules := strings.TrimPrefix(ContinuePrompt(format),
		"Your previous answer was cut off by the output limit. ")
	return fmt.Sprintf("Your previous answer was cut off by the output limit. First repeat the last %d lines you wrote, "+
		"exactly as written (the last one may be incomplete), between a line %s and a line %s. "+
		"Then, right after the %s line, continue from the exact character where the repeated text ends. %s",
		n, OverlapBegin, OverlapEnd, OverlapEnd, rules)
}

// OverlapLines is how many lines to ask to be repeated for a partial answer:
// the content type's count (or want, when positive), widened so the
// repeated window does not start inside a structure — a quoted CSV field
// spanning lines, an open JSON record, a diff hunk whose header is near —
// and capped at three times the count. The repeat is paid for out of the
// call's output budget, so it is then narrowed (to one line at least) until
// it takes at most a quarter of maxOutputTokens (at about four bytes a
// token); 0 means no budget. It returns 0 when even the last line is too
// long to repeat: the continuation is then asked for without an overlap.
func OverlapLines(format, partial string, want, maxOutputTokens int) int {
	starts := lineStarts(partial)
	n := overlapWindow(format, partial, starts, want)
	if maxOutputTokens <= 0 {
		return n
	}
	for n > 1 && n <= len(starts) && len(partial)-starts[len(starts)-n] > maxOutputTokens {
		n--
	}
	if n == 1 && len(partial)-starts[len(starts)-1] > maxOutputTokens {
		return 0
	}
	return n
}

// overlapWindow is OverlapLines' count before the budget narrows it; starts
// are partial's lineStarts.
func overlapWindow(format, partial string, starts []int, want int) int {
	n := want
	if n <= 0 {
		n = overlapLines[format]
		if n == 0 {
			n = overlapLines["text"]
		}
	}
	if len(starts) <= n {
		return n
	}
	limit := min(len(starts), 3*n)
	switch format {
	case "csv":
		// Widen while the window's first line starts inside a quoted field.
		inQuote := quoteStates(partial, starts)
		for n < limit && inQuote[len(starts)-n] {
			n++
		}
	case "json", FormatJSONDiffs:
		// Widen to the line where the innermost open record began.
		if at := openRecordLine(partial, starts); at >= 0 && len(starts)-at > n && len(starts)-at <= limit {
			n = len(starts) - at
		}
	case "diff":
		// Include the hunk header when it is within reach.
		for k := len(starts) - n - 1; k >= len(starts)-limit; k-- {
			if strings.HasPrefix(partial[starts[k]:], "@@") {
				n = len(starts) - k
				break
			}
		}
	}
	return n
}

// lineStarts gives the byte offset where each line begins; a trailing
// newline does not start another line.
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s)-1; i++ {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// quoteStates reports, per line start, whether it falls inside a quoted CSV field.
func quoteStates(s string, starts []int) []bool {
	out := make([]bool, len(starts))
	in := false
	line := 0
	for i := 0; i < len(s); i++ {
		for line+1 < len(starts) && starts[line+1] == i {
			line++
			out[line] = in
		}
		if s[i] == '"' {
			in = !in
		}
	}
	return out
}

// openRecordLine is the index of the line where the innermost container
// still open at the end of a JSON text began (below the root), or -1.
func openRecordLine(s string, starts []int) int {
	var stack []int // line index of each open container
	inStr, esc := false, false
	line := 0
	for i := 0; i < len(s); i++ {
		for line+1 < len(starts) && starts[line+1] <= i {
			line++
		}
		c := s[i]
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			stack = append(stack, line)
		case (c == '}' || c == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) < 2 {
		return -1
	}
	return stack[len(stack)-1]
}
