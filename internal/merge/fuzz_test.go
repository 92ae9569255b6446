package merge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// splitAt cuts doc at the given fractions (bytes of a fuzz input) into chunks.
// Chunks are what a model returns: text decoded from JSON strings, so the
// document is valid UTF-8 and every cut falls on a rune's start.
func splitAt(doc string, cuts []byte) []string {
	doc = strings.ToValidUTF8(doc, "\uFFFD")
	var out []string
	prev := 0
	for _, c := range cuts {
		p := prev + int(c)%(len(doc)-prev+1)
		for p > prev && p < len(doc) && !utf8.RuneStart(doc[p]) {
			p--
		}
		out = append(out, doc[prev:p])
		prev = p
	}
	return append(out, doc[prev:])
}

// checkInvariants holds what every merge must: no panic (the caller would
// crash), and no new content lost: each chunk's text that is not a repeat of
// the document before it survives, so a clean cut of a document merges back
// to a text that contains every chunk's last line-or-so.
func checkInvariants(t *testing.T, format string, parts []string) {
	res, err := Merge(Options{Format: format}, chunksOf(parts...))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Joins) != len(parts)-1 || len(res.TruncationPoints) != len(parts)-1 {
		t.Fatalf("joins %d, truncation points %d for %d chunks", len(res.Joins), len(res.TruncationPoints), len(parts))
	}
	if !res.Success && res.Error == "" {
		t.Fatalf("failure without an error")
	}
	// The merge removes only what already stands in the document (a
	// repeat), chatter or repeated structure, and adds only escapes and
	// separators: so every chunk's final 4 bytes of content must appear.
	for i, p := range parts {
		// JSON and JSON Lines (asked for, or chosen by auto) escape raw text
		// into the string it continues.
		last := endsParts(parts, i)
		if i == 0 || res.Format == "json" || res.Format == "jsonl" || chatterOnly(p, last) {
			continue
		}
		before := strings.Join(parts[:i], "")
		if cutEcho(p, before) {
			continue
		}
		// Overlap markers are the protocol's, not content: the merge may
		// drop them (and an echo the document already holds), or keep them
		// as text where they are not markers. Either reading of the chunk
		// must keep its end.
		stripped := strings.ReplaceAll(strings.ReplaceAll(p, beginOverlap, ""), endOverlap, "")
		if !chunkEndKept(res, i, last, p, before) && (stripped == p || !chunkEndKept(res, i, last, stripped, before)) {
			t.Fatalf("chunk %d's end %q lost from %q (parts %q)", i, chunkEnd(res, i, last, p), res.Content, parts)
		}
	}
}

// endsParts reports whether part i is the answer's last with any text, as
// the merge reads it: the parts after it hold whitespace at most.
func endsParts(parts []string, i int) bool {
	for _, p := range parts[i+1:] {
		if strings.TrimSpace(p) != "" {
			return false
		}
	}
	return true
}

// chunkEnd is the end of chunk i's content that the merge must keep: its
// last 4 bytes (of the last line), less a closing fence that may be the
// wrapper the merge removes or, in the answer's last chunk (ends), a line
// in a remark's form; after a near repeat or a reproduction, only its last
// rune.
func chunkEnd(res Result, i int, ends bool, p string) string {
	p = strings.TrimSpace(p)
	if k := strings.LastIndexByte(p, '\n'); k >= 0 {
		last := strings.TrimSpace(p[k+1:])
		_, fence := fenceLine(last)
		_, remark := remarkForm(last)
		if fence || remark && ends {
			// A closing fence, or the answer's last line read as a
			// closing remark, may go.
			p = strings.TrimSpace(p[:k])
		}
	}
	if len(p) < 4 {
		return ""
	}
	tailOf := p[len(p)-4:]
	if k := strings.LastIndexByte(tailOf, '\n'); k >= 0 {
		// A line before the newline may be chatter the merge drops.
		tailOf = tailOf[k+1:]
	}
	if m := res.Joins[i-1].Method; m == methodToken || m == methodWhitespace || m == methodReproduction {
		// A near repeat (a reproduction too, equal up to whitespace)
		// keeps the document's version of the repeated text: only what
		// follows it is certain, down to the last rune.
		_, size := utf8.DecodeLastRuneInString(p)
		tailOf = p[len(p)-size:]
	}
	return tailOf
}

