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

// writeStream replays a finished response as the event sequence a streaming
// request would have seen. When cut is true the stream stops after about half
// the text (message text and function call arguments together), with no
// terminal event, as a dropped connection would leave it.
func writeStream(w http.ResponseWriter, resp *response, cut bool) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w}

	start := *resp
	start.Status = "in_progress"
	start.Output = []any{}
	start.Usage, start.IncompleteDetails, start.Error = nil, nil, nil
	sw.event("response.created", map[string]any{"response": &start})
	sw.event("response.in_progress", map[string]any{"response": &start})

	total := 0
	for _, item := range resp.Output {
		switch it := item.(type) {
		case messageItem:
			total += len(it.Content[0].Text)
		case functionCallItem:
			total += len(it.Arguments)
		}
	}
	// delivered counts the text sent; stop reports whether a cut is due.
	delivered := 0
	stop := func() bool { return cut && delivered >= total/2 }
	if stop() && total == 0 {
		flush(w)
		return sw.err
	}

	for i, item := range resp.Output {
		switch it := item.(type) {
		case messageItem:
			text := it.Content[0].Text
			empty := outputText{Type: "output_text", Text: "", Annotations: []struct{}{}}
			added := messageItem{Type: it.Type, ID: it.ID, Status: "in_progress", Role: it.Role, Content: []outputText{}}
			sw.event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			sw.event("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": empty})
			for off := 0; off < len(text); {
				end, _ := advance(text, off, deltaTokens)
				sw.event("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0,
					"delta": text[off:end], "logprobs": []struct{}{}})
				delivered += end - off
				off = end
				if stop() {
					flush(w)
					return sw.err
				}
			}
			sw.event("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0,
				"text": text, "logprobs": []struct{}{}})
			sw.event("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": it.Content[0]})
			sw.event("response.output_item.done", map[string]any{"output_index": i, "item": it})
		case functionCallItem:
			added := it
			added.Arguments, added.Status = "", "in_progress"
			sw.event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for off := 0; off < len(it.Arguments); {
				end, _ := advance(it.Arguments, off, deltaTokens)
				sw.event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i,
					"delta": it.Arguments[off:end]})
				delivered += end - off
				off = end
				if stop() {
					flush(w)
					return sw.err
				}
			}
			sw.event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i,
				"name": it.Name, "arguments": it.Arguments})
			sw.event("response.output_item.done", map[string]any{"output_index": i, "item": it})
		default:
			sw.event("response.output_item.added", map[string]any{"output_index": i, "item": item})
			sw.event("response.output_item.done", map[string]any{"output_index": i, "item": item})
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
