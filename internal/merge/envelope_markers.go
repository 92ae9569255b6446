package merge

import "strings"

// Overlap markers of the overlap continuation prompt: the model is shown the
// document's tail and asked to echo it between these lines before continuing.
const (
	beginOverlap = "---BEGIN_OVERLAP---"
	endOverlap   = "---END_OVERLAP---"
)

// cutMarkers splits a chunk that opens (after whitespace) with the overlap
// prompt's begin marker into the echoed text and what follows the end
// marker's line. A chunk cut off before the end marker is all echo
// (complete is false). removed is what the markers took, the echo aside.
func cutMarkers(t string) (echo, rest string, complete, ok bool) {
	s := strings.TrimLeft(t, " \t\r\n")
	if !strings.HasPrefix(s, beginOverlap) {
		return "", t, false, false
	}
	s = markerLineEnd(s[len(beginOverlap):])
	j := strings.Index(s, endOverlap)
	if j < 0 {
		return s, "", false, true
	}
	return s[:j], markerLineEnd(s[j+len(endOverlap):]), true, true
}

// markerLineEnd drops the rest of a marker's line (trailing blanks and the
// line break) when the marker has a line of its own.
func markerLineEnd(s string) string {
	r := strings.TrimLeft(s, " \t")
	if strings.HasPrefix(r, "\r\n") {
		return r[2:]
	}
	if strings.HasPrefix(r, "\n") {
		return r[1:]
	}
	if r == "" {
		return r
	}
	return s
}

// echoJoins reports whether the text a model echoed between the overlap
// markers is the document's tail exactly, less at most the line break it
// put after a partial last line so that the end marker has a line of its
// own. An empty echo verifies nothing.
//
// An echo cut off by the length limit before its end marker repeats the
// start of the tail instead: it stands in the document from the start of a
// line near its end.
func echoJoins(doc, echo string, cut bool) bool {
	if echo == "" || len(echo) > len(doc)+2 {
		return false
	}
	if cut {
		w := tail(doc, overlapWindow)
		for end := len(w); ; {
			i := strings.LastIndex(w[:end], echo)
			if i < 0 {
				return false
			}
			if i == 0 && len(w) == len(doc) || i > 0 && w[i-1] == '\n' {
				return true
			}
			end = i + len(echo) - 1
		}
	}
	if strings.HasSuffix(doc, echo) {
		return true
	}
	for _, nl := range []string{"\r\n", "\n"} {
		if e, ok := strings.CutSuffix(echo, nl); ok && e != "" && strings.HasSuffix(doc, e) {
			return true
		}
	}
	return false
}

// echoText is what an echo that is not the document's tail stands for: text
// the model wrote, kept for the cascade to judge, with the line break it
// put after a partial last line for the end marker's sake taken out.
func echoText(doc, echo string) string {
	if doc == "" || strings.HasSuffix(doc, "\n") {
		return echo
	}
	if e, ok := strings.CutSuffix(echo, "\r\n"); ok {
		return e
	}
	return strings.TrimSuffix(echo, "\n")
}
