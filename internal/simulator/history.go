package simulator

import "strings"

// cacheBlockTokens is the prompt cache's granularity: a prefix cache serves
// whole blocks of a previously seen prefix (vLLM's default KV block size).
const cacheBlockTokens = 16

// cachedTokens is what a prompt cache serves of a prompt whose first prefix
// tokens were sent (or stored) before.
func cachedTokens(prefix int) int {
	return prefix / cacheBlockTokens * cacheBlockTokens
}

// follow returns how far text, an assistant turn the client sends back,
// carries the document from offset: the model reads its earlier turns and
// continues after the last of them. A turn that is a clean continuation
// matches directly; otherwise the extras a behaviour adds are recognized (an
// overlap block, a preamble, fences, a repeated tail or line) so the turn is
// followed anyway, and so are the envelope of the whole-answer habits (a
// tagged fence, chatty remarks). A turn that starts the document over from
// an earlier line is followed only under restart_top (behavior), which
// writes such turns: under any other behaviour it is a turn that left the
// document (a strict schema's restart). matched is false when the text
// leaves the document; the offset then reaches as far as the text followed
// it, and the caller ignores later turns, as the model would be lost.
func follow(doc string, offset int, text, behavior string) (end int, matched bool) {
	if n := commonPrefix(doc[offset:], text); n == len(text) {
		return offset + n, true
	} else if n > 0 {
		end = offset + n
	} else {
		end = offset
	}
	bodies := []string{text}
	if rest, ok := strings.CutPrefix(text, overlapBegin); ok {
		if i := strings.Index(rest, overlapEnd); i >= 0 {
			bodies = append(bodies, rest[i+len(overlapEnd):])
		}
	}
	if rest, ok := strings.CutPrefix(text, preambleText); ok {
		bodies = append(bodies, rest)
	}
	if rest, ok := strings.CutPrefix(text, "```\n"); ok {
		// Unclosed (a turn cut by the limit, whose text may end with a
		// fence of the document's own), closed on a line of its own at
		// the end of the document, or (written so before) after a line
		// break of its own.
		bodies = append(bodies, rest)
		body := strings.TrimSuffix(strings.TrimSuffix(rest, "\n"), "```")
		if b, ok := strings.CutSuffix(body, "\n"); ok && strings.HasSuffix(rest, "\n```") {
			bodies = append(bodies, b)
		}
		bodies = append(bodies, body)
	}
	bodies = append(bodies, habitBodies(text)...)
	starts := []int{
		offset,
		strings.LastIndexByte(doc[:offset], '\n') + 1, // a restarted line
		runeStart(doc, max(0, offset-repeatTailLen)),  // a repeated tail
	}
	for i, body := range bodies {
		for _, start := range starts {
			if i == 0 && start == offset {
				continue // the direct match, tried above
			}
			n := commonPrefix(doc[start:], body)
			if start+n < offset {
				continue // does not even reach what was emitted
			}
			if n == len(body) {
				return start + n, true
			}
			end = max(end, start+n)
		}
	}
	if behavior == BehaviorRestartTop {
		e, ok := restartedFrom(doc, offset, text)
		return max(end, e), ok
	}
	return end, false
}
