package simulator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// converse runs a conversation through produce alone, each turn continuing
// where the previous one left the document (as previous_response_id does),
// every call with the same budget, and returns its turns and where each
// started.
func converse(t *testing.T, spec Spec, budget int) (turns []turn, offsets []int) {
	t.Helper()
	doc := Document(spec)
	offset := 0
	for depth := 0; ; depth++ {
		if depth == 2000 {
			t.Fatal("the conversation never finished")
		}
		tr := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: budget})
		turns, offsets = append(turns, tr), append(offsets, offset)
		if tr.status == statusCompleted {
			return turns, offsets
		}
		offset = tr.end
	}
}

// wantRestartStart is the test's own reading of where a restart_top
// continuation at off starts: the earliest of the document's start and its
// line starts up to off's line from which the reproduction fits in half
// the budget; off itself when none does.
func wantRestartStart(doc string, off, budget int) int {
	starts := []int{0}
	for i := 0; i < off; i++ {
		if doc[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	for _, s := range starts {
		if tokens(doc[s:off]) <= budget/2 {
			return s
		}
	}
	return off
}

// TestWholeAnswerHabits runs whole conversations under each new behaviour
// and checks every turn: what it writes around its stretch of the document
// (the opening and closing fence, the remarks, the reproduced start), that
// the stretches follow one another to the document's end, and that every
// byte written is paid for within the budget.
func TestWholeAnswerHabits(t *testing.T) {
	t.Parallel()
	fenced, chatty, restartTop := fencedExtras, chattyExtras, restartTopExtras
	tests := []struct {
		behavior, format string
		seed             int64
		budget           int
		extras           habitExtras
	}{
		{"wrap", "json", 1, 5000, fenced("json", false)}, // a single chunk, fenced whole
		{"wrap", "csv", 1, 5000, fenced("csv", false)},
		{"wrap", "csv", 2, 120, fenced("csv", false)},
		{"wrap", "jsonl", 1, 120, fenced("json", false)},
		{"wrap", "jsonl", 2, 120, fenced("jsonl", false)},
		{"wrap", "code", 3, 300, fenced("go", false)},
		{"wrap", "diff", 3, 120, fenced("diff", false)},
		{"wrap", "markdown", 1, 120, fenced("md", false)},
		{"wrap", "markdown", 2, 120, fenced("markdown", false)},
		{"wrap", "text", 1, 120, fenced("", false)}, // text is never fenced
		{"wrap_each", "json", 4, 120, fenced("json", true)},
		{"wrap_each", "csv", 1, 5000, fenced("csv", true)},
		{"wrap_each", "markdown", 2, 300, fenced("markdown", true)},
		{"wrap_each", "text", 2, 120, fenced("", true)},
		{"chatty", "csv", 1, 120, chatty},
		{"chatty", "json", 2, 300, chatty},
		{"chatty", "text", 3, 120, chatty},
		{"chatty", "jsonl", 4, 5000, chatty}, // a single chunk still ends with a remark
		{"restart_top", "csv", 1, 120, restartTop},
		{"restart_top", "json", 2, 300, restartTop},
		{"restart_top", "text", 1, 120, restartTop}, // lines longer than half the budget: nothing reproduced
		{"restart_top", "code", 5, 60, restartTop},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/seed=%d/budget=%d", tt.behavior, tt.format, tt.seed, tt.budget), func(t *testing.T) {
			spec, ok := ParseSpec(fmt.Sprintf("[[sim format=%s size=3000 seed=%d behavior=%s]]", tt.format, tt.seed, tt.behavior))
			if !ok {
				t.Fatal("bad directive")
			}
			doc := Document(spec)
			turns, offsets := converse(t, spec, tt.budget)
			if tt.budget == 5000 && len(turns) != 1 {
				t.Fatalf("%d turns, want the whole answer in one", len(turns))
			}
			for depth, tr := range turns {
				pre, post := tt.extras(doc, spec, offsets[depth], depth, tt.budget)
				checkHabitTurn(t, depth, tr, pre, doc[offsets[depth]:tr.end], post, tt.budget)
			}
			if last := turns[len(turns)-1]; last.end != len(doc) {
				t.Fatalf("finished at %d of %d", last.end, len(doc))
			}
			again, _ := converse(t, spec, tt.budget)
			if !slices.EqualFunc(turns, again, func(a, b turn) bool { return a.text == b.text }) {
				t.Fatal("the same conversation wrote different turns")
			}
		})
	}
}

