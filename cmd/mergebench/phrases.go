package main

// The wording of the habits: what chat models say around a document when
// they continue it. Every list here is a pool of phrasing components that
// the split (split.go) deals out to the tuning and the evaluation half, so
// the evaluation half says things the tuning half never does. The
// components compose: [interjection] + core clause + ending, where a clause
// names the format's noun ("the CSV", "the patch"), a unit ("the last row")
// or a specific of the document at the cut ("row 42", the section being
// written). They are written after the ways GPT, Claude, Llama and Gemini
// models actually phrase them, terse and chatty; none is tuned to the merge.

// A clause is one phrasing component: a template and the sentence endings
// it takes (some of ":.!?…"; for an interjection, the punctuation after it,
// some of ",.!—"). Templates may use {noun} (the format's noun, no
// article), {unit}, {units}, {anchor} (a specific of the document at the
// cut) and {part} (the number of the message).
type clause struct {
	text string
	ends string
}

// interjections open a preamble: "Sure! Here's the rest:".
var interjections = []clause{
	{"Sure", ",!."},
	{"Sure thing", "!."},
	{"Certainly", "!.,"},
	{"Of course", "!.,"},
	{"Absolutely", "!.,"},
	{"Okay", ",."},
	{"OK", ",."},
	{"Alright", ",."},
	{"All right", ",."},
	{"Got it", "!.,"},
	{"No problem", "!.,"},
	{"Understood", ".,"},
	{"Right", ","},
	{"Great", "!,"},
	{"You got it", "!."},
	{"Here you go", "!."},
	{"Gladly", "!."},
	{"Yes", ",!."},
	{"Perfect", "!,"},
	{"Happy to help", "!."},
}

// apologies open a continuation only, never a first answer.
var apologies = []clause{
	{"Apologies for the cutoff", ".!—"},
	{"Sorry about that", ".!—,"},
	{"My apologies, the previous response was truncated", "."},
	{"Thanks for your patience", ".!"},
	{"No worries", "!.,"},
	{"Thanks for waiting", "!."},
	{"Sorry, I ran out of space", ".!—"},
	{"Oops, that got cut off", ".!—"},
}

// preambleClauses introduce a continuation.
var preambleClauses = []clause{
	// Plain and helpful (GPT-style).
	{"here is the rest of the {noun}", ":."},
	{"here's the continuation", ":.!"},
	{"here's the remainder of the {noun}", ":."},
	{"continuing from where I left off", ":.…"},
	{"continuing the {noun}", ":.…"},
	{"here are the remaining {units}", ":."},
	{"the rest of the {noun} follows", ":."},
	{"below is what was left", ":."},
	{"here is the next part", ":.!"},
	{"as requested, here is the continuation of the {noun}", ":."},
	// Explaining what it does (Claude-style).
	{"I'll pick up exactly where the previous response was cut off", ":."},
	{"I'll continue from the exact point where the output stopped", ":."},
	{"the previous response hit the length limit, so here is the rest", ":."},
	{"carrying on from the last {unit}", ":.…"},
	{"resuming mid-{unit}, without repeating anything", ":."},
	{"this continues directly from the end of my last message", ":."},
	{"here's everything after {anchor}", ":."},
	{"continuing right after {anchor}", ":.…"},
	{"picking up at {anchor}", ":.…"},
	{"I'll continue without repeating what was already sent", ":."},
	// Terse (Llama-style).
	{"continued", ":…"},
	{"continuing", ":…"},
	{"rest of the {noun}", ":"},
	{"remaining {units}", ":"},
	{"part {part}", ":"},
	{"next chunk", ":"},
	{"resuming output", ":.…"},
	// Formal (Gemini-style).
	{"the remaining portion of the {noun} is provided below", ":."},
	{"the completion of the {noun} is as follows", ":"},
	{"to complete the {noun}, the remaining {units} are listed below", ":."},
	{"the following completes the {noun}", ":."},
	{"below is the continuation of the {noun}, starting from the point of interruption", ":."},
	// Chatty.
	{"let's keep going", ":.!…"},
	{"let me finish the {noun} for you", ":.!"},
	{"I ran out of room there, so here's the rest", ":.!"},
	{"that got cut off, so let me continue", ":.!"},
	{"here's the next batch of {units}", ":.!"},
	{"almost done, here's the final stretch", ":.!"},
	{"on with the rest of the {noun}", ":.!"},
	{"here's part {part} of the {noun}", ":.!"},
	{"finishing the {noun} now", ":.!…"},
	{"sending the rest now", ":.!…"},
	{"here's what comes next", ":.!"},
	{"and now the remaining {units}", ":.!"},
	{"the {noun} continues below", ":."},
	{"continuing the {noun} from {anchor}", ":.…"},
	{"keeping the same format, here are the next {units}", ":."},
	{"following on from above", ":.…"},
	{"here's the second half", ":.!"},
	{"moving on to the next {units}", ":.…"},
}

