package continuation

import (
	"errors"
	"strings"
	"testing"

	"github.com/carryover/carryover/carryovertype"
)

// Usage a provider cannot have meant is refused, and cleared from the
// reply so it is neither billed nor counted; sane usage passes.
func TestCheckReplyUsage(t *testing.T) {
	cases := []struct {
		name string
		u    Usage
		ok   bool
	}{
		{"sane", Usage{Input: 1200, Cached: 1000, Output: 4096, Reasoning: 1024}, true},
		{"overrun by a little", Usage{Input: 10, Output: 4200}, true},
		{"nothing reported", Usage{}, true},
		{"negative output", Usage{Input: 10, Output: -1}, false},
		{"negative input", Usage{Input: -5_000_000_000}, false},
		{"negative cached", Usage{Input: 10, Cached: -1}, false},
		{"negative reasoning", Usage{Output: 10, Reasoning: -1}, false},
		{"output past int32", Usage{Output: 1<<31 + 5}, false},
		{"output 101 times the budget", Usage{Output: 101 * 4096}, false},
		{"reasoning past the bound", Usage{Output: 10, Reasoning: 1 << 40}, false},
		{"input past any context", Usage{Input: MaxInputTokens + 1}, false},
		{"cached past any context", Usage{Input: 10, Cached: 1 << 50}, false},
	}
	for _, c := range cases {
		r := Response{ID: "resp_u", Text: "hello", Usage: c.u}
		err := CheckReply(&r, 4096)
		if c.ok {
			if err != nil || r.Usage != c.u {
				t.Errorf("%s: %v, usage %+v", c.name, err, r.Usage)
			}
			continue
		}
		var ce *CallError
		if !errors.As(err, &ce) || ce.Type != carryovertype.ErrModel || !ce.Malformed || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%s: want a malformed model error about usage, got %v", c.name, err)
		}
		if r.Usage != (Usage{}) {
			t.Errorf("%s: the refused usage stayed on the reply: %+v", c.name, r.Usage)
		}
	}
}

// A reply with more text or tool calls than its budget allows is refused;
// its (sane) usage stays, as it was billed.
func TestCheckReplySize(t *testing.T) {
	u := Usage{Input: 10, Output: 64}
	limit := MaxReplyText(64)
	cases := []struct {
		name string
		r    Response
		ok   bool
	}{
		{"at the bound", Response{Text: strings.Repeat("a", int(limit))}, true},
		{"past the bound", Response{Text: strings.Repeat("a", int(limit)+1)}, false},
		{"arguments past the bound", Response{Text: "a", ToolCalls: []carryovertype.ToolCall{{Name: "f", Arguments: strings.Repeat("b", int(limit))}}}, false},
		{"128 tool calls", Response{ToolCalls: make([]carryovertype.ToolCall, MaxToolCalls)}, true},
		{"129 tool calls", Response{ToolCalls: make([]carryovertype.ToolCall, MaxToolCalls+1)}, false},
	}
	for _, c := range cases {
		c.r.Usage = u
		err := CheckReply(&c.r, 64)
		var ce *CallError
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && (!errors.As(err, &ce) || ce.Type != carryovertype.ErrModel || !ce.Malformed):
			t.Errorf("%s: want a malformed model error, got %v", c.name, err)
		case c.r.Usage != u:
			t.Errorf("%s: usage changed to %+v", c.name, c.r.Usage)
		}
	}
}

// Scrub replaces NULs and invalid UTF-8 with U+FFFD, in the text and tool
// calls (counted) and in identifiers and statuses (not counted); a clean
// reply is left as it is.
func TestScrub(t *testing.T) {
	r := Response{ID: "resp\x00", Text: "a\x00b\x00c\xff\xfed", RawStatus: "completed",
		ToolCalls: []carryovertype.ToolCall{{Name: "f", Arguments: `{"k":"v` + "\x00" + `"}`}}}
	if n := r.Scrub(); n != 4 {
		t.Fatalf("replaced %d, want 4 (two NULs and one invalid run in the text, one NUL in the arguments)", n)
	}
	if r.Text != "a\uFFFDb\uFFFDc\uFFFDd" || r.ToolCalls[0].Arguments != `{"k":"v`+"\uFFFD"+`"}` || r.ID != "resp\uFFFD" || r.RawStatus != "completed" {
		t.Fatalf("scrubbed: %q %q %q", r.Text, r.ToolCalls[0].Arguments, r.ID)
	}
	clean := Response{ID: "resp_1", Text: "héllo, wörld ✓"}
	if n := clean.Scrub(); n != 0 || clean.Text != "héllo, wörld ✓" {
		t.Fatalf("clean reply changed: %d %q", n, clean.Text)
	}
}