// chunkEndKept: only new text must survive; a tail the document already
// holds may be a repeat the merge rightly removed.
func chunkEndKept(res Result, i int, last bool, p, before string) bool {
	if s := strings.TrimSpace(p); len(s) >= 4 && strings.HasSuffix(strings.TrimSpace(res.Content), s[len(s)-4:]) && !strings.Contains(before, s[len(s)-4:]) {
		// The chunk's last bytes end the merge as they are: what a line
		// before them lost is no end of the chunk's.
		return true
	}
	tailOf := chunkEnd(res, i, last, p)
	return tailOf == "" || strings.Contains(res.Content, tailOf) || strings.Contains(before, tailOf)
}

// chatterOnly reports whether a chunk is one line of chatter between
// nothing but whitespace or overlap markers: a line introducing a
// continuation, or a fence the model wrapped around it. The merge may drop
// that line, so its last bytes need not survive. The line must end with a line break unless the
// chunk is the answer's last: elsewhere the next chunk may go on with it.
func chatterOnly(p string, last bool) bool {
	if fencesOnly(p) || markersOnly(p) {
		return true
	}
	// Blank lines before the line are the chunk's separator, not content
	// (whatever their whitespace: "\v\n--OVERLAP---").
	p = strings.TrimLeftFunc(p, unicode.IsSpace)
	i := strings.IndexByte(p, '\n')
	if i < 0 && last {
		i = len(p)
	}
	if i <= 0 || strings.TrimSpace(p[i:]) != "" && !markersOnly(p[i:]) {
		// (After the line, the overlap prompt's markers are no content
		// either: "-OVERLAP---" + "\n---END_OVERLAP---".)
		return false
	}
	if _, fence := fenceLine(strings.TrimRight(p[:i], "\r")); fence {
		return true
	}
	line := strings.TrimSpace(p[:i])
	_, remark := remarkForm(line)
	return line != "" && remark
}

// cutEcho reports whether a chunk is an overlap echo cut off before its end
// marker whose text the document already holds: the merge drops it.
func cutEcho(p, before string) bool {
	rest, ok := strings.CutPrefix(strings.TrimLeft(p, " \t\r\n"), beginOverlap)
	if !ok || strings.Contains(rest, endOverlap) {
		return false
	}
	return strings.Contains(before, strings.TrimSpace(rest))
}

// markersOnly reports whether a chunk holds nothing but overlap markers: a
// model cut off right after opening its echo wrote only the protocol's own
// lines, which the merge drops.
func markersOnly(p string) bool {
	return onlyLines(p, func(line string) bool {
		line = strings.TrimSpace(line)
		return line == beginOverlap || line == endOverlap
	})
}

