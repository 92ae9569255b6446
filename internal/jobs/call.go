package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/store"
)

// Options are a job's request options beyond the prompt (jobs.options).
type Options struct {
	Tools      json.RawMessage           `json:"tools,omitempty"`
	JSONSchema *carryovertype.JSONSchema `json:"json_schema,omitempty"`
	Stream     bool                      `json:"stream,omitempty"`
}

func decodeOptions(raw json.RawMessage) (Options, error) {
	var o Options
	if len(raw) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, fmt.Errorf("job options: %w", err)
	}
	return o, nil
}

// strategyFor is how chunk seq is asked for: the job's own choice, else the
// one its earlier chunks used, else the worker's default. A job keeps one
// strategy: a stateful chunk continues a stored response, which a chat
// completion is not.
func (h *Handlers) strategyFor(cont carryovertype.Continuation, c *store.Claim) carryovertype.Strategy {
	switch {
	case cont.Strategy != "":
		return cont.Strategy
	case c.PrevStrategy != "":
		return carryovertype.Strategy(c.PrevStrategy)
	case h.cfg.DefaultStrategy != "":
		return h.cfg.DefaultStrategy
	}
	return carryovertype.StrategyStateful
}

// contentKind is the content type the continuation prompt is written for:
// the job's format, or for auto what the opening of the answer shows; JSON
// that carries file diffs gets its own prompt.
func contentKind(format, hint, head string) string {
	if format == "auto" || format == "json" {
		d := merge.Detect(hint, []merge.Chunk{{Text: head}})
		if format == "auto" {
			format = d.Format
		}
		if format == "json" && strings.Contains(d.Reason, "diffs") {
			return continuation.FormatJSONDiffs
		}
	}
	return format
}

// buildRequest makes the call for chunk seq of the job under its strategy,
// and says which content type its prompt was written for ("" for chunk 0).
// It loads the stored chunks only when the strategy needs the answer so far.
func (h *Handlers) buildRequest(ctx context.Context, job store.Job, c *store.Claim, cont carryovertype.Continuation, opts Options,
	strategy carryovertype.Strategy) (req continuation.CallRequest, kind string, err error) {
	req = continuation.CallRequest{Model: job.Model, Instructions: job.Instructions, MaxOutputTokens: job.MaxOutputTokens,
		Strategy: strategy, Tools: opts.Tools, Stream: opts.Stream}
	// The claim reads the input only when the call sends it (or an auto
	// format job's content type is not known yet).
	if len(job.Input) > 0 {
		if err := json.Unmarshal(job.Input, &req.Input); err != nil {
			return req, "", fmt.Errorf("job input: %w", err)
		}
	}
	if c.Seq == 0 {
		req.JSONSchema = opts.JSONSchema
		return req, "", nil
	}
	// The content type: the previous chunk's, or detected from the
	// request's own words and the answer's opening.
	hint := func() string { return inputText(job.Instructions, req.Input) }
	kindOf := func(head string) string {
		if c.PrevKind != "" {
			return c.PrevKind
		}
		return contentKind(job.Format, hint(), head)
	}
	if strategy == carryovertype.StrategyStateful && !c.PrevBroken {
		kind = kindOf(c.FirstHead)
		req.PreviousID = c.PrevResponseID
		req.Prompt = continuation.ContinuePrompt(kind)
		return req, kind, nil
	}
	chunks, err := h.answerChunks(ctx, job.ID, c.Seq)
	if err != nil {
		return req, "", err
	}
	head := ""
	if len(chunks) > 0 {
		head = chunks[0].Content
	}
	kind = kindOf(head)
	if strategy == carryovertype.StrategyStateful {
		req.PreviousID, req.Partial = afterLastComplete(chunks)
		req.Prompt = continuation.ContinuePrompt(kind)
		return req, kind, nil
	}
	if req.Partial, err = answerSoFar(job.Format, hint(), chunks); err != nil {
		return req, "", err
	}
	req.Prompt = chatPrompt(strategy, kind, req.Partial, cont.OverlapLines, req.MaxOutputTokens)
	return req, kind, nil
}

// answerChunks are the stored chunks before chunk seq, with their text.
func (h *Handlers) answerChunks(ctx context.Context, jobID string, seq int) ([]store.Chunk, error) {
	chunks, err := h.cfg.Store.Chunks(ctx, jobID, store.ChunkTexts)
	if err != nil {
		return nil, err
	}
	if len(chunks) > seq {
		chunks = chunks[:seq]
	}
	return chunks, nil
}

// afterLastComplete is where a stateful call continues after a broken
// stream: the last response that completed on the server, and the text the
// broken ones delivered after it.
func afterLastComplete(chunks []store.Chunk) (previousID, partial string) {
	k := len(chunks)
	for k > 0 && chunks[k-1].StreamBroken {
		k--
	}
	if k > 0 && chunks[k-1].ResponseID != nil {
		previousID = *chunks[k-1].ResponseID
	}
	var b strings.Builder
	for _, ch := range chunks[k:] {
		b.WriteString(ch.Content)
	}
	return previousID, b.String()
}

// answerSoFar merges the stored chunks, as far as they go, for a call that
// sends the answer itself.
func answerSoFar(format, hint string, chunks []store.Chunk) (string, error) {
	in := make([]merge.Chunk, len(chunks))
	for i, ch := range chunks {
		in[i] = merge.Chunk{Seq: ch.Seq, Text: ch.Content, FinishReason: ch.FinishReason}
	}
	res, err := merge.Merge(merge.Options{Format: format, Hint: hint, Partial: true}, in)
	if err != nil {
		return "", err
	}
	return res.Content, nil
}

// chatPrompt is the continuation prompt a chat strategy sends after the
// answer so far ("" for prefill, which continues the answer in place).
func chatPrompt(strategy carryovertype.Strategy, kind, partial string, overlapLines, maxOutputTokens int) string {
	switch strategy {
	case carryovertype.StrategyHistory:
		return continuation.ContinuePrompt(kind)
	case carryovertype.StrategyOverlap:
		// A last line too long to repeat within the budget is continued
		// without an overlap; the merge's cascade places that join.
		if n := continuation.OverlapLines(kind, partial, overlapLines, maxOutputTokens); n > 0 {
			return continuation.OverlapPrompt(kind, n)
		}
		return continuation.ContinuePrompt(kind)
	}
	return ""
}

// countRecords counts the records a chunk adds — CSV rows (quote-aware, the
// header not counted), JSON Lines, lines of any other format — carrying the
// CSV quote state across chunks.
func countRecords(format string, seq int, inQuote bool, text string) (int64, bool) {
	var n int64
	if format == "csv" {
		for i := 0; i < len(text); i++ {
			switch text[i] {
			case '"':
				inQuote = !inQuote
			case '\n':
				if !inQuote {
					n++
				}
			}
		}
		if seq == 0 && n > 0 {
			n-- // the header
		}
		return n, inQuote
	}
	return int64(strings.Count(text, "\n")), false
}
