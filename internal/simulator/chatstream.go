package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
)

var jsonNull = json.RawMessage("null")

// writeChatStream replays a finished completion as the chat.completion.chunk
// events a streaming request would have seen: a first chunk with the role,
// content deltas of a few tokens, the tool call (id and name first, then
// argument deltas), a chunk with the finish_reason, then, with include_usage,
// a chunk with no choices and the usage, and data: [DONE]. When cut is true
// the stream stops after about half the text (content and arguments
// together), with no finish_reason and no [DONE].
func writeChatStream(w http.ResponseWriter, cc *chatCompletion, includeUsage, cut bool) error {
	startSSE(w)

	var werr error
	base := chatChunk{ID: cc.ID, Object: "chat.completion.chunk", Created: cc.Created, Model: cc.Model,
		ServiceTier: cc.ServiceTier, SystemFingerprint: cc.SystemFingerprint}
	if includeUsage {
		base.Usage = jsonNull
	}
	send := func(c chatChunk) {
		if werr != nil {
			return
		}
		data, err := json.Marshal(c)
		if err != nil {
			werr = fmt.Errorf("encoding chunk: %w", err)
			return
		}
		_, werr = fmt.Fprintf(w, "data: %s\n\n", data)
	}
	delta := func(d chatDelta, finish *string) {
		c := base
		c.Choices = []chatChunkChoice{{Delta: d, FinishReason: finish}}
		send(c)
	}

	msg := cc.Choices[0].Message
	text := ""
	if msg.Content != nil {
		text = *msg.Content
	}
	p := pacer{cut: cut, total: len(text)}
	for _, tc := range msg.ToolCalls {
		p.total += len(tc.Function.Arguments)
	}

	empty := ""
	delta(chatDelta{Role: "assistant", Content: &empty}, nil)
	if p.stop() && p.total == 0 {
		flush(w)
		return werr
	}
	if p.send(text, func(d string) { delta(chatDelta{Content: &d}, nil) }) {
		flush(w)
		return werr
	}
	for i, tc := range msg.ToolCalls {
		delta(chatDelta{ToolCalls: []chatToolCallDelta{{Index: i, ID: tc.ID, Type: tc.Type,
			Function: chatFunctionDelta{Name: tc.Function.Name}}}}, nil)
		if p.send(tc.Function.Arguments, func(d string) {
			delta(chatDelta{ToolCalls: []chatToolCallDelta{{Index: i, Function: chatFunctionDelta{Arguments: d}}}}, nil)
		}) {
			flush(w)
			return werr
		}
	}
	if cut {
		flush(w)
		return werr
	}
	if fr := cc.Choices[0].FinishReason; fr != nil {
		delta(chatDelta{}, fr)
	}
	if includeUsage {
		c := base
		c.Choices = []chatChunkChoice{}
		c.Usage = cc.Usage
		send(c)
	}
	if werr == nil {
		_, werr = fmt.Fprint(w, "data: [DONE]\n\n")
	}
	flush(w)
	return werr
}
