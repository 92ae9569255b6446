package main

import (
	"strings"
)

// wsHabits are the whitespace differences a model's reproduction of a
// format shows when it starts over: trailing spaces dropped, indentation
// redone (tabs as spaces, another indent width), blank-line runs changed
// (a blank line between a patch's files), prose re-wrapped, JSON re-spaced. None changes a non-whitespace byte;
// for CSV and JSON none changes the data (nothing inside a quoted field or
// a string, nothing a CSV reader keeps).
var wsHabits = map[string][]string{
	"csv":      {"blank-after-header"},
	"json":     {"reindent", "colon-space"},
	"jsonl":    {"colon-space", "comma-space"},
	"code":     {"trailing", "reindent", "blank-runs"},
	"diff":     {"trailing", "detab", "blank-between-files"},
	"markdown": {"trailing", "blank-runs", "unwrap"},
	"text":     {"trailing", "blank-runs", "unwrap", "rewrap"},
}

// wsKinds picks the whitespace habits of a case: one, sometimes two.
func (e *env) wsKinds() []string {
	all := wsHabits[e.d.format]
	k := []string{pick(e.r, all)}
	if len(all) > 1 && e.r.IntN(3) == 0 {
		if o := pick(e.r, all); o != k[0] {
			k = append(k, o)
		}
	}
	return k
}

// wsVary reproduces seg, which starts at a line start of the document,
// with the whitespace habits; where they change nothing in seg, with the
// format's other habits, one after another, until one does. The line
// holding seg's last non-whitespace byte and everything after it are
// reproduced as they are: the reproduction ends exactly where the document
// does, so where it meets the continuation stays unambiguous.
func wsVary(e *env, seg string, kinds []string) string {
	i := strings.LastIndexFunc(seg, func(c rune) bool { return c > 127 || !isSpace(byte(c)) })
	if i < 0 {
		return seg
	}
	p := strings.LastIndexByte(seg[:i], '\n') + 1
	body := seg[:p]
	for _, k := range kinds {
		body = wsApply(e, k, body)
	}
	if body == seg[:p] {
		for _, j := range e.r.Perm(len(wsHabits[e.d.format])) {
			if body = wsApply(e, wsHabits[e.d.format][j], body); body != seg[:p] {
				break
			}
		}
	}
	if stripWS(body) != stripWS(seg[:p]) {
		return seg // never more than whitespace
	}
	return body + seg[p:]
}

// wsApply applies one whitespace habit to body, whole lines each ending in
// a line break.
func wsApply(e *env, kind, body string) string {
	if body == "" {
		return body
	}
	switch kind {
	case "blank-after-header":
		h := e.d.text[:strings.IndexByte(e.d.text, '\n')+1]
		if h != "" && !strings.Contains(h, `"`) && len(body) > len(h) && strings.HasPrefix(body, h) {
			return h + "\n" + body[len(h):]
		}
		return body
	case "colon-space":
		return respace(body, ':')
	case "comma-space":
		return respace(body, ',')
	}
	ls := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	switch kind {
	case "trailing":
		for i, l := range ls {
			ls[i] = strings.TrimRight(l, " \t")
		}
	case "reindent":
		reindent(e, ls)
	case "detab":
		for i, l := range ls {
			if l != "" && strings.ContainsRune(" +-", rune(l[0])) && !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
				t := strings.TrimLeft(l[1:], "\t")
				ls[i] = l[:1] + strings.Repeat("    ", len(l)-1-len(t)) + t
			}
		}
	case "blank-runs":
		ls = blankRuns(e, ls)
	case "blank-between-files":
		var out []string
		for i, l := range ls {
			if i > 0 && strings.HasPrefix(l, "diff --git ") {
				out = append(out, "")
			}
			out = append(out, l)
		}
		ls = out
	case "unwrap", "rewrap":
		ls = rewrap(e, ls, kind == "rewrap")
	}
	return strings.Join(ls, "\n") + "\n"
}

// reindent redoes the leading indentation: Go's tabs as four (or two)
// spaces; JSON's indent unit as another.
func reindent(e *env, ls []string) {
	if e.d.format == "code" {
		unit := "    "
		if e.r.IntN(3) == 0 {
			unit = "  "
		}
		for i, l := range ls {
			t := strings.TrimLeft(l, "\t")
			ls[i] = strings.Repeat(unit, len(l)-len(t)) + t
		}
		return
	}
	u := 0
	for _, l := range ls {
		if n := len(l) - len(strings.TrimLeft(l, " ")); n > 0 && (u == 0 || n < u) {
			u = n
		}
	}
	if u == 0 {
		return
	}
	unit := "    " // two spaces become four, four two; now and then a tab
	if u == 4 {
		unit = "  "
	}
	if e.r.IntN(4) == 0 {
		unit = "\t"
	}
	for i, l := range ls {
		n := len(l) - len(strings.TrimLeft(l, " "))
		ls[i] = strings.Repeat(unit, n/u) + l[n-n%u:]
	}
}