// FuzzMergeText cuts arbitrary text into chunks and merges it as every
// line-oriented format.
func FuzzMergeText(f *testing.F) {
	f.Add("The quick brown fox jumps over the lazy dog.\nSecond line.\n", []byte{13, 20})
	f.Add("```go\nfunc a() {}\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n", []byte{7, 9, 11})
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", []byte{30, 5})
	f.Add("我们今天去公园散步，然后回家吃饭。", []byte{9})
	f.Add("Sure, here is the continuation:\n\nabc", []byte{1})
	f.Add("one\ntwo\n---BEGIN_OVERLAP---\ntwo\n---END_OVERLAP---\nthree\n", []byte{8, 40})
	f.Add("xylophone quiz\njumbo vast\n", []byte{11, 10}) // plain: the identity
	f.Fuzz(func(t *testing.T, doc string, cuts []byte) {
		if len(cuts) > 12 {
			cuts = cuts[:12]
		}
		parts := splitAt(doc, cuts)
		for _, format := range []string{"text", "markdown", "code", "diff"} {
			checkInvariants(t, format, parts)
		}
		res, _ := Merge(Options{Format: "text"}, chunksOf(parts...))
		if len(res.Content) > len(strings.Join(parts, "")) {
			t.Fatalf("merge grew the document: %q from %q", res.Content, doc)
		}
		// A clean cut of plain text is the identity: where no chunk opens
		// with anything the document already holds (no repeat, restart or
		// reproduction to find) and no line reads as a remark, a fence or
		// an overlap marker, nothing may be dropped or added.
		if whole := strings.Join(parts, ""); plainCuts(parts) && res.Content != whole {
			t.Fatalf("a clean cut of plain text changed it: %q from %q (parts %q)", res.Content, whole, parts)
		}
	})
}

// plainCuts reports whether text cut into parts leaves the merge nothing to
// read but the text: no part after the first opens with bytes (whitespace
// aside, up to eight) that the text before it holds, and no line has a
// remark's form, is a fence line or an overlap marker, or is blank (in the
// text or in a part).
func plainCuts(parts []string) bool {
	doc := strings.Join(parts, "")
	if !utf8.ValidString(doc) {
		return false
	}
	// The document's lines and each part's (what the envelope step reads).
	for _, t := range append([]string{doc}, parts...) {
		for _, line := range strings.Split(strings.TrimSuffix(t, "\n"), "\n") {
			l := strings.TrimSpace(line)
			if _, remark := remarkForm(line); remark || l == "" || isFenceLine(l) || strings.Contains(l, "OVERLAP") {
				return false
			}
		}
	}
	noSpace := func(s string) string { return strings.Join(strings.Fields(s), "") }
	before := ""
	for i, p := range parts {
		if i > 0 {
			head := noSpace(p)
			head = head[:min(len(head), 8)]
			if head == "" || strings.Contains(noSpace(before), head[:1]) {
				return false
			}
		}
		before += p
	}
	return true
}

// FuzzMergeStructured merges arbitrary chunks as CSV, JSON and JSON Lines:
// whatever the input, no panic, and no chunk's new content lost.
func FuzzMergeStructured(f *testing.F) {
	f.Add("id,name\n1,\"a, b\"\n2,\"c\"\"d\"\n", []byte{10, 8})
	f.Add(`{"data": {"items": [{"line": 1}, {"line": 2}]}}`, []byte{20, 10})
	f.Add("{\"a\":1}\n{\"b\":\"x\\ny\"}\n", []byte{12})
	f.Add(`[1, 2, "\u00e9\\", {"k": [true, null]}]`, []byte{3, 3, 3})
	f.Add("id,n\n1,\"a\nb\"\n---BEGIN_OVERLAP---\n1,\"a\nb\"\n---END_OVERLAP---\n2,c\n", []byte{12, 40})
	f.Fuzz(func(t *testing.T, doc string, cuts []byte) {
		if len(cuts) > 12 {
			cuts = cuts[:12]
		}
		parts := splitAt(doc, cuts)
		for _, format := range []string{"csv", "json", "jsonl", "auto"} {
			checkInvariants(t, format, parts)
		}
	})
}

// fencesOnly reports whether every non-blank line of p is a fence line: a
// wrapper the model put around nothing.
func fencesOnly(p string) bool {
	return onlyLines(p, func(line string) bool {
		_, ok := fenceLine(strings.TrimRight(line, "\r"))
		return ok
	})
}

// onlyLines reports whether p has a non-blank line and is holds for each.
func onlyLines(p string, is func(line string) bool) bool {
	seen := false
	for _, line := range strings.Split(p, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !is(line) {
			return false
		}
		seen = true
	}
	return seen
}
