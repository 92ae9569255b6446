package simulator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestChatStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prompt, model string
		includeUsage        bool
		wantFinish          string
		wantText            bool
	}{
		{"length", "[[sim format=csv size=2000]]", "gpt-4o-mini", true, "length", true},
		{"stop", "[[sim format=csv size=100]]", "gpt-4o-mini", true, "stop", true},
		{"no usage", "[[sim format=csv size=100]]", "gpt-4o-mini", false, "stop", true},
		{"reasoning", "[[sim format=jsonl size=2000]]", "o3", true, "length", true},
		{"reasoning exhausted", "[[sim format=jsonl size=2000 reasoning=500]]", "o3", true, "length", false},
		{"content filter", "[[sim faults=content_filter@0]]", "gpt-4o-mini", true, "content_filter", true},
		{"cutoff", "[[sim faults=cutoff@0]]", "gpt-4o-mini", true, "", true},
	}
	_, client := newTestClient(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _, _ := DocumentFor(tt.prompt)
			params := openai.ChatCompletionNewParams{Model: tt.model, MaxTokens: openai.Int(200),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tt.prompt)}}
			if tt.includeUsage {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			acc := openai.ChatCompletionAccumulator{}
			var content strings.Builder
			chunks, usageChunks := 0, 0
			for stream.Next() {
				c := stream.Current()
				acc.AddChunk(c)
				chunks++
				if len(c.Choices) == 0 {
					usageChunks++
					continue
				}
				content.WriteString(c.Choices[0].Delta.Content)
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			got := content.String()
			if got != doc[:len(got)] || (got != "") != tt.wantText {
				t.Fatalf("streamed text %q", got)
			}
			if chunks < 3 {
				t.Fatalf("%d chunks: want the text in several deltas", chunks)
			}
			cc := acc.ChatCompletion
			if cc.Choices[0].Message.Content != got || cc.Choices[0].FinishReason != tt.wantFinish {
				t.Fatalf("accumulated %q finish %q, want %q", cc.Choices[0].Message.Content, cc.Choices[0].FinishReason, tt.wantFinish)
			}
			if !tt.includeUsage {
				if usageChunks != 0 || cc.Usage.CompletionTokens != 0 {
					t.Fatalf("usage without include_usage: %+v", cc.Usage)
				}
				return
			}
			if usageChunks != 1 || cc.Usage.CompletionTokens == 0 || cc.Usage.CompletionTokens > 200 || cc.Usage.PromptTokens != int64(tokensOf(len(tt.prompt))) {
				t.Fatalf("usage chunks %d usage %+v", usageChunks, cc.Usage)
			}
		})
	}
}

// TestChatStreamFraming reads the raw SSE: every event is a data: line of
// JSON, usage is null until the last chunk, and [DONE] ends the stream.
func TestChatStreamFraming(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	for _, includeUsage := range []bool{true, false} {
		body := `{"model":"m","max_tokens":40,"stream":true,"messages":[{"role":"user","content":"[[sim size=2000]]"}]`
		if includeUsage {
			body += `,"stream_options":{"include_usage":true}`
		}
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body+"}"))
		req.Header.Set("Authorization", "Bearer k")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		var datas []string
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				t.Fatalf("line %q", line)
			}
			datas = append(datas, data)
		}
		res.Body.Close()
		if datas[len(datas)-1] != "[DONE]" {
			t.Fatalf("last event %q", datas[len(datas)-1])
		}
		for i, d := range datas[:len(datas)-1] {
			var c map[string]json.RawMessage
			if err := json.Unmarshal([]byte(d), &c); err != nil || string(c["object"]) != `"chat.completion.chunk"` {
				t.Fatalf("chunk %d %q: %v", i, d, err)
			}
			usage, hasUsage := c["usage"]
			last := i == len(datas)-2
			switch {
			case !includeUsage && hasUsage:
				t.Fatalf("chunk %d has usage without include_usage", i)
			case includeUsage && !last && string(usage) != "null":
				t.Fatalf("chunk %d: usage should be null", i)
			case includeUsage && last && (string(c["choices"]) != "[]" || !hasUsage || string(usage) == "null"):
				t.Fatalf("last chunk %q: want usage and no choices", d)
			}
		}
	}
}

// brokenRead is what a client got from a request whose connection broke.
type brokenRead struct {
	text     string
	err      error
	terminal bool // a finish_reason or terminal event arrived
	id       string
}