// habitExtras is what a turn at off, depth writes before its stretch of the
// document, and after it when it finishes the document.
type habitExtras func(doc string, spec Spec, off, depth, budget int) (pre, post string)

// fencedExtras: a fence tagged tag opens the first turn (each turn, if
// each) and closes the last; no fence at all for an empty tag.
func fencedExtras(tag string, each bool) habitExtras {
	return func(doc string, spec Spec, off, depth, budget int) (string, string) {
		if tag == "" {
			return "", ""
		}
		if off == 0 || each {
			return "```" + tag + "\n", "```\n"
		}
		return "", "```\n"
	}
}

// chattyExtras: a preamble opens every continuation, a trailer ends the answer.
func chattyExtras(doc string, spec Spec, off, depth, budget int) (pre, post string) {
	if depth > 0 {
		pre = chattyPreamble(spec.Seed, depth)
	}
	return pre, chattyTrailer(spec.Seed, depth)
}

// restartTopExtras: a continuation first repeats the lines before off.
func restartTopExtras(doc string, spec Spec, off, depth, budget int) (string, string) {
	if depth == 0 {
		return "", ""
	}
	return doc[wantRestartStart(doc, off, budget):off], ""
}

// checkHabitTurn checks the turn at depth: it wrote pre and its stretch of
// the document, then post if it finished the answer, and was paid for
// exactly what it wrote within budget.
func checkHabitTurn(t *testing.T, depth int, tr turn, pre, stretch, post string, budget int) {
	t.Helper()
	finished := tr.status == statusCompleted
	want, paid := pre+stretch, tokens(pre)+tokens(stretch)
	if finished {
		want, paid = want+post, paid+tokens(post)
	}
	if tr.text != want {
		t.Fatalf("depth %d (%s): got  %q\nwant %q", depth, tr.status, tr.text, want)
	}
	if tr.outputTokens != paid {
		t.Fatalf("depth %d: %d output tokens for %d written", depth, tr.outputTokens, paid)
	}
	// An unfinished turn uses its whole budget, unless it stopped short of
	// the document's end for want of room for the post.
	if !finished && tr.outputTokens != budget && tr.outputTokens != budget-tokens(post) {
		t.Fatalf("depth %d: %d output tokens of a %d budget", depth, tr.outputTokens, budget)
	}
	if tr.outputTokens > budget {
		t.Fatalf("depth %d: %d output tokens over the budget %d", depth, tr.outputTokens, budget)
	}
}

// TestChattyRemarks: the remarks are many and varied in how they end, and
// the draws by seed and depth are deterministic and reach most of them.
func TestChattyRemarks(t *testing.T) {
	t.Parallel()
	ends := func(s string) bool {
		return strings.HasSuffix(s, ":") || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") ||
			strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") || strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")
	}
	tests := []struct {
		name    string
		list    []string
		min     int
		draw    func(seed int64, depth int) string
		remark  func(drawn string) (remark, sep string)
		minSeen int
		seps    int // how many separators the draws use
	}{
		{"preambles", chattyPreambles, 12, chattyPreamble, func(d string) (string, string) {
			r := strings.TrimRight(d, "\n")
			return r, d[len(r):]
		}, 10, 2},
		{"trailers", chattyTrailers, 8, chattyTrailer, func(d string) (string, string) {
			r := strings.TrimLeft(d, "\n")
			return strings.TrimSuffix(r, "\n"), d[:len(d)-len(r)]
		}, 7, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.list) < tt.min {
				t.Fatalf("%d remarks, want at least %d", len(tt.list), tt.min)
			}
			for _, r := range tt.list {
				if !ends(r) || strings.Contains(r, "\n") || strings.Contains(r, "```") {
					t.Errorf("remark %q: want one line ending in ':', '.', '!' or bracketed", r)
				}
			}
			seen, seps := map[string]bool{}, map[string]bool{}
			for seed := int64(1); seed <= 20; seed++ {
				for depth := 1; depth <= 5; depth++ {
					d := tt.draw(seed, depth)
					if d != tt.draw(seed, depth) {
						t.Fatalf("seed %d depth %d: two draws differ", seed, depth)
					}
					r, sep := tt.remark(d)
					if !slices.Contains(tt.list, r) || sep != "\n" && sep != "\n\n" {
						t.Fatalf("seed %d depth %d: drew %q", seed, depth, d)
					}
					seen[r], seps[sep] = true, true
				}
			}
			if len(seen) < tt.minSeen || len(seps) != tt.seps {
				t.Fatalf("100 draws reached %d remarks and %d separators", len(seen), len(seps))
			}
		})
	}
}

