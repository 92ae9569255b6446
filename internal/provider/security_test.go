package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// The attacks of an untrusted model endpoint, against the provider over
// real HTTP on loopback: a hostile OpenAI-compatible server speaking the
// wire format, and the provider reading it through openai-go.

// hostileMiB is the size of a hostile body: the 200 MiB.
const hostileMiB = 200

// hostile is a model server on loopback answering with handler; read
// counts the bytes the provider's client read from its bodies, and wrote
// the bytes the server managed to write.
type hostile struct {
	url         string
	read, wrote atomic.Int64
}

func newHostile(t *testing.T, handler func(h *hostile, w http.ResponseWriter, r *http.Request)) *hostile {
	t.Helper()
	h := &hostile{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler(h, w, r) }))
	t.Cleanup(ts.Close)
	h.url = ts.URL + "/v1"
	return h
}

// provider is a provider on h whose client counts what it reads.
func (h *hostile) provider() *OpenAI {
	return New(Config{BaseURL: h.url, APIKey: "sk-test", HTTPClient: &http.Client{Transport: countingTransport{&h.read}}})
}

// write writes head, then piece over and over (flushing), until the client
// goes away or total bytes are out; then tail. It never holds more than a
// piece: the body is streamed, not allocated.
func (h *hostile) write(w http.ResponseWriter, head, piece, tail string, total int64) {
	fl := w.(http.Flusher)
	n, err := io.WriteString(w, head)
	h.wrote.Add(int64(n))
	for err == nil && h.wrote.Load() < total {
		n, err = io.WriteString(w, piece)
		h.wrote.Add(int64(n))
		fl.Flush()
	}
	if err == nil {
		n, _ = io.WriteString(w, tail)
		h.wrote.Add(int64(n))
	}
}

type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if res != nil && res.Body != nil {
		res.Body = &countingBody{ReadCloser: res.Body, n: c.n}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// wantMalformed fails unless err is a malformed-reply model error.
func wantMalformed(t *testing.T, what string, err error) *continuation.CallError {
	t.Helper()
	var ce *continuation.CallError
	if !errors.As(err, &ce) || ce.Type != carryovertype.ErrModel || !ce.Malformed {
		t.Fatalf("%s: want a malformed model error, got %v", what, err)
	}
	return ce
}

// A 200 MiB reply, as one JSON body or as a stream, is refused once it
// passes the cap for the call's budget: the client stops reading near the
// cap (not at 200 MiB), and the reply is a model error, not a chunk.
func TestSecurityOversizedReply(t *testing.T) {
	const max = 4096
	text := strings.Repeat("a", 64<<10)
	cases := []struct {
		name, path string
		stream     bool
		head, tail string
		piece      string
	}{
		{name: "responses body", path: "/v1/responses",
			head:  `{"id":"resp_big","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"`,
			piece: text, tail: `"}]}],"usage":{"input_tokens":1,"output_tokens":1}}`},
		{name: "chat body", path: "/v1/chat/completions",
			head:  `{"id":"cc_big","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`,
			piece: text, tail: `"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`},
		// One event whose data never ends: nothing is dispatched, so only
		// the body's cap can stop it.
		{name: "responses stream, one endless event", path: "/v1/responses", stream: true,
			head: "data: {\"type\":\"response.output_text.delta\",\"delta\":\"", piece: text, tail: "\"}\n\n"},
		{name: "chat stream, endless data lines", path: "/v1/chat/completions", stream: true,
			head: "", piece: "data: " + text + "\n", tail: "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != c.path {
					http.NotFound(w, r)
					return
				}
				if c.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				h.write(w, c.head, c.piece, c.tail, hostileMiB<<20)
			})
			strategy := carryovertype.StrategyStateful
			if strings.Contains(c.path, "chat") {
				strategy = carryovertype.StrategyHistory
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req := continuation.CallRequest{Model: "m", MaxOutputTokens: max, Strategy: strategy, Stream: c.stream,
				Input: continuation.Input{Prompt: "go"}}
			resp, err := h.provider().Call(ctx, req)
			ce := wantMalformed(t, c.name, err)
			if resp.Text != "" {
				t.Fatalf("an oversized reply came back with %d bytes of text", len(resp.Text))
			}
			limit := bodyLimit(max, 1<<10, c.stream)
			if got := h.read.Load(); got > limit+64<<10 {
				t.Fatalf("the client read %d bytes, past the cap %d (%v)", got, limit, ce)
			}
			if h.read.Load() >= hostileMiB<<20 {
				t.Fatalf("the client read the whole %d MiB", hostileMiB)
			}
		})
	}
}

// A background call's poll and cancel are capped for the call's budget too.
func TestSecurityOversizedPoll(t *testing.T) {
	const max = 4096
	h := newHostile(t, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		h.write(w, `{"id":"resp_p","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"`,
			strings.Repeat("a", 64<<10), `"}]}]}`, hostileMiB<<20)
	})
	p := h.provider()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, call := range map[string]func() (continuation.Response, error){
		"poll":   func() (continuation.Response, error) { return p.Poll(ctx, "resp_p", max) },
		"cancel": func() (continuation.Response, error) { return p.Cancel(ctx, "resp_p", max) },
	} {
		h.read.Store(0)
		_, err := call()
		wantMalformed(t, name, err)
		if limit := bodyLimit(max, echoedRequest, false); h.read.Load() > limit+64<<10 {
			t.Fatalf("%s: the client read %d bytes, past the cap %d", name, h.read.Load(), limit)
		}
	}
}

