package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

var (
	searchParams   = map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}, "page": map[string]any{"type": "integer"}}}
	responsesTools = []responses.ToolUnionParam{
		{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}, // not a function: skipped
		{OfFunction: &responses.FunctionToolParam{Name: "search", Parameters: searchParams, Strict: openai.Bool(false)}},
		{OfFunction: &responses.FunctionToolParam{Name: "fetch", Parameters: searchParams, Strict: openai.Bool(false)}},
	}
	chatTools = []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "search", Parameters: searchParams}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "fetch", Parameters: searchParams}),
	}
)

// toolResult is what a client made of one call, whichever API and transport.
type toolResult struct {
	text     string
	finish   string // normalized: completed, tool_calls, length, incomplete:<reason>
	name     string
	args     string
	hasCall  bool
	itemDone string // Responses function_call item status
	output   int64
}

// callWithTools makes one depth-0 request offering tools (unless noTools)
// and reads it back, streamed or not.
func callWithTools(t *testing.T, client openai.Client, api string, stream, noTools bool, prompt string, budget int64) toolResult {
	t.Helper()
	if api == apiResponses {
		return responsesWithTools(t, client, stream, noTools, prompt, budget)
	}
	return chatWithTools(t, client, stream, noTools, prompt, budget)
}

// responsesWithTools is callWithTools over the Responses API.
func responsesWithTools(t *testing.T, client openai.Client, stream, noTools bool, prompt string, budget int64) toolResult {
	t.Helper()
	params := responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(budget),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	if !noTools {
		params.Tools = responsesTools
	}
	var resp *responses.Response
	if stream {
		resp = readResponsesStream(t, client.Responses.NewStreaming(context.Background(), params))
	} else {
		var err error
		if resp, err = client.Responses.New(context.Background(), params); err != nil {
			t.Fatal(err)
		}
	}
	var r toolResult
	r.text, r.finish, r.output = resp.OutputText(), string(resp.Status), resp.Usage.OutputTokens
	if resp.Status == "incomplete" {
		r.finish += ":" + resp.IncompleteDetails.Reason
	}
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			if r.hasCall || !strings.HasPrefix(fc.ID, "fc_") || !strings.HasPrefix(fc.CallID, "call_") {
				t.Fatalf("function call item %+v", fc)
			}
			r.hasCall, r.name, r.args, r.itemDone = true, fc.Name, fc.Arguments, string(fc.Status)
		}
	}
	if len(resp.Tools) != len(params.Tools) {
		t.Fatalf("response echoes %d tools, want %d", len(resp.Tools), len(params.Tools))
	}
	return r
}

// readResponsesStream reads a Responses stream to its terminal event,
// checking that the deltas add up to the final text and arguments.
func readResponsesStream(t *testing.T, s *ssestream.Stream[responses.ResponseStreamEventUnion]) *responses.Response {
	t.Helper()
	var resp *responses.Response
	var text, args strings.Builder
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			if ev.Arguments != args.String() {
				t.Fatalf("arguments.done %q, deltas %q", ev.Arguments, args.String())
			}
		case "response.completed", "response.incomplete":
			r := ev.Response
			resp = &r
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if resp == nil {
		t.Fatal("no terminal event")
	}
	if text.String() != resp.OutputText() {
		t.Fatalf("text deltas %q, final %q", text.String(), resp.OutputText())
	}
	return resp
}

// chatWithTools is callWithTools over Chat Completions.
func chatWithTools(t *testing.T, client openai.Client, stream, noTools bool, prompt string, budget int64) toolResult {
	t.Helper()
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxCompletionTokens: openai.Int(budget),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
	if !noTools {
		params.Tools = chatTools
	}
	var cc openai.ChatCompletion
	if stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		cc = acc.ChatCompletion
	} else {
		c, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		cc = *c
	}
	var r toolResult
	msg := cc.Choices[0].Message
	r.text, r.finish, r.output = msg.Content, cc.Choices[0].FinishReason, cc.Usage.CompletionTokens
	if len(msg.ToolCalls) > 1 {
		t.Fatalf("%d tool calls", len(msg.ToolCalls))
	}
	if len(msg.ToolCalls) == 1 {
		tc := msg.ToolCalls[0]
		if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
			t.Fatalf("tool call %+v", tc)
		}
		r.hasCall, r.name, r.args = true, tc.Function.Name, tc.Function.Arguments
	}
	return r
}