// bracketPreambles are the bracketed and Markdown-emphasis forms.
var bracketPreambles = []string{
	"(continued)",
	"(continued from previous message)",
	"[Continuing from {anchor}]",
	"[continued]",
	"[Part {part}]",
	"**Continuation:**",
	"**Continued from above:**",
	"*Picking up where I left off*",
	"*(continued)*",
	"_Continuing the {noun}…_",
	"(…continued)",
	"[Resuming output]",
	"**(Part {part} of the {noun})**",
	"*Continuation of the {noun}:*",
	"(cont.)",
	"[Output continues]",
	"*— continued —*",
	"**Resuming at {anchor}:**",
}

// restartTopClauses announce a continuation that starts over from the top.
var restartTopClauses = []clause{
	{"here is the complete {noun} from the beginning", ":."},
	{"I'll start over from the top so the output is complete", ":."},
	{"here's the full {noun} again, including the part already sent", ":."},
	{"to avoid gaps, I'm reproducing the {noun} from the start", ":."},
	{"starting again from the top", ":.…"},
	{"here is the entire {noun}", ":."},
	{"rewriting the {noun} in full", ":.…"},
	{"for completeness, here is everything from the beginning", ":."},
	{"so nothing is lost, the whole {noun} once more", ":."},
	{"restarting the {noun} to keep it consistent", ":.…"},
	{"here's the full, uninterrupted {noun}", ":."},
	{"I'll regenerate the complete {noun} in one go", ":."},
}

// restartEarlierClauses announce a continuation that backs up a little.
// An anchor names where the repeat starts.
var restartEarlierClauses = []clause{
	{"let me restart from {anchor}", ":."},
	{"repeating from {anchor} for context", ":."},
	{"here's the {noun} again from {anchor}", ":."},
	{"I'll repeat a few {units} for context, then continue", ":."},
	{"picking up a little earlier so the context is clear", ":.…"},
	{"I'll back up a bit and continue from there", ":."},
	{"going back a few {units} to keep things aligned", ":.…"},
	{"restarting from the last complete {unit}", ":.…"},
	{"continuing, with some overlap for safety", ":.…"},
	{"here's the tail end again, then the rest", ":."},
}

// firstClauses introduce the whole answer, before its first line.
var firstClauses = []clause{
	{"here is the {noun} you asked for", ":.!"},
	{"here's the {noun}", ":.!"},
	{"below is the {noun}", ":."},
	{"here is the full {noun}", ":."},
	{"here's the complete {noun} as requested", ":.!"},
	{"I've generated the {noun} below", ":."},
	{"the {noun} is below", ":."},
	{"this is the {noun} based on your requirements", ":."},
	{"I'll write out the full {noun}", ":."},
	{"here is the requested output", ":."},
	{"the requested {noun} follows", ":."},
	{"below you'll find the {noun}", ":."},
	{"here's the {noun} with everything you asked for", ":.!"},
	{"I've put together the {noun}", ":.!"},
	{"the output is below", ":."},
	{"here's the {noun} in full", ":.!"},
	{"following your instructions, here is the {noun}", ":."},
	{"let me write out the {noun}", ":."},
	{"here is the {noun}, formatted as requested", ":."},
	{"I'll produce the {noun} in several parts because it's long", ":."},
	{"the {noun} below contains everything you described", ":."},
	{"here is the {noun} exactly as specified", ":."},
}

// firstNotes are second sentences of a first preamble.
var firstNotes = []string{
	"It's quite long, so it may span several messages.",
	"I've kept the original formatting.",
	"The output is long, so it may be split.",
	"Nothing has been abbreviated.",
	"It may take a couple of responses to finish.",
	"I'll continue if it gets cut off.",
}

// trailerOpeners open a closing remark: "That's it! Let me know…".
var trailerOpeners = []clause{
	{"That's it", "!."},
	{"Done", "!."},
	{"All done", "!."},
	{"There you go", "!."},
	{"And that's everything", "!."},
	{"That's the lot", "!."},
	{"Finished", "!."},
	{"All set", "!."},
	{"Voilà", "!"},
	{"There we go", "!."},
}