// readBroken makes one call: a Responses first call (directive) or
// continuation of prev ("continue"), or a chat call with the directive and
// the history's assistant turns.
func readBroken(t *testing.T, client openai.Client, api string, stream bool, directive string, history []string, prev string, budget int64) brokenRead {
	t.Helper()
	ctx := context.Background()
	var r brokenRead
	if api == apiResponses {
		params := responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(budget)}
		params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(directive)}
		if prev != "" {
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("continue")}
			params.PreviousResponseID = openai.String(prev)
		}
		if !stream {
			resp, err := client.Responses.New(ctx, params)
			if err == nil {
				r.text, r.terminal, r.id = resp.OutputText(), true, resp.ID
			}
			r.err = err
			return r
		}
		s := client.Responses.NewStreaming(ctx, params)
		var b strings.Builder
		for s.Next() {
			ev := s.Current()
			switch ev.Type {
			case "response.created":
				r.id = ev.Response.ID
			case "response.output_text.delta":
				b.WriteString(ev.Delta)
			case "response.completed", "response.incomplete", "response.failed":
				r.terminal = true
			}
		}
		r.text, r.err = b.String(), s.Err()
		return r
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(directive)}
	for _, h := range history {
		msgs = append(msgs, openai.AssistantMessage(h), openai.UserMessage("continue"))
	}
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxTokens: openai.Int(budget), Messages: msgs}
	if !stream {
		cc, err := client.Chat.Completions.New(ctx, params)
		if err == nil {
			r.text, r.terminal = cc.Choices[0].Message.Content, true
		}
		r.err = err
		return r
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var b strings.Builder
	for s.Next() {
		c := s.Current()
		if len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != "" {
				r.terminal = true
			}
		}
	}
	r.text, r.err = b.String(), s.Err()
	return r
}

// TestBreak: a break fault cuts the connection; a stream delivers about half
// the text first. The client then continues from the text it received.
func TestBreak(t *testing.T) {
	t.Parallel()
	for _, api := range []string{apiResponses, apiChat} {
		for _, stream := range []bool{true, false} {
			name := api + "/stream"
			if !stream {
				name = api + "/plain"
			}
			t.Run(name, func(t *testing.T) { testBreak(t, api, stream) })
		}
	}
}

func testBreak(t *testing.T, api string, stream bool) {
	sim, client := newTestClient(t, Config{})
	ctx := context.Background()
	prompt := "[[sim format=markdown size=4000 seed=8 tag=b faults=break@1]]"
	doc, _, _ := DocumentFor(prompt)
	first := readBroken(t, client, api, stream, prompt, nil, "", 100)
	if first.err != nil || !first.terminal {
		t.Fatalf("depth 0: %+v", first)
	}
	a0 := first.text
	var firstID string
	if api == apiResponses {
		r, err := newResponse(ctx, client, prompt, "", 100) // the same first turn, to continue from by id
		if err != nil || r.OutputText() != a0 {
			t.Fatal("depth 0 not reproducible", err)
		}
		firstID = r.ID
	}
	broken := readBroken(t, client, api, stream, prompt, []string{a0}, firstID, 100)
	full, _ := advance(doc, len(a0), 100)
	whole := doc[len(a0):full]
	checkBroken(t, client, api, stream, broken, whole)
	// The client continues from the text that reached it.
	next := continueAfterBreak(t, client, api, prompt, firstID, a0, broken.text)
	got := a0 + broken.text + next
	end, _ := advance(doc, len(a0)+len(broken.text), 100)
	if got != doc[:end] {
		t.Fatalf("after the break: got %q\nwant %q", got[len(a0):], doc[len(a0):end])
	}
	var outcomes []string
	for _, c := range sim.Calls("b") {
		outcomes = append(outcomes, c.Outcome)
	}
	want := "incomplete:max_output_tokens break incomplete:max_output_tokens"
	if api == apiResponses {
		want = "incomplete:max_output_tokens incomplete:max_output_tokens break incomplete:max_output_tokens"
	}
	if strings.Join(outcomes, " ") != want {
		t.Fatalf("outcomes %v", outcomes)
	}
	// The retry of the broken depth succeeds: the fault is spent.
	if r := readBroken(t, client, api, stream, prompt, []string{a0}, firstID, 100); r.err != nil || r.text != whole {
		t.Fatalf("retry: %+v", r)
	}
}

