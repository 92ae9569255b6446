package simulator

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Formats the simulator can produce.
const (
	FormatCSV      = "csv"
	FormatJSON     = "json"
	FormatJSONL    = "jsonl"
	FormatMarkdown = "markdown"
	FormatCode     = "code"
	FormatDiff     = "diff"
	FormatText     = "text"
)

// Behaviors describe how a continuation (depth >= 1) deviates from a perfect one.
const (
	BehaviorExact       = "exact"
	BehaviorRepeatTail  = "repeat_tail"
	BehaviorRestartLine = "restart_line"
	BehaviorPreamble    = "preamble"
	BehaviorFence       = "fence"
	BehaviorOverlap     = "overlap"
	// BehaviorIgnoreOverlap is a model that ignores an overlap instruction
	// ("repeat the last N lines ..."): no markers, it restarts the incomplete
	// last line instead, as restart_line does.
	BehaviorIgnoreOverlap = "ignore_overlap"
	// BehaviorWrap is a model that fences its whole answer, as chat models
	// often do for typed output: the turn that starts the document opens a
	// fence tagged for the format, continuations go on inside it, and the
	// turn that finishes the document closes it. Text is never fenced.
	BehaviorWrap = "wrap"
	// BehaviorWrapEach is BehaviorWrap whose continuations also reopen the
	// fence at their start, each cut off before its close.
	BehaviorWrapEach = "wrap_each"
	// BehaviorChatty is a model that talks around the document: every
	// continuation opens with a remark (varied, drawn by seed and depth) and
	// the turn that finishes the document ends with a closing one.
	BehaviorChatty = "chatty"
	// BehaviorRestartTop is a model that starts the document over at a
	// continuation and reproduces it up to where it stopped (from an earlier
	// line when that would take more than half its budget) before going on.
	BehaviorRestartTop = "restart_top"
)

const (
	defaultSize          = 2000
	defaultSeed          = 1
	directiveOpen        = "[[sim"
	directiveClose       = "]]"
	maxDirectiveSize     = 1 << 26 // 64 MiB: a document bigger than this is a typo, not a test
	reasoningModelBudget = 64
)

// Fault kinds accepted in the faults= list.
const (
	Fault429           = "429"
	Fault500           = "500"
	Fault400           = "400"
	FaultContentFilter = "content_filter"
	FaultFailed        = "failed"
	FaultSlow          = "slow"
	FaultMalformed     = "malformed"
	FaultCutoff        = "cutoff"
	// FaultBreak cuts the connection: a stream stops abruptly after about
	// half the turn's text (no finish_reason, terminal event or [DONE]); a
	// non-streaming request gets its connection dropped before any reply.
	FaultBreak = "break"
)

// Tool call modes of the tool= directive key.
const (
	ToolOK        = "ok"        // a complete call with valid JSON arguments
	ToolTruncated = "truncated" // the budget runs out inside the arguments
	ToolInvalid   = "invalid"   // a complete call whose arguments are not valid JSON
)

// Spec is a parsed [[sim ...]] directive: it fixes the document and how the
// simulated model misbehaves while producing it.
type Spec struct {
	Format string
	Size   int
	Seed   int64
	Tag    string
	Faults []Fault
	// Reasoning is the number of reasoning tokens spent per call; -1 means
	// "not given", in which case the model name decides (64 for o1/o3/o4/gpt-5, else 0).
	Reasoning int
	Behavior  string
	// Tool, when set, makes the model call a function at one depth.
	Tool *ToolSpec
}

// ToolSpec is a directive's tool=DEPTH[:MODE]: at that depth the model
// writes part of its budget as document text and then calls the first
// function tool the request offers (none offered, no call).
type ToolSpec struct {
	Depth int
	Mode  string // ToolOK, ToolTruncated or ToolInvalid
}

// Fault is one KIND@DEPTH[:ARG][xN] entry of a directive's faults= list.
type Fault struct {
	Kind  string
	Depth int
	Arg   string
	Times int // how many times the fault fires at that depth before requests succeed
}

// DefaultSpec is what the simulator uses when a request carries no directive.
func DefaultSpec() Spec {
	return Spec{Format: FormatText, Size: defaultSize, Seed: defaultSeed, Reasoning: -1, Behavior: BehaviorExact}
}

// ParseSpec finds the first [[sim ...]] directive in text and parses it.
// ok is false when there is no directive or it is invalid.
func ParseSpec(text string) (Spec, bool) {
	spec, found, err := parseSpec(text)
	return spec, found && err == nil
}

// parseSpec distinguishes "no directive" (found=false) from "bad directive"
// (err != nil) so the server can refuse a typo with a message naming the key
// instead of silently producing the default document.
func parseSpec(text string) (spec Spec, found bool, err error) {
	spec = DefaultSpec()
	i := strings.Index(text, directiveOpen)
	if i < 0 {
		return spec, false, nil
	}
	rest := text[i+len(directiveOpen):]
	j := strings.Index(rest, directiveClose)
	if j < 0 {
		return spec, true, fmt.Errorf("sim directive: missing closing %q", directiveClose)
	}
	body := rest[:j]
	if body != "" && body[0] != ' ' && body[0] != '\t' && body[0] != '\n' {
		return spec, true, fmt.Errorf("sim directive: expected a space after %q", directiveOpen)
	}
	for field := range strings.FieldsSeq(body) {
		key, value, ok := strings.Cut(field, "=")
		if !ok {
			return spec, true, fmt.Errorf("sim directive: field %q is not key=value", field)
		}
		if err := spec.set(key, value); err != nil {
			return spec, true, fmt.Errorf("sim directive: %w", err)
		}
	}
	return spec, true, nil
}

