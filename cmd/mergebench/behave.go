package main

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The rewrites here have no wording of their own; the habits (habits.go)
// and the frozen behaviors of ed831b8 (legacy.go) share them. mergebench
// compare reproduces that benchmark's cases byte for byte through them: a
// change here must leave what they write, and the random numbers they
// draw, as they are — write a new rewrite instead.

// wordStart returns the offset in prev where the last n words (whitespace
// separated, the partial last word counting as one) begin.
func wordStart(prev string, n int) int {
	i := len(prev)
	for ; n > 0 && i > 0; n-- {
		for i > 0 && isSpace(prev[i-1]) {
			i--
		}
		for i > 0 && !isSpace(prev[i-1]) {
			i--
		}
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// repeatWords repeats the last one to four words (the partial word and the
// ones before it), as a model does when it re-emits its last tokens.
func repeatWords(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := wordStart(prev, 2+r.IntN(3))
	if len(prev)-i > 200 {
		i = len(prev) - 200
		for i < len(prev) && !isSpace(prev[i-1]) {
			i++
		}
	}
	return prev[i:] + cont, i < len(prev)
}

// repeatTail repeats the last 24 to 64 bytes wherever they start (on a
// rune boundary), mid-word too: a model's tokens may start inside a word,
// and a model that re-emits its last tokens starts at one of them.
func repeatTail(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := max(0, len(prev)-24-r.IntN(41))
	for i > 0 && !utf8.RuneStart(prev[i]) {
		i--
	}
	return prev[i:] + cont, i < len(prev)
}

// recordStart is where the incomplete record at the end of prev begins, by
// the document's own structure.
func recordStart(d doc, prev string) int {
	switch d.format {
	case "csv":
		in := false
		start := 0
		for i := 0; i < len(prev); i++ {
			switch prev[i] {
			case '"':
				in = !in
			case '\n':
				if !in {
					start = i + 1
				}
			}
		}
		return start
	case "json":
		st := jsonState(prev)
		for k := len(st.frames) - 1; k >= 0; k-- {
			if st.frames[k].kind == '[' && st.frames[k].elem >= 0 {
				return st.frames[k].elem
			}
		}
		return len(prev)
	}
	return strings.LastIndexByte(prev, '\n') + 1
}

// restartRecord starts the continuation over from the start of the
// incomplete row, element or line.
func restartRecord(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := recordStart(d, prev)
	return prev[i:] + cont, i < len(prev)
}

// repeatLines repeats two to four whole lines before the incomplete one.
// Only lines with content count (blank lines between them are repeated
// too): a model repeats lines to pick up where it stopped, and two blank
// lines carry nothing to pick up from.
func repeatLines(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := strings.LastIndexByte(prev, '\n') + 1
	for n := 2 + r.IntN(3); n > 0 && i > 0; {
		j := strings.LastIndexByte(prev[:i-1], '\n') + 1
		if strings.TrimSpace(prev[j:i]) != "" {
			n--
		}
		i = j
	}
	if d.format == "csv" || d.format == "json" {
		// Whole records, not physical lines inside a quoted field or string.
		i = max(i, 0)
		for i > 0 && !cleanBoundary(d, prev[:i]) {
			i = strings.LastIndexByte(prev[:i-1], '\n') + 1
		}
	}
	return prev[i:] + cont, i < len(prev)
}

// cleanBoundary reports whether prev ends outside any quoted field or string.
func cleanBoundary(d doc, prev string) bool {
	if d.format == "csv" {
		return strings.Count(prev, `"`)%2 == 0
	}
	return !jsonState(prev).inStr
}

// repeatStructure restates the document's structure before starting the
// record over: the CSV header, the Markdown table header and its delimiter
// row, the JSON document's enclosing containers and keys, the diff's file and
// hunk headers.
func repeatStructure(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	switch d.format {
	case "csv":
		h := prev[:strings.IndexByte(prev, '\n')+1]
		if h == "" || len(h) == len(prev) {
			return cont, false
		}
		return h + prev[recordStart(d, prev):] + cont, true
	case "markdown":
		ls := strings.Split(prev[:strings.LastIndexByte(prev, '\n')+1], "\n")
		for k := len(ls) - 2; k >= 1; k-- {
			if !strings.Contains(ls[k], "|") {
				return cont, false
			}
			if isDelim(ls[k]) {
				if k+1 >= len(ls)-1 {
					return cont, false
				}
				return ls[k-1] + "\n" + ls[k] + "\n" + prev[recordStart(d, prev):] + cont, true
			}
		}
	case "json":
		st := jsonState(prev)
		k := len(st.frames) - 1
		for k >= 0 && st.frames[k].kind != '[' {
			k--
		}
		if k < 0 || st.inStr && st.frames[k].elem < 0 {
			return cont, false
		}
		var b strings.Builder
		for j := 0; j <= k; j++ {
			b.WriteByte(st.frames[j].kind)
			if j < k && st.frames[j].kind == '{' {
				b.WriteString("\n" + strings.Repeat("  ", j+1) + st.frames[j].key + ": ")
			}
		}
		b.WriteString("\n")
		if e := st.frames[k].elem; e >= 0 {
			return b.String() + prev[e:] + cont, true
		}
		c := strings.TrimLeft(cont, " \t\r\n")
		c = strings.TrimLeft(strings.TrimPrefix(c, ","), " \t\r\n")
		if c == "" || c[0] == ']' {
			return cont, false
		}
		return b.String() + c, true
	case "diff":
		// The structure of the file being written: its file header and its
		// current hunk's header, read forward with the hunks' line counts
		// (a removed line "-- x" reads "--- x"). A document that ends inside
		// a file header has no complete structure to restate.
		var hunk, file, minus string
		pending := false
		oldLeft, newLeft := 0, 0
		for _, l := range strings.SplitAfter(prev[:strings.LastIndexByte(prev, '\n')+1], "\n") {
			switch {
			case l == "":
			case oldLeft > 0 || newLeft > 0:
				switch l[0] {
				case '+':
					newLeft--
				case '-':
					oldLeft--
				case '\\':
				default:
					oldLeft--
					newLeft--
				}
			case strings.HasPrefix(l, "diff "):
				pending, minus, file, hunk = true, "", "", ""
			case strings.HasPrefix(l, "--- "):
				pending, minus = true, l
			case strings.HasPrefix(l, "+++ ") && minus != "":
				pending, file, hunk, minus = false, minus+l, "", ""
			case strings.HasPrefix(l, "@@ "):
				hunk = l
				oldLeft, newLeft = hunkLens(l)
			}
		}
		if pending {
			return cont, false
		}
		if hunk == "" || file == "" || strings.HasSuffix(prev, hunk) {
			return cont, false
		}
		return file + hunk + prev[recordStart(d, prev):] + cont, true
	}
	return cont, false
}

// hunkLens parses "@@ -a,b +c,d @@" into b and d (1 when omitted).
func hunkLens(l string) (int, int) {
	f := strings.Fields(l)
	if len(f) < 3 {
		return 0, 0
	}
	n := func(s string) int {
		if i := strings.IndexByte(s, ','); i >= 0 {
			v, _ := strconv.Atoi(s[i+1:])
			return v
		}
		return 1
	}
	return n(f[1]), n(f[2])
}

func isDelim(l string) bool {
	l = strings.TrimSpace(l)
	return l != "" && strings.Trim(l, "|-: ") == "" && strings.Contains(l, "-")
}

// repeatWhitespace repeats the last words with their whitespace changed:
// line breaks become spaces and spaces line breaks, as in a re-wrapped repeat.
// The whitespace the document ends with is repeated as it is: the repeat
// ends exactly where the document does, so the cut point stays unambiguous
// (changed, it would run into the continuation's own leading whitespace,
// and no reader could tell where the document's ended).
func repeatWhitespace(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := wordStart(prev, 6+r.IntN(6))
	rep := prev[i:]
	if len(rep) < 30 || !strings.ContainsAny(rep, " \n") {
		return cont, false
	}
	end := strings.TrimRight(rep, " \t\r\n")
	var b strings.Builder
	for k := 0; k < len(end); k++ {
		switch rep[k] {
		case ' ':
			if r.IntN(4) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString("  ")
			}
		case '\n':
			b.WriteByte(' ')
		case '\t':
			b.WriteString("    ")
		default:
			b.WriteByte(rep[k])
		}
	}
	return b.String() + rep[len(end):] + cont, true
}

// markers obeys the overlap prompt: the last one to six lines (the last one
// possibly partial) between the markers, each marker on a line of its own,
// then the continuation from the exact character where the echo ends.
func markers(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	i := len(prev)
	if strings.HasSuffix(prev, "\n") {
		i--
	}
	for n := 1 + r.IntN(6); n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(prev[:i], '\n')
	}
	echo := prev[i+1:]
	if !strings.HasSuffix(echo, "\n") {
		echo += "\n"
	}
	return "---BEGIN_OVERLAP---\n" + echo + "---END_OVERLAP---\n" + cont, true
}

