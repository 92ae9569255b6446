package merge

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A remark is a line in which the model talks about its output ("Sure,
// here is the rest:", "Carrying on from the last row.", "Let me know if you
// need more.") instead of writing it. No list of phrases can hold every way
// a model says so, and a document line may say the same words, so a line is
// taken for a remark on evidence that combines, each kind named in the
// removal's record:
//
//   - where it sits: the first line of a continuation, the last paragraph
//     of the answer; nowhere else;
//   - its form: one short sentence that starts like one and ends with ':',
//     '.', '!', '?' or '…', or a bracketed or emphasised note; no syntax of
//     the format (a Markdown list item, a code statement, a JSON value);
//   - its words: about the output itself (continue, rest, remaining, left
//     off, below, as requested), about the reader (you, let me know) or the
//     model (I, I'll) — a feature that counts, never the rule;
//   - its surroundings: a blank line between it and the document, a cut
//     word it would glue to, a closing fence before it;
//   - and above all verification: a typed format that the line would break
//     where the rest joins cleanly (format.breaks), a join that verifies
//     only without it (the pipeline tries both readings of an uncertain
//     line).
//
// A document line that merely reads like prose stays: the form and the
// position alone are never enough.

// Remark scores: a line scoring remarkSure or more is removed (and kept
// again only if its removal leaves a join no format verifies); one scoring
// remarkMaybe or more is removed only when the join verifies without it
// and not with it.
const (
	remarkSure  = 5
	remarkMaybe = 3
	// remarkWords is the most words a remark runs to: a sentence or two,
	// on its line or over a closing paragraph's lines.
	remarkWords = 40
)

// remark is the evidence that a line is the model's remark.
type remark struct {
	score    int
	evidence []string
	// talks: the line has words that talk about the output (more than
	// naming it).
	talks bool
}

func (r *remark) add(points int, why string) {
	r.score += points
	r.evidence = append(r.evidence, why)
}

// remarkForm reports whether line has the form of a remark: one sentence of
// at most remarkMax bytes, starting with a capital (after an opening
// bracket, emphasis or ellipsis) and ending as a sentence or a note does.
// It returns the line's ending: ':', '.', '!', '?' or ')' for a bracketed
// or emphasised note.
func remarkForm(line string) (byte, bool) {
	s := strings.TrimSpace(line)
	if len(s) < 2 || len(s) > remarkMax {
		return 0, false
	}
	if s[0] == '.' && !strings.HasPrefix(s, "..") {
		// No sentence starts with a lone full stop: it ends the cut
		// line's text ("5" + ".  What did you see instead?").
		return 0, false
	}
	s, smiled := cutSmiley(s)
	if t, ok := cutLeadingPictographs(s); ok {
		s, smiled = t, true
	}
	body, note := unwrapNote(s)
	if body == "" || strings.ContainsAny(body, "\t{}<>=|") || !proseSemicolons(body) {
		return 0, false
	}
	// (A remark may open with emphasis or a quote: "**Continuing** from
	// row 42:", "`newname` onwards:".)
	r, _ := utf8.DecodeRuneInString(strings.TrimLeft(body, "*_\"'“‘`"))
	if !unicode.IsUpper(r) {
		return 0, false
	}
	if words(body) > remarkWords {
		return 0, false
	}
	end := body[len(body)-1]
	switch {
	case smiled && isWordByte(end):
		// "No problem — continuing 👇": the emoji ends the sentence, as
		// chat does.
		return '!', true
	case strings.HasSuffix(body, "…") || strings.HasSuffix(body, "..."):
		return ':', true
	case end == ':' || end == '.' || end == '!' || end == '?':
		return end, true
	case note:
		return ')', true
	case end == ')':
		return asideEnd(body)
	}
	return 0, false
}

// cutSmiley strips what chat ends a sentence with: emoji and other
// pictographs ("Hope this helps! 😊", their modifiers and joiners too) and
// the emoticons typed for them (":)", ";-)", ":D") standing as words of
// their own. ok reports that there was one and text before it; no remark
// is a smiley alone.
func cutSmiley(s string) (string, bool) {
	t := strings.TrimRight(s, " ")
	for {
		r, n := utf8.DecodeLastRuneInString(t)
		switch {
		case n > 0 && (isPictograph(r) || unicode.Is(unicode.Sk, r) && r > 0x7f):
			t = strings.TrimRight(t[:len(t)-n], " ")
		case hasEmoticon(t):
			t = strings.TrimRight(t[:strings.LastIndexByte(t, ' ')], " ")
		default:
			if len(t) == len(strings.TrimRight(s, " ")) || t == "" {
				return s, false
			}
			return t, true
		}
	}
}

// framedLikeDocument reports whether line is a note framed by emphasis
// ("**What did you see instead?**") that the document frames lines with
// too, twice at least: an issue template's questions, a
// changelog's dates. A model's closing note is framed unlike the
// document's lines.
func framedLikeDocument(line, doc string) bool {
	open, close, ok := frameOf(line)
	if !ok || strings.Trim(open, "*_") != "" {
		// (Emphasis only: a document's brackets hold link labels,
		// footnotes, placeholders, "[foo]", "[Illustration]".)
		return false
	}
	n := 0
	for l := range strings.Lines(recentLines(doc, proseWindow)) {
		if o, c, ok := frameOf(l); ok && o == open && c == close {
			n++
		}
	}
	return n >= 2
}

// frameOf returns the marks a note opens and closes with ("**", "*(" and
// ")*"); ok is false for a line that is no note.
func frameOf(line string) (open, close string, ok bool) {
	s := strings.TrimSpace(line)
	if !isNote(s) {
		return "", "", false
	}
	i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' })
	j := strings.LastIndexFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '.' || r == '?' || r == '!' || r == ':'
	})
	if i <= 0 || j < i || j == len(s)-1 {
		return "", "", false
	}
	return s[:i], s[j+1:], true
}

// cutLeadingPictographs strips the emoji chat opens a line with ("🎉
// Done!", "✅ All rows are in."), followed by a space; ok reports that there
// were some and text after them.
func cutLeadingPictographs(s string) (string, bool) {
	t := s
	for {
		r, n := utf8.DecodeRuneInString(t)
		if n == 0 || !isPictograph(r) {
			break
		}
		t = t[n:]
	}
	if len(t) == len(s) || !strings.HasPrefix(t, " ") || strings.TrimSpace(t) == "" {
		return s, false
	}
	return strings.TrimLeft(t, " "), true
}

// isPictograph reports whether r is an emoji or other pictograph, or the
// variation selector and joiner that build one.
func isPictograph(r rune) bool {
	return unicode.Is(unicode.So, r) || r == 0xfe0f || r == 0x200d
}

// emoticons are the smileys typed in plain characters.
var emoticons = []string{":)", ":-)", ";)", ";-)", ":D", ":-D", ":P", "=)", "^^", "^_^"}

// hasEmoticon reports whether s ends with an emoticon standing as a word
// of its own.
func hasEmoticon(s string) bool {
	i := strings.LastIndexByte(s, ' ')
	return i > 0 && slices.Contains(emoticons, s[i+1:])
}

// asideEnd reads a line that ends with an aside in brackets, as models add
// one to a sentence ("Here is the JSON. (It is long.)", "Here it is (in
// two parts)."): the line ends as the sentence before the aside does, or
// as the aside does when the sentence runs into it.
func asideEnd(body string) (byte, bool) {
	i := strings.LastIndexByte(body, '(')
	if i <= 0 || !pairedBrackets(body[i:]) || !pairedBrackets(body[:i]) {
		return 0, false
	}
	pre, inner := strings.TrimSpace(body[:i]), strings.TrimSpace(body[i+1:len(body)-1])
	if inner == "" || pre == "" {
		return 0, false
	}
	if e := pre[len(pre)-1]; strings.IndexByte(":.!?", e) >= 0 {
		return e, true
	}
	if e := inner[len(inner)-1]; strings.IndexByte(".!?", e) >= 0 {
		return e, true
	}
	return 0, false
}

// proseSemicolons reports whether every semicolon in s joins two clauses
// as prose does, after a word and before a space ("I was cut short;
// picking it up"), never as a statement's end does.
func proseSemicolons(s string) bool {
	s = outsideQuotes(s)
	for i := strings.IndexByte(s, ';'); i >= 0; i = strings.IndexByte(s, ';') {
		if !letterBefore(s, i) || !strings.HasPrefix(s[i+1:], " ") || !letterAt(s, i+2) {
			return false
		}
		s = s[i+1:]
	}
	return true
}

