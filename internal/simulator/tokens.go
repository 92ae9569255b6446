package simulator

import "unicode/utf8"

// bytesPerToken is the simulator's tokenizer: a token is up to this many bytes
// of the document, never splitting a UTF-8 rune. Crude, but it makes every cut
// position reachable: mid-word, mid-row, inside quoted fields and strings.
const bytesPerToken = 4

// advance walks at most n tokens of doc from off and returns the new offset
// and how many tokens it took.
func advance(doc string, off, n int) (end, tokens int) {
	for tokens < n && off < len(doc) {
		// Most tokens are four ASCII bytes: no rune to decode.
		if off+bytesPerToken <= len(doc) && doc[off]|doc[off+1]|doc[off+2]|doc[off+3] < utf8.RuneSelf {
			off += bytesPerToken
			tokens++
			continue
		}
		start := off
		for off < len(doc) {
			size := 1
			if doc[off] >= utf8.RuneSelf {
				_, size = utf8.DecodeRuneInString(doc[off:])
			}
			if off > start && off+size-start > bytesPerToken {
				break
			}
			off += size
		}
		tokens++
	}
	return off, tokens
}

// tokensOf approximates the token count of text that is not document output
// (prompts, history, behaviour extras).
func tokensOf(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// runeStart moves off back to the start of the rune containing it.
func runeStart(s string, off int) int {
	for off > 0 && off < len(s) && !utf8.RuneStart(s[off]) {
		off--
	}
	return off
}