// checkToolArguments checks a call's arguments by its mode: invalid ones
// are the complete arguments with a stray comma; complete ones decode and
// follow document text; truncated ones are a prefix that used the budget.
func checkToolArguments(t *testing.T, r toolResult, mode string, complete bool, budget int64, full string) {
	t.Helper()
	switch {
	case mode == "invalid":
		if !strings.HasSuffix(r.args, ",}") || r.args[:len(r.args)-2] != full[:len(full)-1] {
			t.Fatalf("invalid arguments %q", r.args)
		}
	case complete:
		var a struct {
			Query string `json:"query"`
			Page  int    `json:"page"`
		}
		if err := json.Unmarshal([]byte(r.args), &a); err != nil || a.Query == "" || a.Page != 1 || tokens(r.args) < 30 {
			t.Fatalf("arguments %q: %v", r.args, err)
		}
		if len(r.text) == 0 {
			t.Fatal("no document text before the call")
		}
	default:
		if len(r.args) >= len(full) || r.args != full[:len(r.args)] || r.output != budget {
			t.Fatalf("truncated arguments %q (%d tokens of %d)", r.args, r.output, budget)
		}
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode         string
		budget       int64
		wantFinish   map[string]string // by API
		wantComplete bool
		wantValid    bool
	}{
		{"ok", 100, map[string]string{apiResponses: "completed", apiChat: "tool_calls"}, true, true},
		{"invalid", 100, map[string]string{apiResponses: "completed", apiChat: "tool_calls"}, true, false},
		{"truncated", 100, map[string]string{apiResponses: "incomplete:max_output_tokens", apiChat: "length"}, false, false},
		// ok with a budget too small for the arguments: cut like truncated.
		{"ok", 20, map[string]string{apiResponses: "incomplete:max_output_tokens", apiChat: "length"}, false, false},
	}
	for _, api := range []string{apiResponses, apiChat} {
		for _, stream := range []bool{false, true} {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s/stream=%v/%s/%d", api, stream, tt.mode, tt.budget), func(t *testing.T) {
					sim, client := newTestClient(t, Config{})
					prompt := "[[sim format=csv size=3000 seed=5 tag=tc tool=0:" + tt.mode + "]]"
					doc, spec, _ := DocumentFor(prompt)
					r := callWithTools(t, client, api, stream, false, prompt, tt.budget)
					full := toolArguments(spec, 0, ToolOK)
					switch {
					case !r.hasCall || r.name != "search":
						t.Fatalf("call %+v", r)
					case r.finish != tt.wantFinish[api]:
						t.Fatalf("finish %q, want %q", r.finish, tt.wantFinish[api])
					case r.text != doc[:len(r.text)]:
						t.Fatalf("text %q is not the document's start", r.text)
					case json.Valid([]byte(r.args)) != tt.wantValid:
						t.Fatalf("arguments %q: valid %v", r.args, !tt.wantValid)
					case r.output > tt.budget:
						t.Fatalf("%d output tokens over %d", r.output, tt.budget)
					}
					if api == apiResponses && (r.itemDone == "completed") != tt.wantComplete {
						t.Fatalf("function_call item status %q", r.itemDone)
					}
					checkToolArguments(t, r, tt.mode, tt.wantComplete, tt.budget, full)
					want := "truncated"
					if tt.wantComplete {
						want = "complete"
					}
					if c := sim.Calls("tc"); len(c) != 1 || c[0].ToolCall != want || c[0].Stream != stream {
						t.Fatalf("calls = %+v", c)
					}
				})
			}
		}
	}
}

// TestToolCallNeedsTools: the model cannot call a function it was not
// given, and calls only at the directive's depth.
func TestToolCallNeedsTools(t *testing.T) {
	t.Parallel()
	for _, api := range []string{apiResponses, apiChat} {
		t.Run(api, func(t *testing.T) {
			_, client := newTestClient(t, Config{})
			r := callWithTools(t, client, api, false, true, "[[sim format=csv size=3000 tool=0]]", 100)
			if r.hasCall || r.output != 100 || (r.finish != "length" && r.finish != "incomplete:max_output_tokens") {
				t.Fatalf("no tools offered, got %+v", r)
			}
			r = callWithTools(t, client, api, false, false, "[[sim format=csv size=3000 tool=1]]", 100)
			if r.hasCall {
				t.Fatalf("call at depth 0 for tool=1: %+v", r)
			}
		})
	}
}

// TestToolCallAtDepth: a continuation at the tool depth writes the next
// document bytes and then calls; the call's page is the depth + 1.
func TestToolCallAtDepth(t *testing.T) {
	t.Parallel()
	_, client := newTestClient(t, Config{})
	ctx := context.Background()
	prompt := "[[sim format=text size=3000 tool=1]]"
	doc, _, _ := DocumentFor(prompt)
	r0, err := newResponse(ctx, client, prompt, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(200),
		PreviousResponseID: openai.String(r0.ID), Tools: responsesTools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("continue")}})
	if err != nil {
		t.Fatal(err)
	}
	got := r0.OutputText() + r1.OutputText()
	if r1.Status != "completed" || got != doc[:len(got)] || len(r1.Output) != 2 || r1.Output[1].Name != "search" ||
		!strings.HasSuffix(r1.Output[1].Arguments.OfString, `"page":2}`) {
		t.Fatalf("status %s output %+v", r1.Status, r1.Output)
	}
}
