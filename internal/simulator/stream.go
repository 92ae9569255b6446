package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// deltaTokens is how many simulated tokens each response.output_text.delta
// event carries; real servers send one or a few tokens per event.
const deltaTokens = 8

// streamWriter emits Server-Sent Events with the Responses API's event types
// and a running sequence_number.
type streamWriter struct {
	w   http.ResponseWriter
	seq int
	err error
}

// startSSE starts a Server-Sent Events reply.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// pacer sends a stream's texts (message text and tool call arguments) in
// deltas of deltaTokens tokens and, when the stream is cut, tells when about
// half of them all has gone out.
type pacer struct {
	cut       bool
	total     int // bytes of all the texts
	delivered int // bytes sent so far
}

// stop reports whether a cut is due.
func (p *pacer) stop() bool { return p.cut && p.delivered >= p.total/2 }

// send emits text in token-sized deltas and reports whether the stream must
// stop after the last one it emitted.
func (p *pacer) send(text string, emit func(delta string)) (stop bool) {
	for off := 0; off < len(text); {
		end, _ := advance(text, off, deltaTokens)
		emit(text[off:end])
		p.delivered += end - off
		off = end
		if p.stop() {
			return true
		}
	}
	return false
}

func (sw *streamWriter) event(typ string, fields map[string]any) {
	if sw.err != nil {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = sw.seq
	sw.seq++
	data, err := json.Marshal(fields)
	if err != nil {
		sw.err = fmt.Errorf("encoding %s event: %w", typ, err)
		return
	}
	_, sw.err = fmt.Fprintf(sw.w, "event: %s\ndata: %s\n\n", typ, data)
}

// streamEvent is one event of a response's stream, before it is numbered.
type streamEvent struct {
	typ    string
	fields map[string]any
	// sent is how many bytes of text (message text and function call
	// arguments, in output order) the stream has carried once this event is
	// out: it paces a background stream, and a cut stream stops by it.
	sent  int
	delta bool // the event carries text: a cut stream may stop after it
}

// cutAfter reports whether a stream cut short (see writeStream) stops after
// ev, total being the text the whole stream carries.
func cutAfter(ev streamEvent, total int) bool { return ev.delta && ev.sent >= total/2 }

// pending is resp as it stands before it has any output: status as given,
// and no output, usage or end.
func pending(resp *response, status string) *response {
	p := *resp
	p.Status = status
	p.Output = []any{}
	p.Usage, p.IncompleteDetails, p.Error, p.CompletedAt = nil, nil, nil, nil
	return &p
}

// outputEvents returns the events that stream a finished response's output
// items, between its opening events and its terminal one, and the bytes of
// text they carry in all. Texts go in deltas of deltaTokens tokens.
func outputEvents(resp *response) (evs []streamEvent, total int) {
	add := func(typ string, fields map[string]any) {
		evs = append(evs, streamEvent{typ: typ, fields: fields, sent: total})
	}
	deltas := func(text string, typ string, fields func(delta string) map[string]any) {
		for off := 0; off < len(text); {
			end, _ := advance(text, off, deltaTokens)
			total += end - off
			evs = append(evs, streamEvent{typ: typ, fields: fields(text[off:end]), sent: total, delta: true})
			off = end
		}
	}
	for i, item := range resp.Output {
		switch it := item.(type) {
		case messageItem:
			text := it.Content[0].Text
			empty := outputText{Type: "output_text", Text: "", Annotations: []struct{}{}}
			added := messageItem{Type: it.Type, ID: it.ID, Status: "in_progress", Role: it.Role, Content: []outputText{}}
			add("response.output_item.added", map[string]any{"output_index": i, "item": added})
			add("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": empty})
			deltas(text, "response.output_text.delta", func(d string) map[string]any {
				return map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": d, "logprobs": []struct{}{}}
			})
			add("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0,
				"text": text, "logprobs": []struct{}{}})
			add("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": it.Content[0]})
			add("response.output_item.done", map[string]any{"output_index": i, "item": it})
		case functionCallItem:
			added := it
			added.Arguments, added.Status = "", "in_progress"
			add("response.output_item.added", map[string]any{"output_index": i, "item": added})
			deltas(it.Arguments, "response.function_call_arguments.delta", func(d string) map[string]any {
				return map[string]any{"item_id": it.ID, "output_index": i, "delta": d}
			})
			add("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i,
				"name": it.Name, "arguments": it.Arguments})
			add("response.output_item.done", map[string]any{"output_index": i, "item": it})
		default:
			add("response.output_item.added", map[string]any{"output_index": i, "item": item})
			add("response.output_item.done", map[string]any{"output_index": i, "item": item})
		}
	}
	return evs, total
}

// writeStream replays a finished response as the event sequence a streaming
// request would have seen. When cut is true the stream stops after about half
// the text (message text and function call arguments together), with no
// terminal event, as a dropped connection would leave it.
func writeStream(w http.ResponseWriter, resp *response, cut bool) error {
	startSSE(w)
	sw := &streamWriter{w: w}
	start := pending(resp, "in_progress")
	sw.event("response.created", map[string]any{"response": start})
	sw.event("response.in_progress", map[string]any{"response": start})
	evs, total := outputEvents(resp)
	if cut && total == 0 {
		flush(w)
		return sw.err
	}
	for _, ev := range evs {
		sw.event(ev.typ, ev.fields)
		if cut && cutAfter(ev, total) {
			flush(w)
			return sw.err
		}
	}
	if !cut {
		sw.event("response."+terminalEvent(resp.Status), map[string]any{"response": resp})
	}
	flush(w)
	return sw.err
}

func terminalEvent(status string) string {
	switch status {
	case statusIncomplete:
		return "incomplete"
	case statusFailed:
		return "failed"
	}
	return "completed"
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
