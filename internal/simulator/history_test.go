package simulator

import (
	"strings"
	"testing"
)

func TestFollow(t *testing.T) {
	t.Parallel()
	doc := "alpha line one\nbeta line two\ngamma line three\ndelta line four\n"
	off := strings.Index(doc, "gamma") + 3 // mid-line: "gam|ma"
	emitted := doc[:off]
	tests := []struct {
		name    string
		text    string
		end     int
		matched bool
	}{
		{"clean", "ma line three\ndel", off + 17, true},
		{"empty", "", off, true},
		{"overlap block", overlapBegin + "beta line two\ngam\n" + overlapEnd + "ma line", off + 7, true},
		{"preamble", preambleText + "ma line", off + 7, true},
		{"fence", "```\nma line three\n\n```", off + 14, true},
		{"fence closed", "```\nma line three\n```\n", off + 14, true},
		{"fence open", "```\nma line three\nde", off + 16, true},
		{"restarted line", "gamma line three\nd", off + 15, true},
		{"repeated tail", emitted[runeStart(emitted, max(0, len(emitted)-40)):] + "ma l", off + 4, true},
		{"diverges", "ma lime", off + 5, false},
		{"unrelated", "zzz", off, false},
	}
	for _, tt := range tests {
		end, matched := follow(doc, off, tt.text, "")
		if end != tt.end || matched != tt.matched {
			t.Errorf("%s: follow = %d %v, want %d %v", tt.name, end, matched, tt.end, tt.matched)
		}
	}
}

func TestCachedTokens(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ prefix, want int }{{0, 0}, {15, 0}, {16, 16}, {1151, 1136}, {1152, 1152}, {5000, 4992}} {
		if got := cachedTokens(tt.prefix); got != tt.want {
			t.Errorf("cachedTokens(%d) = %d, want %d", tt.prefix, got, tt.want)
		}
	}
}