// checkBroken checks a broken turn: a transport error, not an API error;
// no text without a stream, and about half of the turn's text with one; a
// broken Responses stream announced its response but never stored it.
func checkBroken(t *testing.T, client openai.Client, api string, stream bool, broken brokenRead, whole string) {
	t.Helper()
	if broken.err == nil || broken.terminal {
		t.Fatalf("break: %+v", broken)
	}
	var apiErr *openai.Error
	if errors.As(broken.err, &apiErr) {
		t.Fatalf("a broken connection is not an API error: %v", broken.err)
	}
	if !stream && broken.text != "" {
		t.Fatalf("plain request got text %q", broken.text)
	}
	if stream && (broken.text != whole[:len(broken.text)] || len(broken.text) < len(whole)/3 || len(broken.text) > 2*len(whole)/3+4*deltaTokens) {
		t.Fatalf("stream delivered %d of %d bytes: %q", len(broken.text), len(whole), broken.text)
	}
	if api == apiResponses && stream {
		if broken.id == "" {
			t.Fatal("no response.created before the break")
		}
		if _, err := client.Responses.Get(context.Background(), broken.id, responses.ResponseGetParams{}); err == nil {
			t.Fatal("a broken response was stored")
		}
	}
}

// continueAfterBreak makes the next turn after a break, sending back the
// text that arrived, and returns its text.
func continueAfterBreak(t *testing.T, client openai.Client, api, prompt, firstID, a0, received string) string {
	t.Helper()
	if api != apiResponses {
		r := readBroken(t, client, api, false, prompt, []string{a0, received}, "", 100)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.text
	}
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(100),
		PreviousResponseID: openai.String(firstID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(received, responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage("continue", responses.EasyInputMessageRoleUser),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.OutputText()
}

// TestBreakIsAbrupt: the body of a broken stream does not end cleanly, so a
// client reading it sees an unexpected EOF; a malformed stream ends cleanly
// midway. Neither has a terminal event, finish_reason or [DONE].
func TestBreakIsAbrupt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	for _, tt := range []struct {
		path, body, fault string
		wantErr           bool
	}{
		{"/v1/responses", `{"model":"m","max_output_tokens":100,"stream":true,"input":"[[sim size=2000 tag=%[2]s faults=%[1]s]]"}`, "break@0", true},
		{"/v1/responses", `{"model":"m","max_output_tokens":100,"stream":true,"input":"[[sim size=2000 tag=%[2]s faults=%[1]s]]"}`, "malformed@0", false},
		{"/v1/chat/completions", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"[[sim size=2000 tag=%[2]s faults=%[1]s]]"}]}`, "break@0", true},
		{"/v1/chat/completions", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"[[sim size=2000 tag=%[2]s faults=%[1]s]]"}]}`, "malformed@0", false},
	} {
		req, _ := http.NewRequest("POST", srv.URL+tt.path, strings.NewReader(fmt.Sprintf(tt.body, tt.fault, path.Base(tt.path))))
		req.Header.Set("Authorization", "Bearer k")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		body := string(b)
		if (err != nil) != tt.wantErr || !strings.Contains(body, `"delta"`) ||
			strings.Contains(body, "response.incomplete") || strings.Contains(body, `"finish_reason":"length"`) || strings.Contains(body, "[DONE]") {
			t.Fatalf("%s %s: read error %v, body %q", tt.path, tt.fault, err, body)
		}
	}
}

// TestResponsesAssistantInput: a first request whose input ends with an
// assistant message continues it.
func TestResponsesAssistantInput(t *testing.T) {
	t.Parallel()
	sim, client := newTestClient(t, Config{})
	prompt := "[[sim format=jsonl size=3000 tag=ai]]"
	doc, _, _ := DocumentFor(prompt)
	partial := doc[:517]
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4o-mini", MaxOutputTokens: openai.Int(50),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage(partial, responses.EasyInputMessageRoleAssistant),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := advance(doc, len(partial), 50)
	if resp.OutputText() != doc[len(partial):end] {
		t.Fatalf("got %q", resp.OutputText())
	}
	if c := sim.Calls("ai"); len(c) != 1 || c[0].Depth != 1 || c[0].Prompt != prompt {
		t.Fatalf("calls %+v", c)
	}
	if want := int64(tokensOf(len(prompt) + len(partial))); resp.Usage.InputTokens != want {
		t.Fatalf("input tokens %d, want %d", resp.Usage.InputTokens, want)
	}
}