func (s *Spec) set(key, value string) error {
	switch key {
	case "format":
		switch value {
		case FormatCSV, FormatJSON, FormatJSONL, FormatMarkdown, FormatCode, FormatDiff, FormatText:
			s.Format = value
		default:
			return fmt.Errorf("format: unknown format %q", value)
		}
	case "size":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > maxDirectiveSize {
			return fmt.Errorf("size: want an integer in [1, %d], got %q", maxDirectiveSize, value)
		}
		s.Size = n
	case "seed":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		s.Seed = n
	case "tag":
		s.Tag = value
	case "reasoning":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("reasoning: want a non-negative integer, got %q", value)
		}
		s.Reasoning = n
	case "behavior":
		switch value {
		case BehaviorExact, BehaviorRepeatTail, BehaviorRestartLine, BehaviorPreamble, BehaviorFence, BehaviorOverlap,
			BehaviorIgnoreOverlap, BehaviorWrap, BehaviorWrapEach, BehaviorChatty, BehaviorRestartTop:
			s.Behavior = value
		default:
			return fmt.Errorf("behavior: unknown behavior %q", value)
		}
	case "faults":
		faults, err := parseFaults(value)
		if err != nil {
			return fmt.Errorf("faults: %w", err)
		}
		s.Faults = faults
	case "tool":
		tool, err := parseTool(value)
		if err != nil {
			return fmt.Errorf("tool: %w", err)
		}
		s.Tool = tool
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

// parseTool parses DEPTH[:MODE].
func parseTool(value string) (*ToolSpec, error) {
	depth, mode, _ := strings.Cut(value, ":")
	d, err := strconv.Atoi(depth)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("%q: want DEPTH[:MODE] with a non-negative integer depth", value)
	}
	switch mode {
	case "":
		mode = ToolOK
	case ToolOK, ToolTruncated, ToolInvalid:
	default:
		return nil, fmt.Errorf("%q: unknown mode %q (want ok, truncated or invalid)", value, mode)
	}
	return &ToolSpec{Depth: d, Mode: mode}, nil
}

func parseFaults(list string) ([]Fault, error) {
	var faults []Fault
	for _, item := range strings.Split(list, ",") {
		if item == "" {
			continue
		}
		f, err := parseFault(item)
		if err != nil {
			return nil, err
		}
		faults = append(faults, f)
	}
	return faults, nil
}

func parseFault(item string) (Fault, error) {
	f := Fault{Times: 1}
	kind, rest, ok := strings.Cut(item, "@")
	if !ok {
		return f, fmt.Errorf("%q: want KIND@DEPTH[:ARG][xN]", item)
	}
	switch kind {
	case Fault429, Fault500, Fault400, FaultContentFilter, FaultFailed, FaultSlow, FaultMalformed, FaultCutoff, FaultBreak:
		f.Kind = kind
	default:
		return f, fmt.Errorf("%q: unknown fault kind %q", item, kind)
	}
	// The xN suffix comes last: strip it before splitting off ARG.
	if k := strings.LastIndexByte(rest, 'x'); k >= 0 {
		if n, err := strconv.Atoi(rest[k+1:]); err == nil && n > 0 {
			f.Times = n
			rest = rest[:k]
		}
	}
	depth, arg, _ := strings.Cut(rest, ":")
	d, err := strconv.Atoi(depth)
	if err != nil || d < 0 {
		return f, fmt.Errorf("%q: depth must be a non-negative integer", item)
	}
	f.Depth = d
	f.Arg = arg
	switch f.Kind {
	case Fault429:
		if arg != "" {
			if _, err := parseSeconds(arg); err != nil {
				return f, fmt.Errorf("%q: retry-after: %w", item, err)
			}
		}
	case FaultSlow:
		if _, err := parseSeconds(arg); err != nil {
			return f, fmt.Errorf("%q: delay: %w", item, err)
		}
	}
	return f, nil
}

// parseSeconds accepts a Go duration ("1500ms", "3s") or a bare number of seconds.
func parseSeconds(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("missing duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}

// reasoningFor resolves the per-call reasoning budget for a model.
func (s Spec) reasoningFor(model string) int {
	if s.Reasoning >= 0 {
		return s.Reasoning
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return reasoningModelBudget
		}
	}
	return 0
}

// faultKey identifies a conversation for fault accounting: two requests with
// the same directive are the same conversation, so a retry sees the fault spent.
func (s Spec) faultKey() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%d|%s|%d|%s", s.Format, s.Size, s.Seed, s.Tag, s.Reasoning, s.Behavior)
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "|%s@%d:%sx%d", f.Kind, f.Depth, f.Arg, f.Times)
	}
	if s.Tool != nil {
		fmt.Fprintf(&b, "|tool=%d:%s", s.Tool.Depth, s.Tool.Mode)
	}
	return b.String()
}