// rawInString: cut inside a JSON string, the model writes the rest of the
// string's value raw (real newlines, unescaped quotes) before closing it.
func rawInString(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	st := jsonState(prev)
	if !st.inStr || st.esc {
		return cont, false
	}
	// Find the end of the string in cont and decode the remaining value.
	end := -1
	for i := 0; i < len(cont); i++ {
		if cont[i] == '\\' {
			i++
			continue
		}
		if cont[i] == '"' {
			end = i
			break
		}
	}
	if end < 0 {
		return cont, false
	}
	var v string
	if err := json.Unmarshal([]byte(`"`+cont[:end]+`"`), &v); err != nil || !strings.Contains(v, "\n") {
		return cont, false
	}
	return v + cont[end:], true
}

// renumbered restarts the numbering of records at 1 in the continuation.
func renumbered(r *rand.Rand, d doc, prev, cont string, last bool) (string, bool) {
	const key = `"line":`
	first := -1
	var b strings.Builder
	rest := cont
	changed := false
	for {
		i := strings.Index(rest, key)
		if i < 0 {
			break
		}
		j := i + len(key)
		k := j
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		if k == j || k == len(rest) {
			break
		}
		n, _ := strconv.Atoi(rest[j:k])
		if first < 0 {
			first = n
		}
		b.WriteString(rest[:j])
		b.WriteString(strconv.Itoa(n - first + 1))
		changed = changed || first != 1
		rest = rest[k:]
	}
	b.WriteString(rest)
	return b.String(), changed
}