func TestRestartTopStart(t *testing.T) {
	t.Parallel()
	// Lines of 8 bytes: 2 tokens each.
	doc := "line 01\nline 02\nline 03\nline 04\nline 05\n"
	tests := []struct {
		name          string
		offset, limit int
		want          int
	}{
		{"all fits: from the top", 20, 5, 0},
		{"all fits exactly", 24, 6, 0},
		{"two lines and the cut one", 36, 5, 16},    // "line 03\nline 04\nline" is 20 bytes, 5 tokens
		{"the cut line alone", 36, 2, 32},           // "line" is 1 token; one more line is 3
		{"cut at a line start", 32, 4, 16},          // two whole lines
		{"cut at a line start, no room", 32, 1, 32}, // nothing to reproduce
		{"not even the cut line fits", 38, 1, 38},   // "line 0" is 2 tokens
		{"no budget", 38, 0, 38},
	}
	for _, tt := range tests {
		if got := restartTopStart(doc, tt.offset, tt.limit); got != tt.want {
			t.Errorf("%s: restartTopStart(%d, %d) = %d, want %d", tt.name, tt.offset, tt.limit, got, tt.want)
		}
		if got := wantRestartStart(doc, tt.offset, 2*tt.limit); got != tt.want {
			t.Errorf("%s: the test's own reading gives %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestFollowHabits: an assistant turn sent back with the new habits'
// envelope is followed as the model wrote it.
func TestFollowHabits(t *testing.T) {
	t.Parallel()
	doc := "alpha line one\nbeta line two\ngamma line three\ndelta line four\n"
	off := strings.Index(doc, "gamma") + 3  // mid-line: "gam|ma"
	late := strings.Index(doc, "delta") + 3 // further than a repeated tail reaches back
	tests := []struct {
		name, behavior, text string
		offset, end          int
		matched              bool
	}{
		{"tagged fence, first turn", "wrap", "```csv\nalpha line one\nbe", 0, 17, true},
		{"tagged fence, whole answer", "wrap", "```json\n" + doc + "```\n", 0, len(doc), true},
		{"unknown tag", "wrap", "```python\nalpha", 0, 0, false},
		{"closing fence", "wrap", "ma line three\ndelta line four\n```\n", off, len(doc), true},
		{"reopened and closed", "wrap_each", "```md\nma line three\ndelta line four\n```\n", off, len(doc), true},
		{"preamble, blank line", "chatty", "Sure! Here's the rest:\n\nma line", off, off + 7, true},
		{"preamble, line break", "chatty", "(continued)\nma line", off, off + 7, true},
		{"preamble and trailer", "chatty", "Below is what was left.\nma line three\ndelta line four\n\nI hope this helps!\n", off, len(doc), true},
		{"trailer, two blank lines", "chatty", "ma line three\ndelta line four\n\n\nThis completes the output.\n", off, len(doc), true},
		{"unknown preamble", "chatty", "Here you go:\nma line", off, off, false},
		{"restart from the top", "restart_top", doc[:late] + "ta line", late, late + 7, true},
		{"restart from an earlier line", "restart_top", "beta line two\ngamma line three\ndelta l", late, late + 4, true},
		{"restart from the cut line", "restart_top", "delta l", late, late + 4, true},
		{"restart that leaves the document", "restart_top", "beta line two\ngamma line three\ndelta lime", late, late + 5, false},
		// Under another behaviour a turn that starts the document over left
		// it (a strict schema's restart): it is not followed.
		{"restart under another behavior", "exact", doc[:late] + "ta line", late, late, false},
	}
	for _, tt := range tests {
		end, matched := follow(doc, tt.offset, tt.text, tt.behavior)
		if end != tt.end || matched != tt.matched {
			t.Errorf("%s: follow = %d %v, want %d %v", tt.name, end, matched, tt.end, tt.matched)
		}
	}
}

// TestHabitsOverTheWire: through both APIs, a conversation under each new
// behaviour writes exactly the turns the model's reference conversation
// does. Over chat the model reads its own earlier turns back from the
// history, envelope and all, so this is also how it finds its place.
func TestHabitsOverTheWire(t *testing.T) {
	t.Parallel()
	const budget = 120
	for _, api := range []string{apiResponses, apiChat} {
		for _, behavior := range []string{"wrap", "wrap_each", "chatty", "restart_top"} {
			t.Run(api+"/"+behavior, func(t *testing.T) {
				_, client := newTestClient(t, Config{})
				ctx := context.Background()
				directive := "[[sim format=csv size=2500 seed=6 behavior=" + behavior + "]]"
				spec, _ := ParseSpec(directive)
				ref, _ := converse(t, spec, budget)
				msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(directive)}
				prev := ""
				for depth, want := range ref {
					var text string
					var out int64
					if api == apiResponses {
						input := directive
						if depth > 0 {
							input = "continue"
						}
						r, err := newResponse(ctx, client, input, prev, budget)
						if err != nil {
							t.Fatal(err)
						}
						text, out, prev = r.OutputText(), r.Usage.OutputTokens, r.ID
					} else {
						cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: openai.Int(budget)})
						if err != nil {
							t.Fatal(err)
						}
						text, out = cc.Choices[0].Message.Content, cc.Usage.CompletionTokens
						msgs = append(msgs, openai.AssistantMessage(text), openai.UserMessage("continue"))
					}
					if text != want.text || out != int64(want.outputTokens) {
						t.Fatalf("depth %d: got %q (%d tokens)\nwant %q (%d tokens)", depth, text, out, want.text, want.outputTokens)
					}
				}
			})
		}
	}
}

// TestWrapUnderStrictSchema: a model held to a strict schema writes JSON
// only, so wrap puts no fence around it; without the schema it does.
func TestWrapUnderStrictSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, want string // want: what the answer starts with
	}{
		{"", "```json\n{"},
		{"json_schema", "```json\n{"},
		{"strict", "{"},
	}
	for _, api := range []string{apiResponses, apiChat} {
		for _, tt := range tests {
			t.Run(api+"/"+tt.kind, func(t *testing.T) {
				_, client := newTestClient(t, Config{})
				text, _ := formatted(t, client, api, tt.kind, "[[sim format=json size=300 seed=3 behavior=wrap]]", nil, "", 2000)
				doc, _, _ := DocumentFor("[[sim format=json size=300 seed=3]]")
				if !strings.HasPrefix(text, tt.want) || strings.TrimSuffix(strings.TrimPrefix(text, "```json\n"), "```\n") != doc {
					t.Fatalf("got %q", text)
				}
			})
		}
	}
}