// trailerClauses close an answer.
var trailerClauses = []clause{
	{"let me know if you need anything else", ".!"},
	{"I hope this helps", ".!"},
	{"this completes the {noun}", ".!"},
	{"feel free to ask for more", ".!"},
	{"that's the end of the {noun}", ".!"},
	{"let me know if you'd like any changes to the format", ".!"},
	{"if you need the {noun} in a different format, just ask", ".!"},
	{"happy to adjust anything you need", ".!"},
	{"let me know if anything looks off", ".!"},
	{"all {units} are now included", ".!"},
	{"that covers everything you asked for", ".!"},
	{"the {noun} is now complete", ".!"},
	{"you can paste this straight into a file", ".!"},
	{"would you like me to explain any part of it", "?"},
	{"do you want me to add anything else", "?"},
	{"shall I generate more {units}", "?"},
	{"should I check the {noun} for errors as well", "?"},
	{"double-check the values before relying on them", ".!"},
	{"some values may need verification", "."},
	{"this is the complete output", ".!"},
	{"everything after the cut has been included above", "."},
	{"the {noun} should now parse without errors", ".!"},
	{"if anything got duplicated at the boundary, let me know", ".!"},
	{"I've kept the original formatting throughout", ".!"},
	{"thanks for your patience", ".!"},
	{"good luck with your project", ".!"},
	{"hope that's what you were looking for", ".!"},
	{"if you run into any issues, just let me know", ".!"},
	{"I can also convert the {noun} to another format if that helps", ".!"},
	{"let me know if you spot any mistakes", ".!"},
	{"I'm happy to walk through any {unit} in more detail", ".!"},
	{"this concludes the {noun}", ".!"},
	{"nothing has been omitted", ".!"},
	{"that's all the {units}", ".!"},
	{"the full {noun} is above", ".!"},
	{"enjoy", "!."},
	{"happy coding", "!."},
	{"please review it before using it in production", ".!"},
	{"you now have the complete {noun}", ".!"},
	{"want me to summarize the {noun} as well", "?"},
	{"that wraps up the {noun}", ".!"},
	{"any questions, just ask", ".!"},
	{"I stopped exactly at the end of the {noun}", "."},
	{"if you want, I can split the {noun} into smaller files", ".!"},
}

// trailerMarks are the bracketed and Markdown-emphasis closing remarks.
var trailerMarks = []string{
	"(End of file)",
	"[End of the {noun}]",
	"**End of output**",
	"*(Document complete)*",
	"— End —",
	"(end of continuation)",
	"[Output complete]",
	"*Note: the {noun} above is complete.*",
	"(Output ends here.)",
	"**Done.**",
	"[End of response]",
	"*End of the {noun}*",
}

// fenceStyles are the opening fence lines a model wraps an answer of each
// format in. The closing fence is the opening's run of fence characters.
// Four backticks are a careful model's choice only for Markdown that holds
// fences of its own; Markdown is fenced only with a markdown or md tag.
var fenceStyles = map[string][]string{
	"csv":      {"```csv", "```", "```CSV", "~~~csv", "```text", "```plaintext"},
	"json":     {"```json", "```", "```JSON", "~~~json", "```jsonc"},
	"jsonl":    {"```jsonl", "```json", "```", "```ndjson", "~~~jsonl", "```jsonlines"},
	"code":     {"```go", "```", "```golang", "~~~go", "```Go"},
	"diff":     {"```diff", "```", "```patch", "~~~diff", "~~~"},
	"markdown": {"```markdown", "```md", "~~~markdown", "~~~md", "```Markdown", "````markdown", "````md"},
}

// nouns and units name a format's document (singular, so that "the {noun}
// is" reads) and its parts; they are the format's vocabulary, shared by both
// halves.
var nouns = map[string][]string{
	"csv":      {"CSV", "table", "file", "CSV file", "spreadsheet", "dataset"},
	"json":     {"JSON", "array", "file", "object", "JSON output", "dataset"},
	"jsonl":    {"JSONL", "file", "JSON Lines output", "log", "JSONL file"},
	"markdown": {"document", "article", "guide", "Markdown", "page", "text"},
	"code":     {"code", "file", "source", "implementation", "program", "Go file"},
	"diff":     {"patch", "diff", "file", "changeset"},
	"text":     {"text", "passage", "chapter", "document"},
}

var units = map[string][][2]string{
	"csv":      {{"row", "rows"}, {"record", "records"}, {"line", "lines"}},
	"json":     {{"entry", "entries"}, {"object", "objects"}, {"item", "items"}, {"element", "elements"}},
	"jsonl":    {{"record", "records"}, {"line", "lines"}, {"entry", "entries"}},
	"markdown": {{"section", "sections"}, {"paragraph", "paragraphs"}, {"line", "lines"}},
	"code":     {{"function", "functions"}, {"line", "lines"}},
	"diff":     {{"hunk", "hunks"}, {"line", "lines"}, {"change", "changes"}},
	"text":     {{"paragraph", "paragraphs"}, {"sentence", "sentences"}, {"line", "lines"}},
}