// jsonScan is the benchmark's own reading of where a JSON prefix stands,
// written independently of the merge package.
type jsonScan struct {
	frames []jsonFrameB
	inStr  bool
	esc    bool
}

type jsonFrameB struct {
	kind byte
	elem int    // start of the element in progress, -1 between elements
	key  string // the key of the member in progress (objects)
}

func jsonState(s string) jsonScan {
	var st jsonScan
	keyStart := -1
	isKey := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if st.inStr {
			switch {
			case st.esc:
				st.esc = false
			case c == '\\':
				st.esc = true
			case c == '"':
				st.inStr = false
				if isKey && len(st.frames) > 0 {
					st.frames[len(st.frames)-1].key = s[keyStart : i+1]
				}
			}
			continue
		}
		top := len(st.frames) - 1
		switch c {
		case '"':
			st.inStr = true
			isKey = top >= 0 && st.frames[top].kind == '{' && st.frames[top].elem < 0
			keyStart = i
			if top >= 0 && st.frames[top].elem < 0 {
				st.frames[top].elem = i
			}
		case '{', '[':
			if top >= 0 && st.frames[top].elem < 0 {
				st.frames[top].elem = i
			}
			st.frames = append(st.frames, jsonFrameB{kind: c, elem: -1})
		case '}', ']':
			if top >= 0 {
				st.frames = st.frames[:top]
			}
		case ',':
			if top >= 0 {
				st.frames[top].elem = -1
			}
		case ' ', '\t', '\n', '\r', ':':
		default:
			if top >= 0 && st.frames[top].elem < 0 {
				st.frames[top].elem = i
			}
		}
	}
	return st
}