// blankRuns changes runs of blank lines between content: one becomes none
// or two, more become one; about a third of the runs, at least one.
func blankRuns(e *env, ls []string) []string {
	type run struct{ i, j int }
	var runs []run
	for i := 0; i < len(ls); i++ {
		j := i
		for j < len(ls) && strings.TrimSpace(ls[j]) == "" {
			j++
		}
		if j > i && i > 0 && j < len(ls) {
			runs = append(runs, run{i, j})
		}
		i = j
	}
	if len(runs) == 0 {
		return ls
	}
	change := make([]bool, len(runs))
	for k := range runs {
		change[k] = e.r.IntN(3) == 0
	}
	change[e.r.IntN(len(runs))] = true
	var out []string
	at := 0
	for k, ru := range runs {
		if !change[k] {
			continue
		}
		out = append(out, ls[at:ru.i]...)
		n := 1
		if ru.j-ru.i == 1 {
			n = 2 * e.r.IntN(2)
		}
		out = append(out, make([]string, n)...)
		at = ru.j
	}
	return append(out, ls[at:]...)
}

// rewrap joins the lines of prose paragraphs into one (unwrap) or wraps
// them again at another width (rewrap): about half the paragraphs. In
// Markdown only plain paragraph lines outside code blocks count.
func rewrap(e *env, ls []string, wrap bool) []string {
	var out []string
	inCode := false
	for i := 0; i < len(ls); {
		j := i
		for j < len(ls) && proseLine(e.d.format, ls[j], &inCode) {
			j++
		}
		if j == i {
			out = append(out, ls[i])
			i++
			continue
		}
		para := ls[i:j]
		if j-i > 1 && e.r.IntN(2) == 0 {
			para = wrapLines(para, wrap, 50+e.r.IntN(40))
		}
		out = append(out, para...)
		i = j
	}
	return out
}

// proseLine reports whether l is a line of a prose paragraph, tracking
// Markdown's fenced code blocks.
func proseLine(format, l string, inCode *bool) bool {
	t := strings.TrimSpace(l)
	if format != "markdown" {
		return t != ""
	}
	if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
		*inCode = !*inCode
		return false
	}
	if *inCode || t == "" || l[0] == ' ' || l[0] == '\t' || strings.ContainsRune("#>-*+|`~<=[!/", rune(t[0])) {
		return false
	}
	return !(t[0] >= '0' && t[0] <= '9')
}

// wrapLines joins a paragraph into one line or wraps its words at width,
// keeping the first line's indentation.
func wrapLines(para []string, wrap bool, width int) []string {
	indent := para[0][:len(para[0])-len(strings.TrimLeft(para[0], " \t"))]
	words := strings.Fields(strings.Join(para, "\n"))
	if !wrap {
		return []string{indent + strings.Join(words, " ")}
	}
	var out []string
	line := indent
	for _, w := range words {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" && line != indent {
			line += " "
		}
		line += w
	}
	return append(out, line)
}

// respace toggles the space after c outside JSON strings: removed where
// the first c has one, added where it has none (not before a line break).
func respace(body string, c byte) string {
	var b strings.Builder
	in, esc := false, false
	mode := 0 // 1 removes, 2 adds
	for i := 0; i < len(body); i++ {
		ch := body[i]
		b.WriteByte(ch)
		switch {
		case in && esc:
			esc = false
		case in && ch == '\\':
			esc = true
		case ch == '"':
			in = !in
		case !in && ch == c && i+1 < len(body):
			if mode == 0 {
				mode = 2
				if body[i+1] == ' ' {
					mode = 1
				}
			}
			if mode == 1 && body[i+1] == ' ' {
				i++
			} else if mode == 2 && body[i+1] != ' ' && body[i+1] != '\n' {
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}

func stripWS(s string) string {
	return strings.Map(func(c rune) rune {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return -1
		}
		return c
	}, s)
}

// earlierLine picks where a continuation restarts: the start of a line
// before the one the cut is in; mostly within the last 2 KiB, sometimes
// anywhere, sometimes more than 16 KiB back when the document is that
// long. In CSV only record starts: no model restarts inside a quoted
// field. len(prev) when there is no earlier line.
func (e *env) earlierLine(prev string) int {
	cur := strings.LastIndexByte(prev, '\n') + 1
	var starts []int
	in := false
	for i := 0; i < cur; i++ {
		if (i == 0 || prev[i-1] == '\n') && !in {
			starts = append(starts, i)
		}
		if prev[i] == '"' && e.d.format == "csv" {
			in = !in
		}
	}
	if len(starts) == 0 {
		return len(prev)
	}
	var near, far []int
	for _, s := range starts {
		if cur-s <= 2<<10 {
			near = append(near, s)
		}
		if cur-s > 16<<10 {
			far = append(far, s)
		}
	}
	switch m := e.r.IntN(4); {
	case m == 0 && len(far) > 0:
		return pick(e.r, far)
	case m >= 2 && len(near) > 0:
		return pick(e.r, near)
	}
	return pick(e.r, starts)
}
