package continuation

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/carryover/carryover/carryovertype"
)

// Bounds on a model's reply. The model endpoint is not trusted: whatever it
// sends is held in memory, priced and stored, so each quantity is bounded in
// proportion to what the call asked for, with margins wide enough that no
// honest reply comes near them.
const (
	// ReplyTextPerToken is how many bytes of text (answer text, tool names
	// and arguments, as decoded) a reply may carry per output token of its
	// budget. Tokens of today's vocabularies average 3–5 bytes of English
	// and rarely exceed 16 (CJK, long runs of spaces or dashes); 64 is four
	// times the longest common token and over ten times any real average.
	ReplyTextPerToken = 64
	// ReplyTextBase is added to every reply's text bound, so that a tiny
	// budget still leaves room for a tool call's name and framing.
	ReplyTextBase = 64 << 10
	// MaxToolCalls bounds the tool calls of one reply; a streamed tool-call
	// piece must name an index below it. Parallel tool calls come in ones
	// and tens.
	MaxToolCalls = 128
	// MaxInputTokens bounds a call's reported input (and cached) tokens:
	// ten times the largest context window offered today (10M).
	MaxInputTokens = 100_000_000
	// OutputUsageFactor bounds a call's reported output tokens as a multiple
	// of its budget: a provider may overrun max_output_tokens by a little
	// (a reasoning model finishing a thought), never by a hundredfold.
	OutputUsageFactor = 100
)

// MaxReplyText is the most text, in bytes, a reply to a call with this
// output budget may carry (see ReplyTextPerToken). A budget of 0 (none
// given) is taken as the largest any job may ask.
func MaxReplyText(maxOutputTokens int) int64 {
	return ReplyTextBase + ReplyTextPerToken*int64(budget(maxOutputTokens))
}

// MaxOutputUsage is the most output tokens a reply may report for a call
// with this budget.
func MaxOutputUsage(maxOutputTokens int) int64 {
	return OutputUsageFactor * int64(budget(maxOutputTokens))
}

func budget(maxOutputTokens int) int {
	if maxOutputTokens <= 0 {
		return carryovertype.MaxMaxOutputTokens
	}
	return maxOutputTokens
}

// CheckUsage reports usage a provider cannot have meant: a negative count
// (it would lower the job's spend and bypass its budgets), input beyond any
// context window, or output a hundred times the call's budget (it would
// overflow the totals and price the call absurdly). nil when it is sane.
func CheckUsage(u Usage, maxOutputTokens int) error {
	switch {
	case u.Input < 0 || u.Cached < 0 || u.Output < 0 || u.Reasoning < 0:
		return fmt.Errorf("negative usage reported (input %d, cached %d, output %d, reasoning %d)", u.Input, u.Cached, u.Output, u.Reasoning)
	case u.Input > MaxInputTokens || u.Cached > MaxInputTokens:
		return fmt.Errorf("absurd usage reported: input %d, cached %d tokens (at most %d)", u.Input, u.Cached, MaxInputTokens)
	case u.Output > MaxOutputUsage(maxOutputTokens) || u.Reasoning > MaxOutputUsage(maxOutputTokens):
		return fmt.Errorf("absurd usage reported: output %d, reasoning %d tokens for a budget of %d (at most %d)",
			u.Output, u.Reasoning, maxOutputTokens, MaxOutputUsage(maxOutputTokens))
	}
	return nil
}

// CheckReply holds a reply to the bounds above. Usage that CheckUsage
// refuses is cleared from r — it is not billed or counted as reported — and
// the reply is a malformed-response model error; so is a reply with more
// text or tool calls than its budget allows (its usage, if sane, stays: it
// was billed). maxOutputTokens is the budget the call was made with.
func CheckReply(r *Response, maxOutputTokens int) error {
	if err := CheckUsage(r.Usage, maxOutputTokens); err != nil {
		r.Usage = Usage{}
		return malformed(fmt.Errorf("response %s: %w", r.ID, err))
	}
	if len(r.ToolCalls) > MaxToolCalls {
		return malformed(fmt.Errorf("response %s has %d tool calls (at most %d)", r.ID, len(r.ToolCalls), MaxToolCalls))
	}
	n := int64(len(r.Text))
	for _, c := range r.ToolCalls {
		n += int64(len(c.Name) + len(c.Arguments))
	}
	if limit := MaxReplyText(maxOutputTokens); n > limit {
		return malformed(fmt.Errorf("response %s carries %d bytes of text for a budget of %d output tokens (at most %d)",
			r.ID, n, maxOutputTokens, limit))
	}
	return nil
}

// malformed is a model error for a reply that arrived but cannot be used.
func malformed(err error) *CallError {
	return &CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true, Err: err}
}

// Scrub makes the reply's strings storable: Postgres text holds neither
// NUL nor invalid UTF-8, and a reply that could not be saved would be paid
// for again and again. Each NUL becomes U+FFFD (the replacement character),
// as does each invalid byte sequence, so the document keeps its shape and
// the replacement shows where it happened. Refusing the reply instead would
// throw away a paid-for answer for one unprintable character. The caller
// records the count (in the chunk's decision note and a warning), so the
// operator knows the stored text is not byte for byte what the model sent.
// It returns how many replacements the text and tool calls needed (the
// identifiers and statuses are scrubbed too, uncounted).
func (r *Response) Scrub() int {
	n := scrub(&r.Text)
	for i := range r.ToolCalls {
		c := &r.ToolCalls[i]
		n += scrub(&c.ID) + scrub(&c.CallID) + scrub(&c.Name) + scrub(&c.Arguments) + scrub(&c.Invalid)
	}
	scrub(&r.ID)
	scrub(&r.RawStatus)
	scrub(&r.IncompleteReason)
	scrub(&r.ErrorMessage)
	return n
}

// scrub replaces NULs and invalid UTF-8 in *s with U+FFFD, and says how
// many it replaced (a run of invalid bytes is one, as strings.ToValidUTF8
// has it). A clean string, the usual case, is only scanned.
func scrub(s *string) int {
	if strings.IndexByte(*s, 0) < 0 && utf8.ValidString(*s) {
		return 0
	}
	in, n, bad := *s, 0, false
	var b strings.Builder
	b.Grow(len(in) + 8)
	for i := 0; i < len(in); {
		r, size := utf8.DecodeRuneInString(in[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if !bad {
				b.WriteRune(utf8.RuneError)
				n++
			}
			bad = true
		case r == 0:
			b.WriteRune(utf8.RuneError)
			n, bad = n+1, false
		default:
			b.WriteString(in[i : i+size])
			bad = false
		}
		i += size
	}
	*s = b.String()
	return n
}
