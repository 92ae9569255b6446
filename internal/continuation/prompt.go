package continuation

// continuePrompts are sent as the user turn of every continuation. They are
// short on purpose: with previous_response_id the model already sees its own
// partial answer, and every word here is billed again on each continuation.
var continuePrompts = map[string]string{
	"csv": "Your previous answer was cut off by the output limit. Continue the CSV exactly where it stopped, " +
		"completing the incomplete row first. Do not repeat the header or earlier rows. Output CSV only.",
	"json": "Your previous answer was cut off by the output limit. Continue the JSON exactly where it stopped, " +
		"mid-string or mid-value if needed. Keep the structure, escape properly, do not restart or repeat. Output JSON only.",
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

// ContinuePrompt returns the continuation prompt for a format; unknown
// formats (and auto) get the plain-text prompt.
func ContinuePrompt(format string) string {
	if p, ok := continuePrompts[format]; ok {
		return p
	}
	return continuePrompts["text"]
}