// A stream that never ends is cut at the cap: one of text deltas when its
// text passes the budget's bound, one of events with no text (keep-alive
// pings, progress events) when its body passes the body's cap.
func TestSecurityEndlessStream(t *testing.T) {
	const max = 1024
	cases := []struct {
		name, path, piece string
	}{
		{"responses text deltas", "/v1/responses", `data: {"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 256) + "\"}\n\n"},
		{"chat text deltas", "/v1/chat/completions", `data: {"id":"cc","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 256) + "\"}}]}\n\n"},
		{"chat tool-call argument deltas", "/v1/chat/completions", `data: {"id":"cc","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat("y", 256) + "\"}}]}}]}\n\n"},
		{"responses progress events", "/v1/responses", `data: {"type":"response.in_progress","response":{"id":"resp_e","status":"in_progress"}}` + "\n\n"},
		{"keep-alive comments", "/v1/chat/completions", ": ping\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				h.write(w, "", c.piece, "", 1<<40) // endless: until the client goes
			})
			strategy := carryovertype.StrategyStateful
			if strings.Contains(c.path, "chat") {
				strategy = carryovertype.StrategyHistory
			}
			// The old code read until the call's context ended; a minute
			// here stands in for the worker's ten.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := h.provider().Call(ctx, continuation.CallRequest{Model: "m", MaxOutputTokens: max, Strategy: strategy,
				Stream: true, Input: continuation.Input{Prompt: "go"}})
			wantMalformed(t, c.name, err)
			if limit := bodyLimit(max, 1<<10, true); h.read.Load() > limit+64<<10 {
				t.Fatalf("the client read %d bytes, past the cap %d", h.read.Load(), limit)
			}
		})
	}
}

// A streamed tool-call piece with a hostile index — far ahead, negative, or
// past the most calls a reply may have — is a malformed reply: no panic,
// no allocation for the index.
func TestSecurityToolCallIndex(t *testing.T) {
	chunk := func(s string) string {
		return `data: {"id":"cc_t","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[` + s + `]}}]}` + "\n\n"
	}
	first := chunk(`{"index":0,"id":"call_a","type":"function","function":{"name":"get","arguments":"{}"}}`)
	many := ""
	for i := 1; i <= continuation.MaxToolCalls; i++ {
		many += chunk(fmt.Sprintf(`{"index":%d,"id":"call_%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i, i))
	}
	end := `data: {"id":"cc_t","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	cases := []struct{ name, body string }{
		{"index 3000000", first + chunk(`{"index":3000000,"function":{"arguments":"x"}}`) + end},
		{"index -1", first + chunk(`{"index":-1,"function":{"arguments":"x"}}`) + end},
		{"index -1 first", chunk(`{"index":-1,"function":{"arguments":"x"}}`) + end},
		{"129 calls", first + many + end},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t, func(h *hostile, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, c.body)
			})
			resp, err := h.provider().Call(context.Background(), continuation.CallRequest{Model: "m", MaxOutputTokens: 1024,
				Strategy: carryovertype.StrategyHistory, Stream: true, Input: continuation.Input{Prompt: "go"}})
			wantMalformed(t, c.name, err)
			if len(resp.ToolCalls) != 0 {
				t.Fatalf("a malformed reply came back with %d tool calls", len(resp.ToolCalls))
			}
		})
	}
	// The bound is not in the way of an honest reply.
	h := newHostile(t, func(h *hostile, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, first+chunk(`{"index":1,"id":"call_b","type":"function","function":{"name":"put","arguments":"{}"}}`)+end)
	})
	resp, err := h.provider().Call(context.Background(), continuation.CallRequest{Model: "m", MaxOutputTokens: 1024,
		Strategy: carryovertype.StrategyHistory, Stream: true, Input: continuation.Input{Prompt: "go"}})
	if err != nil || len(resp.ToolCalls) != 2 {
		t.Fatalf("two honest tool calls: %+v %v", resp, err)
	}
}

// A tool call streamed one byte at a time costs in proportion to its
// length, not its square: before, each piece copied the arguments so far
// (60,000 pieces allocated about 1.8 GB; now a few hundred MB, nearly all
// of it decoding the events).
func TestSecurityToolCallPieces(t *testing.T) {
	const pieces = 60_000
	var b strings.Builder
	b.WriteString(`data: {"id":"cc","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"f","arguments":""}}]}}]}` + "\n\n")
	piece := `data: {"id":"cc","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}` + "\n\n"
	for range pieces {
		b.WriteString(piece)
	}
	b.WriteString(`data: {"id":"cc","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n")
	body := b.String()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := readChatStream(&http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body))}, time.Now(), 1<<20)
	runtime.ReadMemStats(&after)
	if err != nil || len(r.ToolCalls) != 1 || len(r.ToolCalls[0].Arguments) != pieces {
		t.Fatalf("%v, %d calls", err, len(r.ToolCalls))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<30 {
		t.Fatalf("gathering %d one-byte pieces allocated %d MB", pieces, alloc>>20)
	} else {
		t.Logf("allocated %d MB", alloc>>20)
	}
}