// TestFinishingExtrasNeedRoom: a turn with room for the rest of the
// document but not for what the behaviour writes after it (a closing
// fence, a closing remark) stops short of the document's end by as much,
// as a turn cut by the limit would have, and the next turn finishes.
func TestFinishingExtrasNeedRoom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behavior string
		post     func(spec Spec) string // what the first turn would have ended with
		// second is the next turn, given the rest of the document.
		second func(spec Spec, rest string) string
	}{
		{"wrap", func(Spec) string { return "```\n" }, func(_ Spec, rest string) string { return rest + "```\n" }},
		{"wrap_each", func(Spec) string { return "```\n" }, func(_ Spec, rest string) string { return "```csv\n" + rest + "```\n" }},
		{"chatty", func(s Spec) string { return chattyTrailer(s.Seed, 0) }, func(s Spec, rest string) string {
			return chattyPreamble(s.Seed, 1) + rest + chattyTrailer(s.Seed, 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.behavior, func(t *testing.T) {
			spec, _ := ParseSpec("[[sim format=csv size=400 seed=8 behavior=" + tt.behavior + "]]")
			doc := Document(spec)
			pre := ""
			if tt.behavior != "chatty" {
				pre = "```csv\n"
			}
			budget := tokens(pre) + tokens(doc) // the whole document, and no more
			first := produce(turnInput{doc: doc, spec: spec, depth: 0, maxTokens: budget})
			want, _ := advance(doc, 0, tokens(doc)-tokens(tt.post(spec)))
			if first.status != statusIncomplete || first.end != want || first.text != pre+doc[:want] ||
				first.outputTokens != budget-tokens(tt.post(spec)) {
				t.Fatalf("first turn: %s, ended at %d (want %d), %d tokens, text %q", first.status, first.end, want, first.outputTokens, first.text)
			}
			second := produce(turnInput{doc: doc, spec: spec, offset: first.end, depth: 1, maxTokens: budget})
			if second.status != statusCompleted || second.end != len(doc) || second.text != tt.second(spec, doc[first.end:]) {
				t.Fatalf("second turn: %s, ended at %d of %d: %q", second.status, second.end, len(doc), second.text)
			}
		})
	}
}

// TestRestartTopFromTheStart: a continuation whose budget is more than
// twice what the conversation has written reproduces all of it, from the
// document's start. Under a constant budget that never happens (the first
// turn fills the budget), so the reproduction starts at an earlier line.
func TestRestartTopFromTheStart(t *testing.T) {
	t.Parallel()
	spec, _ := ParseSpec("[[sim format=csv size=3000 seed=2 behavior=restart_top]]")
	doc := Document(spec)
	tests := []struct {
		first, second int // budgets
		start         int // where the second turn's reproduction starts; -1 for a line start after 0
	}{
		{40, 200, 0},
		{40, 81, 0},
		{40, 80, 0},
		{40, 79, -1},
		{100, 100, -1},
	}
	for _, tt := range tests {
		t0 := produce(turnInput{doc: doc, spec: spec, depth: 0, maxTokens: tt.first})
		t1 := produce(turnInput{doc: doc, spec: spec, offset: t0.end, depth: 1, maxTokens: tt.second})
		pre := t1.text[:len(t1.text)-(t1.end-t0.end)]
		start := t0.end - len(pre)
		if doc[start:t0.end] != pre || t1.text[len(pre):] != doc[t0.end:t1.end] || t1.outputTokens != tt.second {
			t.Fatalf("%d then %d: second turn %q (%d tokens)", tt.first, tt.second, t1.text, t1.outputTokens)
		}
		if tt.start == 0 && start != 0 || tt.start < 0 && (start == 0 || doc[start-1] != '\n') {
			t.Errorf("%d then %d: reproduction starts at %d", tt.first, tt.second, start)
		}
		if tokens(pre) > tt.second/2 {
			t.Errorf("%d then %d: %d tokens reproduced, more than half the budget", tt.first, tt.second, tokens(pre))
		}
	}
}

// TestHabitsUnderPrefill: a prefilled continuation goes on in place, so it
// opens nothing (no reopened fence, no remark, no reproduction), but the
// answer it finishes ends as the model ends its answers.
func TestHabitsUnderPrefill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behavior string
		want     func(doc, last string) bool // the whole message, given its last turn
	}{
		{"wrap", func(doc, m string) bool { return m == "```json\n"+doc+"```\n" }},
		{"wrap_each", func(doc, m string) bool { return m == "```json\n"+doc+"```\n" }},
		{"chatty", func(doc, m string) bool {
			rest, ok := strings.CutPrefix(m, doc)
			return ok && slices.Contains(chattyTrailers, strings.Trim(rest, "\n"))
		}},
		{"restart_top", func(doc, m string) bool { return m == doc }},
	}
	for _, tt := range tests {
		t.Run(tt.behavior, func(t *testing.T) {
			_, client := newTestClient(t, Config{})
			prompt := "[[sim format=jsonl size=800 seed=1 behavior=" + tt.behavior + "]]"
			doc, _, _ := DocumentFor(prompt)
			partial := ""
			for i := 0; ; i++ {
				if i == 100 {
					t.Fatal("never finished")
				}
				msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}
				var opts []option.RequestOption
				if partial != "" {
					msgs = append(msgs, openai.AssistantMessage(partial))
					opts = append(opts, option.WithJSONSet("continue_final_message", true))
				}
				cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: "gpt-4o-mini", Messages: msgs, MaxCompletionTokens: openai.Int(64)}, opts...)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				partial += cc.Choices[0].Message.Content
				if cc.Choices[0].FinishReason == "stop" {
					break
				}
			}
			if !tt.want(doc, partial) {
				t.Fatalf("got %q", partial)
			}
		})
	}
}