// outsideQuotes is s less what it quotes in double quotes or backticks: a
// remark may quote the document's last words, their punctuation and all
// ("Here's everything after \"Glass to the other;\".").
func outsideQuotes(s string) string {
	if !strings.ContainsAny(s, "\"`“") {
		return s
	}
	var b strings.Builder
	var close rune
	for _, r := range s {
		switch {
		case close != 0:
			if r == close {
				close = 0
			}
		case r == '"' || r == '`':
			close = r
		case r == '“':
			close = '”'
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// remarkMax bounds a remark's length: models keep them to a sentence.
const remarkMax = 200

// unwrapNote strips a bracketed or emphasised note's marks (nested, as in
// "*(continued)*"), dashes and ellipses around it: "(continued)",
// "[Continuing from row 42]", "**Continuation:**", "*— continued —*",
// "...continuing". note reports that the line was bracketed or emphasised
// as a whole.
func unwrapNote(s string) (body string, note bool) {
	if b := strings.TrimLeft(s, ".… "); len(b) < len(s) && (strings.HasPrefix(s, "...") || strings.HasPrefix(s, "…")) && b != "" && wordsOnly(b) {
		// Led by an ellipsis: "...continued", "…continuing from row 42".
		s, note = b, true
	}
	for k := 0; k < 2; k++ {
		b, ok := unframe(s)
		if !ok {
			break
		}
		s, note = b, true
	}
	s = strings.TrimRight(strings.TrimLeft(s, ".…—–- "), "—–- ")
	if note && !holdsWord(s) {
		// A frame around no word is markup or data ("-PL-R-0V0E-"),
		// not a note to the reader.
		return s, false
	}
	if note && s != "" {
		// Notes are often lower case: "(continued)".
		r, n := utf8.DecodeRuneInString(s)
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	return s, note
}

// frameMarks are the marks a note is framed by: brackets, emphasis, and
// rules of dashes, tildes or equals signs. (Never braces: "{not a block}"
// is a code's or a data's own.)
const frameMarks = "()[]<>«»*_~=-—–"

// unframe strips one frame around s: a run of frameMarks (and spaces) that
// opens it and its mirror image that closes it ("(…)", "**[…]**", "<…>",
// "-- … --", "*— … —*"). The text inside may hold no emphasis of its own
// ("**a** and **b**" is text, not one note), and brackets only in pairs.
func unframe(s string) (string, bool) {
	open := strings.TrimRight(s[:len(s)-len(strings.TrimLeft(s, frameMarks))], " ")
	if open == "" {
		return s, false
	}
	closing := mirror(open)
	if !strings.HasSuffix(s, closing) || len(s) <= len(open)+len(closing) {
		return s, false
	}
	body := strings.TrimSpace(s[len(open) : len(s)-len(closing)])
	if body == "" || strings.ContainsAny(strings.Trim(body, "()[]*_"), "{}<>«»*_") || !pairedBrackets(body) {
		return s, false
	}
	if strings.Trim(open, "([*_—– ") != "" && !wordsOnly(body) {
		// Angle brackets, rules: frames that markup uses too
		// ("<foo@bar.example.com>"), a note only around plain words.
		return s, false
	}
	return body, true
}

// pairedBrackets reports whether the brackets of s close in pairs, as a
// note's aside does ("Part 3 (continued):"); "a) and (b", the inside of
// "(a) and (b)", is two notes, not one.
func pairedBrackets(s string) bool {
	var open []rune
	for _, r := range s {
		switch r {
		case '(', '[':
			open = append(open, r)
		case ')', ']':
			if len(open) == 0 || mirror(string(open[len(open)-1])) != string(r) {
				return false
			}
			open = open[:len(open)-1]
		}
	}
	return len(open) == 0
}

// wordsOnly reports whether s is plain words: letters, digits, spaces and
// a sentence's punctuation.
func wordsOnly(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" .,'’!?:;…-—", r) {
			return false
		}
	}
	return true
}

// holdsWord reports whether s holds a word: a run of three letters at least
// that no digit touches.
func holdsWord(s string) bool {
	n, digit := 0, false
	for _, r := range s + " " {
		switch {
		case unicode.IsLetter(r):
			n++
		case unicode.IsDigit(r):
			n, digit = 0, true
		default:
			if n >= 3 && !digit {
				return true
			}
			n, digit = 0, false
		}
	}
	return false
}

// mirror returns the frame that closes the frame open: its marks in
// reverse order, brackets turned round.
func mirror(open string) string {
	rs := []rune(open)
	out := make([]rune, len(rs))
	for i, r := range rs {
		switch r {
		case '(':
			r = ')'
		case '[':
			r = ']'
		case '<':
			r = '>'
		case '«':
			r = '»'
		}
		out[len(rs)-1-i] = r
	}
	return string(out)
}

// words counts the words of s.
func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\''
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// Words that talk about the output. Each list is a kind of evidence; a line
// earns each kind once, and what a kind weighs depends on where the line
// stands (see wordKinds). A pattern is one or more words; a word ending in
// '*' matches every word it begins ("continu*": continue, continuing,
// continuation), so a list holds ways of saying a thing, not phrasings.
var (
	// goOnWords say the output goes on from somewhere: a continuation's
	// preamble.
	goOnWords = []string{
		"continu*", "resum*", "remain*", "rest", "leftover*", "left off", "was left", "is left", "what's left",
		"truncat*", "interrupt*", "cut off", "got cut", "cut short", "stopped", "pick up", "picking up",
		"picks up", "carry on", "carrying on", "carries on", "proceed*", "go on", "going on", "goes on",
		"keep going", "moving on", "move on", "onward*", "further", "next", "where i", "where we",
		"where it", "where the", "from where", "from here", "from there", "after row", "after line",
		"following on", "follow on", "from above", "back to", "last part", "final part", "second part", "part #",
		"final stretch", "more rows", "more lines", "more entries", "again", "restart*",
		"start over", "starting over", "from the top", "from the beginning", "once more",
		"without repeating", "already sent", "already provided", "already shown", "previous response",
		"previous message", "previous reply", "previous part", "last response", "last message",
		"length limit", "token limit", "output limit", "ran out", "the limit", "cont", "cont'd", "contd",
		"go back", "going back", "back up", "backing up", "earlier", "for context", "overlap*", "repeat*",
		"seamless*", "recap*",
		"here goes", "finish*", "complete the", "completing",
	}
	// presentWords present the output, or answer a request.
	presentWords = []string{
		"here is", "here's", "here are", "here you go", "here it is", "below", "above", "as requested",
		"as asked", "you asked", "you requested", "requested", "of course", "got it", "no problem",
		"no worries", "apolog*", "sorry", "will do", "sounds good", "you got it", "let me", "let's",
		"as promised", "as follows", "follows",
	}
	// selfWords are the model speaking of itself: "I've kept", "I'll go
	// on". Not "we": a project's documents speak so ("issues we've
	// processed", "we'll do our best"), a model of itself as "I".
	selfWords = []string{
		"i'll", "i will", "i've", "i have", "i'm", "i am", "i can", "i'd", "i kept", "i stopped", "i left",
		"i added", "i used", "i made", "i wrote", "i continued", "i included", "i omitted", "i preserved",
		"i did", "i didn't", "me", "my", "let me", "let's", "i trust", "i believe",
		"i checked", "i double-checked", "i verified", "i reproduced", "i copied", "i formatted", "i converted",
		"i corrected", "i retained", "i maintained", "i completed", "i ensured", "i made sure", "i went ahead",
		"i could", "i would", "i might",
	}
	// readerWords address the reader, or offer more: a trailer's.
	readerWords = []string{
		"let me know", "feel free", "if you need", "if you'd like", "if you want", "if you have",
		"would you like", "do you want", "want me to", "shall i", "should i", "anything else", "hope*",
		"happy to", "glad to", "just ask", "if that helps",
		"happy coding", "don't hesitate", "reach out", "good luck", "enjoy", "cheers", "any questions",
		"any changes", "any issues", "any adjustments", "further changes", "further help", "more help",
		"have a great", "have a good", "have a nice", "have fun", "take care", "best of luck", "all the best",
		"happy reading", "happy writing", "happy hacking", "regards", "best wishes", "ciao", "bye", "goodbye",
		"other questions", "if that's easier", "if it's easier", "if you prefer", "if you'd prefer",
		"good day", "good night", "over to you", "your turn", "whenever you", "any feedback", "sorry", "apolog*",
		"ping me", "shout", "say the word", "any tweaks", "another pass", "looks off", "look off",
		"come through", "came through", "your patience",
	}
	// youWords speak to the reader without offering anything: weaker.
	youWords = []string{
		"you", "your", "please", "question*", "help*", "can also", "thanks", "thank you",
	}
	// adviceWords advise the reader on using the output: a trailer's.
	adviceWords = []string{
		"make sure", "be sure", "double-check", "double check", "verify", "review it", "review the",
		"before using", "before relying", "in production", "keep in mind", "remember to", "note that",
		"test it", "check the", "adjust*", "tweak*", "modify it", "customiz*", "be careful",
		"sanity check",
	}
	// caveatWords weigh the output against its source, or vouch for it:
	// how faithful the copy is ("may differ slightly from the original"),
	// whether it works ("should now parse without errors"), a trailer's.
	caveatWords = []string{
		"the original", "the source", "original text", "source text", "may differ", "might differ",
		"may vary", "might vary", "could vary", "slightly", "differences from", "match the", "matches the",
		"faithful*", "exactly as", "should now", "without errors", "parses cleanly", "parse cleanly",
		"should work", "should compile",
	}
	// doneWords say the output is complete: a trailer's.
	doneWords = []string{
		"complete", "completes", "completed", "conclud*", "conclusion", "that's all", "that's it",
		"that is all", "end of", "full", "entire", "whole", "done", "finished", "all set", "there you go",
		"that covers", "included", "includes", "ends here", "end here", "the end", "end", "wraps up",
		"in full", "throughout", "as is", "unchanged", "nothing more", "no more", "final", "nothing else",
		"nothing further", "intact", "verbatim", "as written", "word for word", "untouched",
		"that's everything", "is everything", "be everything", "everything you need", "that should be it",
		"remainder", "in its entirety", "start to finish",
		"top to bottom", "the lot", "omitted", "left out", "brings us to", "wrapping up", "wrap up",
		"wraps it up", "wrap it up", "wraps things up",
		"the last of it", "been provided", "been included", "been appended", "been reproduced", "been copied",
		"skipped",
	}
	// outputWords name the output itself.
	outputWords = []string{
		"document*", "file*", "output*", "respons*", "answer*", "repl*", "message*", "text*", "data*",
		"row*", "record*", "entr*", "table*", "list*", "csv", "json*", "code*", "patch*", "diff", "diffs",
		"markdown", "line*", "item*", "section*", "content*", "array*", "object*", "script*",
		"snippet*", "listing*", "result*", "chapter*", "passage*", "stor*", "article*", "essay*",
		"guide*", "readme", "implementation*", "program*", "module*", "function*", "changeset*",
		"change*", "value*", "source*", "translation*", "summar*", "report*", "export*", "spreadsheet*",
		"sheet*", "schema*", "format*", "excerpt*", "page*", "book*", "note*", "log*", "example*",
		"sample*", "chunk*", "portion*", "batch*", "block*", "element*", "field*", "column*", "hunk*",
		"paragraph*", "sentence*", "heading*",
	}
)

// wordKind is one list of talking words and what it weighs at the start
// and at the end of an answer's text.
type wordKind struct {
	words      []string
	start, end int
	name       string
	// names: the words name the output, and one the document uses
	// itself is no evidence (talkAgainst).
	names bool
	// negatable: a negation before a word denies it (saysWord).
	negatable bool
}

// wordKinds are the kinds of talking words, with their weights: a preamble
// says it goes on or presents, a trailer addresses the reader or says it
// is done; either may name the output.
func wordKinds() [9]wordKind {
	return [9]wordKind{
		{goOnWords, 3, 1, "words about going on", false, false},
		{presentWords, 1, 1, "words presenting the output", false, false},
		{selfWords, 1, 2, "the model speaks of itself", false, false},
		{readerWords, 1, 3, "words to the reader", false, false},
		{youWords, 0, 1, "speaks to the reader", false, false},
		{adviceWords, 0, 2, "advises on the output", false, false},
		{caveatWords, 0, 2, "weighs the output against its source", false, false},
		{doneWords, 0, 3, "words about being done", false, true},
		{outputWords, 1, 1, "names the output", true, false},
	}
}

// interjections open a reply when punctuation follows them ("Sure,",
// "Okay.", "Perfect!"); followed by a word they are the document's ("Right
// Hand", "Great Britain").
var interjections = []string{
	"sure", "certainly", "okay", "ok", "alright", "all right", "absolutely", "understood", "great",
	"perfect", "gladly", "yes", "yep", "right", "got it", "no problem", "of course", "sorry",
	"apologies", "excellent", "thanks", "thank you", "cool", "awesome", "noted",
}

// interjected reports whether l (lower case) opens with an interjection
// followed by punctuation, returning it.
func interjected(l string) (string, bool) {
	l = strings.TrimLeft(l, "([*_.…—–- ")
	for _, w := range interjections {
		if rest, ok := strings.CutPrefix(l, w); ok && rest != "" && strings.IndexByte(",.!;:—–-", rest[0]) >= 0 {
			return w, true
		}
		if rest, ok := strings.CutPrefix(l, w); ok && strings.HasPrefix(rest, " —") {
			return w, true
		}
	}
	return "", false
}

// openers are the words a reply opens with ("Sure, ...", "Here's ...",
// "Continuing ..."): a remark that opens like a reply is one more piece of
// evidence.
var openers = []string{
	"continuing", "continued", "continuation", "resuming", "picking", "carrying",
	"proceeding", "let", "let's", "i'll", "i've", "as requested", "now", "hope", "feel", "please", "that's",
	"this", "that", "all", "end", "if", "would", "should", "shall", "do", "is there", "happy", "enjoy",
	"want", "good",
}

// talk scores the words of line that talk about the output; atEnd: the line
// closes the answer.
func talk(line string, atEnd bool, r *remark) { talkAgainst(line, atEnd, nil, r) }

// talkAgainst is talk where a name for the output that the document's own
// words match (own, its recent text's word tokens) is no evidence: a
// document's last paragraph that names its subject in the words the
// document uses throughout is its own ("The original implementation is
// used when…" in a README about the original implementation).
func talkAgainst(line string, atEnd bool, own []string, r *remark) {
	l := strings.ToLower(line)
	toks := wordTokens(l)
	if w, ok := interjected(l); ok {
		r.add(2, "opens with an interjection: "+w)
		r.talks = true
	} else if w, ok := opensWith(strings.TrimLeft(l, "([*_.…—–- "), openers); ok {
		r.add(1, "opens like a reply: "+w)
	}
	for _, k := range wordKinds() {
		points := k.start
		if atEnd {
			points = k.end
		}
		if points == 0 {
			continue
		}
		o := own
		if !k.names {
			// (How the model speaks, of going on, of being done, to the
			// reader, is evidence in whatever words.)
			o = nil
		}
		var allowed func([]string, string) bool
		if k.negatable {
			// "not included in the standard library" says nothing is done.
			allowed = affirmed
		}
		if k.names && atEnd {
			// (A preamble names its anchor in the document's words as it
			// stands: "Here's everything after README.md.")
			allowed = determined
		}
		if w, ok := findWord(toks, k.words, o, allowed); ok {
			r.add(points, k.name+": "+w)
			r.talks = r.talks || k.name != "names the output"
		}
	}
}

// letterBefore reports whether a letter or digit ends l[:i].
func letterBefore(l string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(l[:i])
	return i > 0 && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// letterAt reports whether a letter or digit starts l[i:].
func letterAt(l string, i int) bool {
	r, _ := utf8.DecodeRuneInString(l[i:])
	return i < len(l) && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// opensWith returns the first of ws that l (lower case) opens with, as
// whole words.
func opensWith(l string, ws []string) (string, bool) {
	for _, w := range ws {
		if strings.HasPrefix(l, w) && !letterAt(l, len(w)) && !strings.HasPrefix(l[len(w):], "'") {
			return w, true
		}
	}
	return "", false
}

// inVoice reports whether a lower-cased line speaks in a model's voice:
// to the reader, of itself, or after an opening interjection.
func inVoice(l string) bool {
	if _, ok := interjected(l); ok {
		return true
	}
	for _, ws := range [][]string{selfWords, readerWords, youWords} {
		if _, ok := hasWord(l, ws); ok {
			return true
		}
	}
	return false
}

// determiners point a noun at a thing: "the table", "a file",
// "this file", "all rows", "the remaining entries" (see determined).
var determiners = []string{
	"the", "a", "an", "this", "that", "these", "those", "all", "every", "each", "your", "my", "our", "its",
	"entire", "whole", "full", "complete", "remaining", "rest", "more", "next", "last", "final",
	"following", "same", "original", "any", "no", "some", "both", "other", "further",
}

// hasWord returns the first of the patterns ws (see goOnWords) that the
// lower-case line l holds as whole words (see wordMatches).
func hasWord(l string, ws []string) (string, bool) {
	return findWord(wordTokens(l), ws, nil, nil)
}

// findWord returns the first of the patterns ws that the word tokens toks
// hold in a row where allowed, given the tokens before the match and the
// pattern, says it counts (nil: everywhere); patterns that own (another
// text's tokens) holds too are skipped.
func findWord(toks, ws, own []string, allowed func(before []string, w string) bool) (string, bool) {
	for _, w := range ws {
		pw := strings.Fields(w)
		if own != nil && matchWords(own, pw) {
			continue
		}
		for i := 0; i+len(pw) <= len(toks); i++ {
			if slices.EqualFunc(toks[i:i+len(pw)], pw, wordMatches) && (allowed == nil || allowed(toks[:i], w)) {
				return w, true
			}
		}
	}
	return "", false
}

// determined reports whether a determiner stands among the two words
// before a name of the output ("the file", "this whole document", "all
// rows"): "implements elementary functions" names a thing of the
// document's, not the answer.
func determined(before []string, _ string) bool {
	return slices.ContainsFunc(before[max(0, len(before)-2):], func(t string) bool { return slices.Contains(determiners, t) })
}

// affirmed reports whether no negation stands among the three words
// before a pattern ("not included"), or the pattern denies itself
// ("omitted", "left out"): "no rows were omitted" says the output is whole.
func affirmed(before []string, w string) bool {
	return slices.Contains(denials, w) ||
		!slices.ContainsFunc(before[max(0, len(before)-3):], func(t string) bool { return slices.Contains(negations, t) })
}

// negations deny what follows them: "without repeating", "no need to
// start over", "won't repeat".
var negations = []string{"without", "not", "no", "never", "nor", "won't", "don't", "cannot", "can't"}

// denials are the words of a list that say what is not there.
var denials = []string{"omitted", "left out", "untouched", "unchanged", "intact", "skipped"}

// saysWord reports whether the lower-case line l holds one of the patterns
// ws as whole words with no negation among the three words before it.
func saysWord(l string, ws []string) bool {
	_, ok := findWord(wordTokens(l), ws, nil, func(before []string, _ string) bool { return affirmed(before, "") })
	return ok
}

// wordTokens splits the lower-case text l into its words, apostrophes
// and hyphens inside a word kept ("i'll", "double-check").
func wordTokens(l string) []string {
	toks := strings.FieldsFunc(l, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’' && r != '-'
	})
	for i := range toks {
		toks[i] = strings.Trim(strings.ReplaceAll(toks[i], "’", "'"), "'-")
	}
	return toks
}

// matchWords reports whether the pattern words pw stand in toks in a row.
func matchWords(toks, pw []string) bool {
	for i := 0; i+len(pw) <= len(toks); i++ {
		if slices.EqualFunc(toks[i:i+len(pw)], pw, wordMatches) {
			return true
		}
	}
	return false
}

// wordMatches reports whether the token t is the pattern word p: the same
// word, a word p's stem begins (p ends with '*'), or for '#' a number, in
// digits or in words.
func wordMatches(t, p string) bool {
	if p == "#" {
		return t != "" && strings.Trim(t, "0123456789") == "" || slices.Contains(numberWords, t)
	}
	if stem, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(t, stem)
	}
	return t == p
}

// numberWords are the numbers a model writes out ("part two").
var numberWords = []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}

// formEvidence scores how a remark ends.
func formEvidence(end byte, r *remark) {
	switch end {
	case ':':
		r.add(1, "ends with ':'")
	case '!', '?':
		r.add(1, "ends with '"+string(end)+"'")
	case ')':
		r.add(2, "a bracketed note")
	}
}

// judgePreamble weighs a continuation's first line as a preamble. after is
// the text that follows the line (its line break gone), blank whether a
// blank line separates the two.
func judgePreamble(line, after string, blank bool, c envCtx) (remark, bool) {
	var r remark
	end, ok := remarkForm(line)
	if !ok || c.hasSyntax(line) {
		return r, false
	}
	over := startsOver(line, c) && !wordStartApart(line, after, c)
	if over && !wordStartAlone(line, after, c) {
		return r, false
	}
	r.add(1, "first line of a continuation")
	if over {
		// The line may start the cut word over ("Th" + "The rest…"):
		// only what it says can outweigh that.
		r.add(-2, "starts with the cut word's letters")
	}
	formEvidence(end, &r)
	talk(line, false, &r)
	if !r.talks && c.markup != nil && c.markup(line) {
		// Words about the output may name a code span ("Continuing from
		// `parse`:"); without them, a line that writes the format's
		// inline markup ("`Error` such as:") is the document's.
		return r, false
	}
	if blank {
		r.add(1, "blank line after it")
	}
	apart := gluedApart(line, after, end, blank, c)
	if apart {
		r.add(2, "a label set apart between a cut word and its rest")
	}
	breaks := c.breaks != nil && c.breaks(line, after)
	// Too little said, unless where it stands says it (between the halves
	// of a cut word, at every cut alike, a note the format cannot hold).
	tooBare := bare(line, end, r) && !apart && !c.alike && !(breaks && isNote(line))
	// A call glued to the cut word, unless the text after it completes
	// that word or the line opens every cut alike.
	call := gluedCall(line, c, r) && !c.alike && !(apart && rejoins(after, c))
	if tooBare || call || repeatsEnd(c.doc, line) || reproducesEnd(c.doc, line) {
		// (A line that starts with a repeat of the document's end goes on
		// with it.)
		return r, false
	}
	glueEvidence(line, after, c, &r)
	if keepsIndentation(after, blank, c) {
		r.add(-3, "the line after it keeps the cut line's indentation")
	}
	if restartsDocument(c.doc, after) {
		// Verification: the text after the line starts the document over
		// (its whitespace aside), as a model does that restarts from the
		// top: the line introduced the restart.
		r.add(3, "the text after it starts the document over")
	} else if n := endRepeat(c.doc, after, minEndRepeat); n > 0 && alnumCount(after[:n]) >= 4 {
		// Verification: the text after the line goes on by repeating the
		// document's end, as a model does that backs up before it goes
		// on; the line stands between the document and its repeat.
		r.add(2, "the text after it repeats the document's end")
	}
	if quotesEnd(line, c.doc) {
		r.add(1, "quotes the document's last lines")
	}
	languageEvidence(line, after, blank, c, &r)
	if blank && after != "" && unicode.IsLower(firstRune(after)) {
		// (Whatever the document's language: a paragraph does not open
		// with a small letter.)
		r.add(1, "the text after the blank line opens mid-sentence")
	}
	habitEvidence(line, c, &r)
	if fl, _, _ := strings.Cut(after, "\n"); isFenceLine(fl) && wrapperLike(fl, c) {
		r.add(2, "a fence line follows it")
	}
	documentEvidence(line, breaks, c, &r)
	return r, true
}

// wrapperLike reports whether a fence line after a first line may be the
// model's wrapper: in a format whose own fences are everywhere (Markdown's
// "To see the options, run:" and its code block), only one that names the
// format.
func wrapperLike(fl string, c envCtx) bool {
	if c.fences.lineStart != wrapNamed {
		return true
	}
	info, _ := fenceLine(fl)
	return c.fences.named(info)
}

// quotesEnd reports whether a line quotes, in quotation marks or a code
// span, text of three letters or more from the document's last lines: a
// model pointing at where it goes on from ("Here's everything after
// \"Installing npm Dependencies:\":").
func quotesEnd(line, doc string) bool {
	end := tail(doc, 512)
	for _, q := range [...][2]string{{"\"", "\""}, {"`", "`"}, {"“", "”"}} {
		for rest := line; ; {
			_, after, ok := strings.Cut(rest, q[0])
			if !ok {
				break
			}
			quoted, more, ok := strings.Cut(after, q[1])
			if !ok {
				break
			}
			if alnumCount(quoted) >= 3 && strings.Contains(end, quoted) {
				return true
			}
			rest = more
		}
	}
	return false
}

// habitEvidence weighs what the job's other continuations show: the model
// opens them with remarks, or with this very line.
func habitEvidence(line string, c envCtx, r *remark) {
	if c.talks {
		r.add(2, "the model opens its other continuations with remarks")
	}
	if c.alike && !strings.Contains(c.doc, strings.TrimSpace(line)) {
		r.add(2, "another continuation opens with the same line")
	}
}

// documentEvidence weighs a first line against the document: prose unlike
// it, a line that breaks its format where the rest joins (breaks), or a
// line it already has.
func documentEvidence(line string, breaks bool, c envCtx, r *remark) {
	if !c.atProse() {
		// (Going on with a cut line that opened a comment, prose is like
		// the document: "// " + "Remaining operands may have references.")
		if body, _ := unwrapNote(strings.TrimSpace(line)); proseLine(body) || isNote(line) && words(body) >= 2 && !strings.ContainsAny(body, ",()") {
			unlikeDocument(c.doc, c.syntax, r)
		}
	}
	if breaks {
		r.add(3, "breaks the format where the rest joins")
	}
	if c.doc != "" && strings.Contains(c.doc, "\n"+strings.TrimSpace(line)+"\n") {
		r.add(-3, "the document has the same line")
	}
}

// bare reports whether a line in a remark's form says too little to be one:
// a line of fewer than three words that does not talk about the output
// ("(results)", "MAGIC:").
func bare(line string, end byte, r remark) bool {
	return !r.talks && words(line) < 3
}

// gluedApart reports whether a short line ending with ':', or a note in
// brackets, set apart by a blank line ("Part 2:", "The rest:", "(cont.)"),
// stands between a cut word and text that goes on with a word or a space:
// glued to the cut word, as no word of the document's is, the line cannot
// be the document's own next text.
func gluedApart(line, after string, end byte, blank bool, c envCtx) bool {
	p := c.partial
	short := end == ':' && words(line) >= 2 || bracketed(line)
	goesOn := after != "" && (isWordByte(after[0]) || after[0] == ' ')
	if !short || !blank || c.atLineStart || !letterBefore(p, len(p)) || !goesOn {
		return false
	}
	return !gluePlausible(tail(c.doc, leadWindow), line)
}

// bracketed reports whether a line is a note in brackets, "(cont.)" or
// "[Part 2]" (emphasis alone, "_стремятся_", is Markdown's own).
func bracketed(line string) bool {
	l := strings.TrimSpace(line)
	return isNote(l) && (strings.HasPrefix(l, "(") || strings.HasPrefix(l, "["))
}

// rejoins reports whether the text after a line glues to the cut word as
// the document's own words do ("u" + "nder", where the document writes
// "under"): the line stood between the two halves of a word.
func rejoins(after string, c envCtx) bool {
	return after != "" && isWordByte(after[0]) && gluePlausible(tail(c.doc, leadWindow), after)
}

// gluedCall reports whether a line that does not talk about the output
// opens with a bracket right after the cut word (a call, an index:
// "runEnv" + "(dir, mode, nil, cmd...)"), or right after a closing bracket
// where the document glues the two so itself (a Markdown link: "[foo]" +
// "(not a link)"), which no remark does.
func gluedCall(line string, c envCtx, r remark) bool {
	if c.atLineStart || !strings.HasPrefix(line, "(") && !strings.HasPrefix(line, "[") || r.talks && !ownWords(line, c.doc) {
		return false
	}
	if letterBefore(c.partial, len(c.partial)) {
		return true
	}
	p := strings.TrimRight(c.partial, " \t")
	if p != c.partial || p == "" || c.doc == "" || p[len(p)-1] != ']' && p[len(p)-1] != ')' {
		return false
	}
	// (The document before the cut line's last byte.)
	before := tail(c.doc[:len(c.doc)-1], leadWindow)
	return strings.Contains(before, p[len(p)-1:]+line[:1])
}

// ownWords reports whether every word of line stands as a whole word in
// the document's recent text: a call's arguments ("t.Fatal" + "(ok,
// err)"), whatever they say, are names the document uses.
func ownWords(line, doc string) bool {
	w, n := tail(doc, leadWindow), 0
	for _, t := range wordTokens(line) {
		if t == "" {
			continue
		}
		if n++; wordCount(w, t, 1) == 0 {
			return false
		}
	}
	return n > 0
}

// startsOver reports whether line goes on with or starts over the cut line
// rather than standing as a line of its own: it starts with a space (a
// remark starts its line), closes an inline span the cut line opened (see
// closesSpan), or starts with the cut line's text followed by a word
// boundary ("A" + "A third line follows.", not "A" + "Alright, ...").
func startsOver(line string, c envCtx) bool {
	if line != "" && (line[0] == ' ' || line[0] == '\t') && !c.atLineStart {
		return true
	}
	if !c.atLineStart && closesSpan(c.partial, line) {
		return true
	}
	p := strings.TrimSpace(c.partial)
	if p == "" || !strings.HasPrefix(line, p) {
		return false
	}
	if alnumCount(p) == 0 && isNote(line) {
		// A cut line of marks alone ("*") and a note framed by them
		// ("**Continued from above:**"): the frame is the note's.
		return false
	}
	if t := strings.TrimLeft(c.partial, " \t"); t != p && !strings.HasPrefix(line, t) {
		// The cut line ends with a space: its last word is whole, and a
		// line that starts it over writes the space too ("I " + "I'll
		// repeat…" starts nothing over).
		return false
	}
	return len(p) >= 2 || !letterAt(line, len(p))
}

// wordStartApart reports whether a line that starts with the cut line's
// text stands apart from it all the same: the cut line is a word's first
// letters ("Th"), the line goes on with other letters ("Thanks for
// waiting!"), and the text after the line completes the cut word as the
// document's own words do ("Th" + "is part of"), so the line stood between
// the word's halves.
func wordStartApart(line, after string, c envCtx) bool {
	return wordStartAlone(line, after, c) && rejoins(after, c)
}

// wordStartAlone is wordStartApart without the document's words, where it
// has too few to tell whether the text after the line completes the cut
// word: the line starts with the cut word's first letters and goes on
// with other ones, and the text after it, which starts with a word, does
// not go on as the line does.
func wordStartAlone(line, after string, c envCtx) bool {
	p := strings.TrimSpace(c.partial)
	return len(p) < 4 && len(p) < len(line) && strings.HasPrefix(line, p) && alnumCount(p) == len(p) && letterAt(line, len(p)) &&
		!strings.HasPrefix(after, line[len(p):]) && after != "" && isWordByte(after[0])
}

// spanMarks are the marks that open and close an inline span: a code span
// or raw string, strong emphasis.
var spanMarks = []string{"`", "**", "__"}

// closesSpan reports whether line closes an inline span that the cut line
// partial left open ("the HTTP `Q" + "UERY` method) and ...", "- **Run " +
// "Benchmarks:** Run ...", or a mark cut in two: "*" + "*please report it
// privately**"): the line holds an odd number of the span's marks, which
// the cut line and it together hold an even number of, so the line goes
// on with the cut line. A remark stands apart from the document's spans.
func closesSpan(partial, line string) bool {
	for _, m := range spanMarks {
		if strings.Count(line, m)%2 == 1 && strings.Count(partial+line, m)%2 == 0 {
			return true
		}
	}
	return false
}

// restartsDocument reports whether after opens with the document's own
// beginning, whitespace aside (as the reproduction step reads content):
// its first 48 bytes of content, 16 at least for a shorter document.
func restartsDocument(doc, after string) bool {
	dc := firstContent(doc, 48)
	return len(dc) >= 16 && string(firstContent(after, len(dc))) == string(dc)
}

// minEndRepeat is the shortest repeat of the document's end that counts
// as evidence around a remark: a few words.
const minEndRepeat = 12

// endRepeat returns the length of the longest head of s, minLen bytes at
// least, that the document ends with (0 when none): the model going on
// by repeating what it wrote last.
func endRepeat(doc, s string, minLen int) int {
	w := tail(doc, min(len(s), leadWindow))
	if len(s) < minLen || len(w) < minLen {
		return 0
	}
	seed := s[:minLen]
	for from := 0; ; {
		p := strings.Index(w[from:], seed)
		if p < 0 {
			return 0
		}
		p += from
		if strings.HasPrefix(s, w[p:]) {
			return len(w) - p
		}
		from = p + 1
	}
}

// repeatsEnd reports whether line starts with a repeat of the document's
// last bytes (four at least, two of them letters or digits): the model
// going on from them, not talking.
func repeatsEnd(doc, line string) bool {
	n := endRepeat(doc, line, 4)
	return n > 0 && alnumCount(line[:n]) >= 2
}

// unlikeDocument adds evidence when none of the document's recent lines
// (twenty at least) is a line of prose: a sentence standing as a line of
// its own is then unlike anything the document writes (code, records),
// while in prose and Markdown it is the document's usual line.
func unlikeDocument(doc string, syntax func(string) bool, r *remark) {
	w := recentLines(doc, proseWindow)
	lines := 0
	for w != "" {
		line, rest, _ := strings.Cut(w, "\n")
		w = rest
		if strings.TrimSpace(line) == "" {
			continue
		}
		if proseLine(line) && (syntax == nil || !syntax(line)) {
			return
		}
		lines++
	}
	if lines >= 20 {
		r.add(2, "no line of the document is prose")
	}
}

// breaksOffMidSentence reports whether the chunk's text before a closing
// paragraph ends in the middle of a sentence of prose: its last line
// starts with a word (no heading's or item's mark), has five words at
// least, mostly letters, is one of a paragraph's lines or a long one, and
// ends on a lower-case word, a comma or a semicolon. Prose puts no blank
// line inside a sentence, so the paragraph after it does not go on with
// the document: the document stopped there, and the model spoke. (Only
// the chunk's own text counts: a chunk that opens with the paragraph may
// repeat the line the document was cut in, "demangle C++ " + "A Go
// package that …".)
func breaksOffMidSentence(before string) bool {
	s := strings.TrimRight(before, " \t\r\n")
	i := strings.LastIndexByte(s, '\n')
	last := strings.TrimSpace(s[i+1:])
	// (Semicolons are prose's too here; code spans are not.)
	if first, _ := utf8.DecodeRuneInString(last); !unicode.IsLetter(first) || !proseWithout(last, "{}[]<>=|\t\"`", 5) {
		return false
	}
	inParagraph := i > 0 && strings.TrimSpace(s[strings.LastIndexByte(s[:i], '\n')+1:i]) != ""
	r, _ := utf8.DecodeLastRuneInString(last)
	lastWord := last[strings.LastIndexByte(last, ' ')+1:]
	if strings.Contains(lastWord, "://") {
		// A link ends its line as it is ("See https://pkg.go.dev/x").
		return false
	}
	w, _ := utf8.DecodeRuneInString(lastWord)
	return (inParagraph || len(last) >= 60) && (unicode.IsLower(w) && unicode.IsLetter(r) || r == ',' || r == ';')
}

// paragraphShape adds evidence for a one-line closing paragraph when the
// document's paragraphs run over several lines (wrapped prose, a book, a
// licence): a single short line between blank lines is unlike anything it
// writes.
func paragraphShape(doc string, r *remark) {
	paras, multi := 0, 0
	for _, p := range strings.Split(tail(doc, proseWindow), "\n\n") {
		p = strings.Trim(p, "\r\n")
		if strings.TrimSpace(p) == "" {
			continue
		}
		paras++
		if strings.Count(p, "\n") >= 2 {
			multi++
		}
	}
	if paras >= 6 && 10*multi >= 9*paras {
		r.add(2, "the document's paragraphs run over several lines")
	}
}

// proseLine reports whether a line reads as prose: five words at least,
// mostly letters and spaces, none of the marks of code or records (code's
// bare lines, "return x, nil", are shorter).
func proseLine(line string) bool {
	return proseWithout(line, "{}[]<>=;|\t\"", 5)
}

// sentenceLine reports whether a line reads as a short sentence of prose:
// three words at least, as proseLine reads them otherwise.
func sentenceLine(line string) bool {
	return proseWithout(line, "{}[]<>=;|\t\"", 3)
}

// proseWithout reports whether a line reads as prose that writes none of
// marks: n words at least, seven in ten of its runes letters or spaces.
func proseWithout(line, marks string, n int) bool {
	s := strings.TrimSpace(line)
	if words(s) < n || strings.ContainsAny(s, marks) || strings.Count(s, " ") < n-1 {
		return false
	}
	letters := 0
	for _, r := range s {
		if unicode.IsLetter(r) || r == ' ' {
			letters++
		}
	}
	return 10*letters >= 7*utf8.RuneCountInString(s)
}

// proseWindow bounds how much of the document unlikeDocument reads.
const proseWindow = 8 << 10

// isFenceLine reports whether line opens or closes a code fence.
func isFenceLine(line string) bool {
	_, ok := fenceLine(strings.TrimRight(line, "\r"))
	return ok
}

// reproducesEnd reports whether line starts with the document's end
// reproduced with its whitespace changed (sixteen bytes of content or
// more): a re-wrapped repeat, whose rest is the document's new text, never
// a remark to drop.
func reproducesEnd(doc, line string) bool {
	lc := lastContent(line, len(line))
	dc := lastContent(doc, len(lc))
	for l := min(len(lc), len(dc)); l >= 16; l-- {
		if string(dc[len(dc)-l:]) == string(lc[:l]) {
			return true
		}
	}
	return false
}

// hasSyntax reports whether line has the format's syntax. A note framed
// by brackets or emphasis is read by what it frames: the frame is the
// note's, not the format's ("_(continued from line 48)_" is no call of
// "_", "[Part 2]" no index).
func (c envCtx) hasSyntax(line string) bool {
	if c.syntax == nil {
		return false
	}
	s := strings.TrimSpace(line)
	if len(s) >= 2 && strings.IndexByte("([*_", s[0]) >= 0 && s[1] != ' ' {
		if body, ok := unframe(s); ok {
			return c.syntax(body)
		}
	}
	return c.syntax(line)
}

// isNote reports whether a line is a bracketed or emphasised note.
func isNote(line string) bool {
	_, note := unwrapNote(strings.TrimSpace(line))
	return note
}

// languageEvidence weighs a preamble by the document's own language (see
// readLanguage): the text after the line going on with the cut line, and
// the line reading unlike the document.
func languageEvidence(line, after string, blank bool, c envCtx, r *remark) {
	sep := "\n"
	if blank {
		sep = "\n\n"
	}
	l, ok := readLanguage(c.doc, line, sep, after)
	if !ok {
		return
	}
	// Within a word the junction says most; between words, in prose,
	// any word may follow.
	midWord := letterBefore(c.partial, len(c.partial)) && letterAt(after, 0)
	switch {
	case l.goesOn >= 2 && midWord:
		r.add(3, "the text after it goes on with the cut word")
	case l.goesOn >= 2:
		r.add(1, "the text after it may go on with the cut line")
	case l.goesOn <= -3:
		r.add(-1, "the text after it starts a line of the document's")
	}
	if !c.atProse() {
		// (Prose after a cut line that opened a comment is like the
		// document's comments, whatever the code around them.)
		l.foreignEvidence(r)
	}
	if !c.atLineStart && c.partial != "" && l.apart >= 4 {
		r.add(1, "does not go on with the cut line")
	}
	if blank && after != "" && !unicode.IsLower(firstRune(after)) && letterBefore(c.partial, len(c.partial)) && letterAt(after, 0) {
		r.add(1, "the text after the blank line opens mid-sentence")
	}
}

// firstRune is the first rune of s.
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// glueEvidence weighs the join a kept line would make with a cut line: a
// capital glued to a cut word ("bro" + "Continuing") makes a word the
// document does not use, while the text after the line glues to it as the
// document's own words do ("bro" + "wn").
func glueEvidence(line, after string, c envCtx, r *remark) {
	p := c.partial
	if p == "" || c.atLineStart || strings.TrimSpace(p) == "" {
		return
	}
	w := c.doc[max(0, len(c.doc)-leadWindow):]
	if w == "" {
		w = p
	}
	// Only a word glued either way tells: text after the line that starts
	// with a space or a mark glues to nothing.
	cuts := after != "" && isWordByte(after[0]) && gluePlausible(w, after)
	switch {
	case capitalsGoOn(p, line):
		r.add(-3, "goes on with the cut word's capitals")
	case letterBefore(p, len(p)) && isWordByte(line[0]) && gluePlausible(w, line):
		// "resume" + "Flag is the resume flag…": the glued word is one the
		// document writes.
		r.add(-2, "glues to the cut word as the document's words do")
	case cuts && !gluePlausible(w, line):
		r.add(2, "glues to the cut line only without it")
	case letterBefore(p, len(p)):
		r.add(1, "a sentence glued to a cut word")
	}
}

// keepsIndentation reports whether a line written after a cut line of
// indentation alone, the indentation the document's last line has, is
// followed right away by a line indented the same ("    " + "This line
// will be dropped.\n    This line will be displayed."): the line is the
// cut line's text, in a block that goes on. (A remark before the cut
// line's rest leaves that rest unindented.)
func keepsIndentation(after string, blank bool, c envCtx) bool {
	p := c.partial
	if blank || c.atLineStart || p == "" || strings.TrimLeft(p, " \t") != "" || !strings.HasPrefix(after, p) ||
		len(after) == len(p) || isSpace(after[len(p)]) || !strings.HasSuffix(c.doc, p) {
		return false
	}
	prev, _ := lastTextLine(c.doc[:len(c.doc)-len(p)])
	return len(prev) > len(p) && strings.HasPrefix(prev, p) && !isSpace(prev[len(p)])
}

// capitalsGoOn reports whether a line goes on with a word the document was
// cut in that is written in capitals ("Anonymous FT" + "P is available",
// "bugs are in B" + "UGS. All authors…"): the line's first word is
// capitals too, the two make a word of three capitals at least, and no
// remark opens so ("I", "A" and "OK" do).
func capitalsGoOn(partial, line string) bool {
	a := len(partial)
	for a > 0 && partial[a-1] >= 'A' && partial[a-1] <= 'Z' {
		a--
	}
	if a == len(partial) || a > 0 && isWordByte(partial[a-1]) {
		return false
	}
	b := 0
	for b < len(line) && line[b] >= 'A' && line[b] <= 'Z' {
		b++
	}
	if b == 0 || b < len(line) && isWordByte(line[b]) || len(partial)-a+b < 3 {
		return false
	}
	switch line[:b] {
	case "I", "A", "OK":
		return false
	}
	return true
}

// judgeTrailer weighs the last paragraph of an answer (lines, its text
// without the line breaks) as a closing remark. afterFence: it follows the
// fence that closed the answer's wrapper; blank: a blank line stands
// before it.
func judgeTrailer(lines []string, body string, afterFence, blank bool, c envCtx) (remark, bool) {
	var r remark
	var end1 byte // how the first line ends
	for i, l := range lines {
		end, ok := remarkForm(l)
		if !ok || c.hasSyntax(l) {
			return r, false
		}
		if i == 0 {
			end1 = end
		}
		if len(r.evidence) == 0 {
			formEvidence(end, &r)
		}
	}
	r.score++
	r.evidence = append([]string{"last paragraph of the answer"}, r.evidence...)
	// The document's recent text before the paragraph: what the merge
	// holds, then the chunk's own text before it (all of a single-chunk
	// answer's document). Its voice, frames and headings are read from it.
	before := tailJoin(c.doc, body, proseWindow+1)
	// The document's own names for its subject are read from the text
	// before the paragraph (the chunk's and the document's before it);
	// a paragraph in the model's voice (to the reader, of itself) names
	// the output as the model does, in whatever words.
	recent := wordTokens(strings.ToLower(tail(c.doc, proseWindow) + "\n" + tail(body, proseWindow)))
	var own []string
	if para := strings.ToLower(strings.Join(lines, " ")); !inVoice(para) {
		own = recent
	}
	var talked remark
	talkAgainst(strings.Join(lines, " "), true, own, &talked)
	r.score += talked.score
	r.evidence = append(r.evidence, talked.evidence...)
	r.talks = talked.talks
	// (The document before the chunk: the chunk's own text may hold more of
	// the model's talk.)
	talkBaseline(talked.score, c.doc, own, &r)
	breaks := c.endBreaks != nil && c.endBreaks(body, lines[0])
	if len(lines) == 1 && bare(lines[0], end1, r) && !(breaks && isNote(lines[0])) {
		// (Unless a note the format cannot hold: "**Done.**" after code.)
		return r, false
	}
	if len(lines) == 1 && words(lines[0]) < 3 {
		r.add(-2, "a word or two")
	}
	if opensWithOwnSentence(lines, end1, talked.score, own) {
		// Not the whole paragraph, whichever way: a remark left standing
		// is a seam to see, a line lost is not.
		return r, false
	}
	if len(lines) > 1 && end1 == ')' {
		// An emphasised label over a line of text ("**Expected
		// behavior**" + "A clear and concise description…") heads a
		// section of the document; a model's note stands alone.
		r.add(-3, "a label over its text")
	}
	framed := framedLikeDocument(lines[0], before)
	if framed {
		r.add(-3, "the document frames lines so")
	}
	if blank && underHeading(before, c.heading) {
		// A model closes an answer after the document's last section,
		// not as the text of a heading with nothing under it.
		r.add(-3, "the only text under a heading")
	}
	if lowerStart(lines[0]) {
		// A model's remark is a sentence of its own; a paragraph in lower
		// case goes on with the document's ("...and we'll do our best").
		r.add(-3, "opens in lower case")
	}
	if !blank && !afterFence && !breaks {
		// Right under a block of the document's (its code block's closing
		// fence), with no blank line: the block's own remark. A model
		// sets its closing remark apart.
		r.add(-2, "right under the document's block")
	}
	if _, ok := cutLeadingPictographs(strings.TrimSpace(lines[0])); ok {
		r.add(1, "opens with an emoji, as chat does")
	}
	if n := words(strings.Join(lines, " ")); n > remarkWords {
		// A model that closes an answer says a sentence or two.
		r.add(-3, "long for a closing remark")
	}
	if blank {
		r.add(1, "blank line before it")
	}
	if afterFence {
		r.add(4, "after the fence that closed the answer")
	}
	voiceEvidence(strings.Join(lines, " "), before, &r)
	unlikeDocument(c.doc, c.syntax, &r)
	if len(lines) == 1 {
		paragraphShape(c.doc, &r)
		if isNote(lines[0]) && end1 != ')' && !framed {
			// Framed by emphasis as a whole ("**Done.**", "_That's the
			// whole file._"), as a bracketed note is.
			r.add(2, "an emphasised note")
		}
	}
	if subjectWords(strings.Join(lines, " "), recent) >= 3 {
		// A model's closing remark speaks of the exchange (the answer,
		// more help); a document's last paragraph goes on with its
		// subject, in its words ("When you write a pool fix, add a
		// regression test …" closing a spec of the pool).
		r.add(-2, "speaks of the document's subject in its words")
	}
	trailerAgainstDocument(lines, body, blank, breaks, c, &r)
	return r, true
}

// underHeading reports whether the last line with text of before (the
// document's recent text before a closing paragraph) heads a section, as
// the format reads headings (nil: it has none), in a document that leaves
// no section empty: where a heading stands right over another of its
// level or a higher one (a template's, a specification's examples), a
// heading with nothing under it is the document's as well.
func underHeading(before string, heading func(above, line string) int) bool {
	if heading == nil {
		return false
	}
	w := strings.TrimRight(recentLines(before, proseWindow), " \t\r\n")
	above, level := "", 0
	for l := range strings.Lines(w) {
		l = strings.TrimRight(l, "\r\n")
		if strings.TrimSpace(l) != "" {
			h := heading(above, l)
			if h > 0 && level > 0 && h <= level {
				return false
			}
			level = h
		}
		above = l
	}
	return level > 0
}

// lowerStart reports whether a line's first letter, after the marks a
// note may open with, is a lower-case one.
func lowerStart(line string) bool {
	s := strings.TrimLeft(line, " \t([*_.…—–-\"'")
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}

// commonWords are English words of five letters or more that any text
// writes, whatever its subject: no evidence of one.
var commonWords = strings.Fields(`about above after again against along already although always among
another anything around because become before began being below between bring cannot could doing
during either enough every everything first found further given going great having however itself
known large later least little longer might never often other others otherwise perhaps place please
point quite rather really right second seems several shall should since small something sometimes
still taken their themselves there therefore these thing things think those though three through
today together under until using usually various whatever where whether which while whole whose
within without would years yours yourself`)

// subjectWords counts the distinct words of a paragraph that the document
// before it writes (recent, its word tokens), of five letters or more and
// not commonWords: the subject it speaks of.
func subjectWords(para string, recent []string) int {
	var counted []string
	for _, w := range wordTokens(strings.ToLower(para)) {
		if utf8.RuneCountInString(w) >= 5 && !slices.Contains(counted, w) && !slices.Contains(commonWords, w) && slices.Contains(recent, w) {
			counted = append(counted, w)
		}
	}
	return len(counted)
}

// opensWithOwnSentence reports whether a closing paragraph of several
// lines that talks about the output (talked, its score) opens with a
// sentence of its own (its first line ends as one: end1) that says nothing
// of the output: the document's last line, and the model wrote its remark
// right under it ("... (17 U.S.C. 105)." + "Enjoy!").
func opensWithOwnSentence(lines []string, end1 byte, talked int, own []string) bool {
	if len(lines) < 2 || strings.IndexByte(".!?", end1) < 0 || talked <= 0 {
		return false
	}
	var opening remark
	talkAgainst(lines[0], true, own, &opening)
	return opening.score <= 0
}

// trailerAgainstDocument weighs a closing paragraph against the document
// before it (body: the answer's last text without the paragraph): its
// language, the format it breaks (breaks), the same paragraph written
// before, prose broken off before it, a file or an address it sends the
// reader to, the format's inline markup.
func trailerAgainstDocument(lines []string, body string, blank, breaks bool, c envCtx, r *remark) {
	if l, ok := readLanguage(c.doc, strings.Join(lines, " "), "\n", ""); ok {
		l.foreignEvidence(r)
	}
	if breaks {
		r.add(3, "breaks the format after the document")
	}
	if para := strings.Join(lines, "\n"); len(para) >= 20 {
		// (Not the paragraph right before it: a model may say its
		// closing line twice.)
		b := strings.TrimSuffix(strings.TrimRight(body, "\r\n"), para)
		if strings.Contains(b, para) || strings.Contains(tail(c.doc, proseWindow), para) {
			r.add(-3, "the document has the same paragraph")
		}
	}
	if blank && breaksOffMidSentence(body) {
		r.add(3, "the prose before it breaks off mid-sentence")
	}
	if slices.ContainsFunc(lines, namesElsewhere) {
		r.add(-2, "names a file or an address")
	}
	if _, ok := hasWord(strings.ToLower(strings.Join(lines, " ")), licenseWords); ok {
		r.add(-3, "a licence notice, as documents close")
	}
	if c.markup != nil && slices.ContainsFunc(lines, c.markup) {
		// A closing remark talks about the document; it does not write
		// the document's links and code spans.
		r.add(-3, "has the format's inline markup")
	}
}

// licenseWords are a licence notice's: a document's last paragraph often
// states its terms ("This code is published under an MIT license."); a
// model's remark about its answer has no terms to state.
var licenseWords = []string{"license*", "licence*", "licensing", "copyright*"}

// namesElsewhere reports whether a line names a file ("CONTRIBUTING.md"),
// a web or mail address, or a section ("§4"): a closing remark talks about
// the answer it closes, while a document's last paragraph often sends the
// reader to another ("See LICENSE.txt for details.").
func namesElsewhere(line string) bool {
	if strings.Contains(line, "://") || strings.Contains(line, "§") {
		return true
	}
	toks := wordTokens(strings.ToLower(line))
	for i, t := range toks {
		// "See LICENSE for details.", "please refer to the FAQ"; not "see
		// above".
		next := i + 1
		switch {
		case t == "see" && (i == 0 || toks[i-1] == "please" || sentenceStarts(line, "See ")):
		case t == "refer" && next < len(toks) && toks[next] == "to":
			next++
		default:
			continue
		}
		if next < len(toks) && toks[next] != "above" && toks[next] != "below" {
			return true
		}
	}
	for _, w := range strings.Fields(line) {
		w = strings.TrimRight(w, ".,;:!?)]*_`'\"")
		w = strings.TrimLeft(w, "([*_`'\"")
		if at := strings.IndexByte(w, '@'); at > 0 && strings.Contains(w[at:], ".") {
			return true
		}
		if dot := strings.LastIndexByte(w, '.'); dot >= 2 && dot < len(w)-1 && fileName(w[:dot], w[dot+1:]) {
			return true
		}
	}
	return false
}

// sentenceStarts reports whether a sentence of line after its first
// starts with w.
func sentenceStarts(line, w string) bool {
	for _, end := range []string{". ", "! ", "? "} {
		if strings.Contains(line, end+w) {
			return true
		}
	}
	return false
}

// fileName reports whether name.ext reads as a file's name: a name of
// letters, digits, '-' and '_' (a word, not an abbreviation's letters
// "e.g"), and an extension of one to four lower-case letters or digits.
func fileName(name, ext string) bool {
	if len(ext) > 4 || strings.Contains(name, ".") && !strings.Contains(name, "/") {
		return false
	}
	for _, c := range ext {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	letters := 0
	for _, c := range name {
		switch {
		case unicode.IsLetter(c):
			letters++
		case c >= '0' && c <= '9', c == '-', c == '_', c == '/':
		default:
			return false
		}
	}
	return letters >= 2
}

// talkBaseline weighs how much a closing paragraph talks (talked: the
// points of its words about the output, to the reader, of the model
// itself, as talkAgainst scores them) against the document's own recent paragraphs scored the
// same way: a README that says "feel free to open an issue" talks as a
// model does, a book or a specification never does, so the same words at
// the end weigh more after the one than after the other. It needs four
// paragraphs of the document to weigh against.
func talkBaseline(talked int, doc string, own []string, r *remark) {
	if talked < 2 {
		return
	}
	n, most := 0, 0
	for _, p := range strings.Split(recentLines(doc, proseWindow), "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" || strings.Count(p, "\n") > 2 {
			continue
		}
		var d remark
		talkAgainst(strings.ReplaceAll(p, "\n", " "), true, own, &d)
		n++
		most = max(most, d.score)
	}
	if n >= 4 && talked > most {
		r.add(1, "talks more than any paragraph of the document")
	}
}

// voiceEvidence weighs who a closing paragraph speaks as and to, against
// the document's own voice: the model saying "I" where the document never
// does ("I double-checked the rows."), a question put to the reader at the
// very end ("Does this look right to you?"), which documents do not close
// with, and a sentence that points at the output ("That is the last
// section.", "This is everything from the original.").
func voiceEvidence(para, doc string, r *remark) {
	l := strings.ToLower(para)
	toks := wordTokens(l)
	if _, said := hasWord(l, selfWords); !said && slices.Contains(toks, "i") && !slices.Contains(wordTokens(strings.ToLower(tail(doc, proseWindow))), "i") {
		r.add(2, "the model speaks of itself, as the document does not")
	}
	if strings.HasSuffix(strings.TrimRight(para, " *_"), "?") {
		switch {
		case slices.Contains(toks, "you") || slices.Contains(toks, "me") || slices.Contains(toks, "i"):
			r.add(1, "asks the reader a question")
		case !asksQuestions(recentLines(doc, proseWindow)):
			r.add(1, "asks a question, as the document does not")
		}
	}
	if _, ok := opensWith(strings.TrimLeft(l, "([*_ "), demonstratives); ok {
		if _, ok := hasWord(l, outputWords); ok {
			r.add(1, "points at the output")
		}
	}
}

// demonstratives open a sentence that points at what came before it.
var demonstratives = []string{"this is", "that is", "that's", "this was", "these are", "those are", "here ends"}

// asksQuestions reports whether a line of w ends with a question mark.
func asksQuestions(w string) bool {
	for line := range strings.Lines(w) {
		if strings.HasSuffix(strings.TrimRight(line, " \t\r\n*_"), "?") {
			return true
		}
	}
	return false
}

// looksLikeRemark reports whether a line has a remark's form and words
// enough to be one by themselves, for readers that do not weigh a line's
// surroundings (which continuations open with a fence after a preamble,
// what follows a fence that closes an answer); atEnd: the line closes the
// answer, so its words weigh as a trailer's do.
func looksLikeRemark(line string, atEnd bool) bool {
	end, ok := remarkForm(line)
	if !ok {
		return false
	}
	var r remark
	formEvidence(end, &r)
	talk(line, atEnd, &r)
	return r.score >= remarkSure-1
}

// openingRemark returns a chunk's first line when it has a remark's form
// and starts its line (no indentation), with its ending and the text after
// it.
func openingRemark(t string) (line string, end byte, rest string, ok bool) {
	line, rest, ok = strings.Cut(t, "\n")
	if !ok {
		return "", 0, "", false
	}
	line = strings.TrimRight(line, "\r")
	end, ok = remarkForm(line)
	if !ok || line[0] == ' ' || line[0] == '\t' {
		return "", 0, "", false
	}
	return line, end, rest, true
}

// opensTalking reports whether a chunk opens with a line that reads as a
// remark by its form and words alone, followed by more text: what the
// model's other continuations show of its habit.
func opensTalking(t string) bool {
	line, end, rest, ok := openingRemark(t)
	if !ok || strings.TrimSpace(rest) == "" {
		return false
	}
	var r remark
	formEvidence(end, &r)
	talk(line, false, &r)
	return r.talks && r.score >= 3
}

// opensAlike says which continuations (chunks after the first) open with
// the same line, in a remark's form, as another continuation.
func opensAlike(chunks []Chunk) []bool {
	lines := make([]string, len(chunks))
	seen := make(map[string]int, len(chunks))
	for i := 1; i < len(chunks); i++ {
		if l, _, _, ok := openingRemark(chunks[i].Text); ok {
			lines[i] = strings.TrimSpace(l)
			seen[lines[i]]++
		}
	}
	alike := make([]bool, len(chunks))
	for i, l := range lines {
		alike[i] = l != "" && seen[l] >= 2
	}
	return alike
}
