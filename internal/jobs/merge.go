package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/otel/attribute"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/store"
)

// Metadata is the _continuation_metadata stored with every result.
type Metadata struct {
	JobID                string              `json:"job_id"`
	Model                string              `json:"model"`
	Format               string              `json:"format"`
	WasContinued         bool                `json:"was_continued"`
	ContinuationCount    int                 `json:"continuation_count"`
	ChunkCount           int                 `json:"chunk_count"`
	StopReason           string              `json:"stop_reason"`
	FinishReasons        []string            `json:"finish_reasons"`
	IncompleteDetails    []IncompleteDetail  `json:"incomplete_details"`
	ResponseIDs          []string            `json:"response_ids"`
	TotalInputTokens     int64               `json:"total_input_tokens"`
	TotalCachedTokens    int64               `json:"total_cached_tokens"`
	TotalOutputTokens    int64               `json:"total_output_tokens"`
	TotalReasoningTokens int64               `json:"total_reasoning_tokens"`
	TotalCostEstimate    *float64            `json:"total_cost_estimate"`
	CostCurrency         string              `json:"cost_currency"`
	CostNote             string              `json:"cost_note,omitempty"`
	Price                *store.Price        `json:"price,omitempty"`
	ChunkSizes           []int               `json:"chunk_sizes"`
	MergeStrategyUsed    string              `json:"merge_strategy_used"`
	MergeSuccess         bool                `json:"merge_success"`
	MergeError           string              `json:"merge_error,omitempty"`
	FinalRecordCount     int                 `json:"final_record_count"`
	TruncationPoints     []string            `json:"truncation_points"`
	Joins                []merge.Join        `json:"joins"`
	Envelope             []merge.Removal     `json:"envelope"`
	Detection            *merge.Detection    `json:"detection,omitempty"`
	Calls                store.CallStats     `json:"calls"`
	Durations            Durations           `json:"durations"`
	Decisions            []ChunkDecisionNote `json:"decisions"`
	// Strategy is how the answer was continued; Prompts are the
	// continuation prompts sent, per chunk ("" for none).
	Strategy string   `json:"strategy"`
	Prompts  []string `json:"prompts"`
	// ChunkInputTokens shows what re-sending the context cost per call.
	ChunkInputTokens []int64 `json:"chunk_input_tokens"`
	// ToolCalls are the calls the answer ended with, marked when unusable.
	ToolCalls []ChunkToolCall `json:"tool_calls,omitempty"`
	// SchemaValid reports the merged JSON against the job's json_schema
	// (absent without one); SchemaError says where it does not conform.
	SchemaValid *bool  `json:"schema_valid,omitempty"`
	SchemaError string `json:"schema_error,omitempty"`
	// StreamBreaks are the chunks whose stream broke mid-answer (their usage
	// was never reported, so it is not in the totals).
	StreamBreaks []int `json:"stream_breaks,omitempty"`
}

// ChunkToolCall is a tool call with the chunk it came in.
type ChunkToolCall struct {
	Seq int `json:"seq"`
	carryovertype.ToolCall
}

// IncompleteDetail is one chunk's incomplete_details.
type IncompleteDetail struct {
	Seq    int    `json:"seq"`
	Reason string `json:"reason"`
}

// ChunkDecisionNote is the outcome after one chunk.
type ChunkDecisionNote struct {
	Seq            int    `json:"seq"`
	ShouldContinue bool   `json:"should_continue"`
	ResolvedBy     string `json:"resolved_by"`
	StopReason     string `json:"stop_reason,omitempty"`
}

// Durations break a job's time down, in milliseconds.
type Durations struct {
	TotalMS      int64   `json:"total_ms"`       // created → merged
	ActiveMS     int64   `json:"active_ms"`      // running time over every execution (resumes)
	QueueMS      int64   `json:"queue_ms"`       // created → first call
	ModelMS      int64   `json:"model_ms"`       // sum of the chunks' call latencies
	MergeMS      float64 `json:"merge_ms"`       // the merge itself
	ChunkModelMS []int64 `json:"chunk_model_ms"` // each chunk's call latency
}

// HandleMerge merges a job's stored chunks and finishes the job. Running it
// twice writes the same result twice.
func (h *Handlers) HandleMerge(ctx context.Context, t *asynq.Task) (err error) {
	var p MergePayload
	if err := decodePayload("merge", t.Payload(), &p); err != nil {
		return err
	}
	ctx, span := startTask(ctx, h.tracer, SpanMerge, p.Traceparent, p.JobID)
	defer func() { endTask(span, err) }()
	log := h.log.With("job_id", p.JobID)
	in, err := h.cfg.Store.LoadMerge(ctx, p.JobID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	job, chunks, calls := in.Job, in.Chunks, in.Calls
	if job.Status != store.StatusMerging {
		log.Debug("merge: job is not merging; nothing to do", "status", job.Status)
		return nil
	}
	price, err := h.prices.get(ctx, job.Model)
	if err != nil {
		return err
	}
	hint, err := requestText(job)
	if err != nil {
		return err
	}
	start := time.Now()
	res, meta, err := mergeChunks(job, chunks, hint, h.schemas.get)
	if err != nil {
		return fmt.Errorf("merge job %s: %w: %w", job.ID, err, asynq.SkipRetry)
	}
	meta.Durations.MergeMS = float64(time.Since(start).Microseconds()) / 1000
	h.cfg.Metrics.Merge(time.Since(start), res.Success)
	// Totals over every attempt, failed calls with usage included.
	meta.Calls = calls
	meta.Price = price
	totals, cost := in.Totals.Usage, in.Totals.Cost()
	meta.TotalInputTokens, meta.TotalCachedTokens = totals.Input, totals.Cached
	meta.TotalOutputTokens, meta.TotalReasoningTokens = totals.Output, totals.Reasoning
	meta.TotalCostEstimate = cost
	meta.CostNote = costNote(job.Model, price, calls, len(meta.StreamBreaks))
	status, errMsg := FinalStatus(job, meta)
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encode metadata of job %s: %w", job.ID, err)
	}
	var mergeErr *string
	if res.Error != "" {
		mergeErr = &res.Error
	}
	if err := h.cfg.Store.SaveResult(ctx, store.Result{
		JobID: job.ID, Content: res.Content, Metadata: raw, CostUSD: cost,
		MergeSuccess: res.Success, MergeError: mergeErr,
	}, status, errMsg, in.Totals); err != nil {
		return err
	}
	h.cfg.Metrics.JobFinished(status, meta.StopReason)
	span.SetAttributes(AttrStatus.String(status), attribute.Int("carryover.chunks", len(chunks)))
	h.notify(ctx, job, status)
	lvl := log.Info
	if status != store.StatusSucceeded {
		lvl = log.Warn
	}
	lvl("job finished", "status", status, "chunks", len(chunks), "stop_reason", meta.StopReason,
		"merge_success", res.Success, "output_tokens", meta.TotalOutputTokens, "bytes", len(res.Content))
	return nil
}

// MergeChunks runs the merger for a job's stored chunks and builds the
// metadata; the worker's `merge` subcommand runs the same merger.
func MergeChunks(job store.Job, chunks []store.Chunk, hint string) (merge.Result, Metadata, error) {
	return mergeChunks(job, chunks, hint, func(_ string, raw json.RawMessage) (*jsonschema.Schema, error) {
		return compileSchema(raw)
	})
}

// mergeChunks is MergeChunks with the job's JSON Schema compiled by
// compile: the worker keeps compiled schemas, so a remerge does not compile
// again.
func mergeChunks(job store.Job, chunks []store.Chunk, hint string,
	compile func(jobID string, raw json.RawMessage) (*jsonschema.Schema, error)) (merge.Result, Metadata, error) {
	meta := newMetadata(job, len(chunks))
	in := make([]merge.Chunk, len(chunks))
	for i, c := range chunks {
		in[i] = merge.Chunk{Seq: c.Seq, Text: c.Content, FinishReason: c.FinishReason}
		meta.addChunk(i, c)
	}
	meta.addDurations(job)
	res, err := merge.Merge(merge.Options{Format: job.Format, Hint: hint}, in)
	if err != nil {
		return res, meta, err
	}
	meta.addMerge(res)
	opts, err := decodeOptions(job.Options)
	if err != nil {
		return res, meta, err
	}
	if opts.JSONSchema != nil {
		sch, err := compile(job.ID, opts.JSONSchema.Schema)
		meta.SchemaError = validateAgainst(sch, err, res.Content)
		ok := meta.SchemaError == ""
		meta.SchemaValid = &ok
	}
	return res, meta, nil
}

// newMetadata is a job's metadata before its n chunks are added, with every
// per-chunk list sized for them.
func newMetadata(job store.Job, n int) Metadata {
	meta := Metadata{
		JobID: job.ID, Model: job.Model, Format: job.Format, CostCurrency: "USD",
		ChunkCount:        n,
		FinishReasons:     make([]string, n),
		IncompleteDetails: []IncompleteDetail{},
		ResponseIDs:       make([]string, 0, n),
		ChunkSizes:        make([]int, n),
		Decisions:         make([]ChunkDecisionNote, n),
		Prompts:           make([]string, n),
		ChunkInputTokens:  make([]int64, n),
	}
	if job.StopReason != nil {
		meta.StopReason = *job.StopReason
	}
	meta.Durations.ChunkModelMS = make([]int64, n)
	if n > 0 {
		meta.WasContinued = n > 1
		meta.ContinuationCount = n - 1
	}
	return meta
}

// addChunk adds chunk i's figures, decision and tool calls.
func (m *Metadata) addChunk(i int, c store.Chunk) {
	m.FinishReasons[i] = c.FinishReason
	m.ChunkSizes[i] = len(c.Content)
	if c.IncompleteReason != nil {
		m.IncompleteDetails = append(m.IncompleteDetails, IncompleteDetail{Seq: c.Seq, Reason: *c.IncompleteReason})
	}
	if c.ResponseID != nil {
		m.ResponseIDs = append(m.ResponseIDs, *c.ResponseID)
	}
	m.TotalInputTokens += c.Usage.Input
	m.TotalCachedTokens += c.Usage.Cached
	m.TotalOutputTokens += c.Usage.Output
	m.TotalReasoningTokens += c.Usage.Reasoning
	if c.CostUSD != nil {
		m.TotalCostEstimate = addCost(m.TotalCostEstimate, *c.CostUSD)
	}
	m.Durations.ModelMS += c.LatencyMS
	m.Durations.ChunkModelMS[i] = c.LatencyMS
	// The outcome's columns, not its JSON: decoding every chunk's
	// evaluations was the merge's largest cost.
	note := ChunkDecisionNote{Seq: c.Seq, ShouldContinue: c.ShouldContinue, ResolvedBy: c.ResolvedBy}
	if c.StopReason != nil {
		note.StopReason = *c.StopReason
	}
	m.Decisions[i] = note
	m.Strategy = c.Strategy
	m.Prompts[i] = c.Prompt
	m.ChunkInputTokens[i] = c.Usage.Input
	if len(c.ToolCalls) > 0 {
		var calls []carryovertype.ToolCall
		if err := json.Unmarshal(c.ToolCalls, &calls); err == nil {
			for _, tc := range calls {
				m.ToolCalls = append(m.ToolCalls, ChunkToolCall{Seq: c.Seq, ToolCall: tc})
			}
		}
	}
	if c.StreamBroken {
		m.StreamBreaks = append(m.StreamBreaks, c.Seq)
	}
}

// addDurations adds the job's queue, total and active time up to now.
func (m *Metadata) addDurations(job store.Job) {
	if job.StartedAt != nil {
		m.Durations.QueueMS = job.StartedAt.Sub(job.CreatedAt).Milliseconds()
	}
	m.Durations.TotalMS = time.Since(job.CreatedAt).Milliseconds()
	m.Durations.ActiveMS = job.ActiveMS
	if job.StartedAt != nil {
		m.Durations.ActiveMS += time.Since(*job.StartedAt).Milliseconds()
	}
}

// addMerge adds what the merger did.
func (m *Metadata) addMerge(res merge.Result) {
	m.MergeStrategyUsed = res.Strategy
	m.MergeSuccess = res.Success
	m.MergeError = res.Error
	m.FinalRecordCount = res.RecordCount
	m.TruncationPoints = res.TruncationPoints
	m.Joins = res.Joins
	m.Envelope = res.Envelope
	m.Detection = res.Detection
}

// FinalStatus decides how a merged job ends: succeeded only when the model
// completed and the merge verified every join; otherwise partial or failed
// as the job's on_failure says.
func FinalStatus(job store.Job, meta Metadata) (status, errMsg string) {
	if meta.StopReason == string(continuation.StopCompleted) && meta.MergeSuccess && meta.SchemaError == "" {
		return store.StatusSucceeded, ""
	}
	switch {
	case !meta.MergeSuccess:
		errMsg = "merge failed: " + meta.MergeError
	case meta.SchemaError != "":
		errMsg = "the merged JSON does not match json_schema: " + meta.SchemaError
	case job.Error != nil && *job.Error != "":
		errMsg = fmt.Sprintf("generation stopped (%s): %s", meta.StopReason, *job.Error)
	default:
		errMsg = fmt.Sprintf("generation stopped before the answer was complete: %s", meta.StopReason)
	}
	ignored := job.Error != nil && strings.HasPrefix(*job.Error, IgnoredErrorPrefix)
	cont, err := decodeContinuation(job.Continuation)
	if err == nil && cont.OnFailure == carryovertype.OnFailureRaise && !ignored {
		return store.StatusFailed, errMsg
	}
	return store.StatusPartial, errMsg
}

// requestText rebuilds the request's words for auto format detection.
func requestText(job store.Job) (string, error) {
	var in continuation.Input
	if len(job.Input) == 0 {
		return job.Instructions, nil
	}
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return "", fmt.Errorf("job %s input: %w", job.ID, err)
	}
	return inputText(job.Instructions, in), nil
}

// inputText is a request's own words: its instructions and its input.
func inputText(instructions string, in continuation.Input) string {
	return ownWords(carryovertype.Request{Instructions: instructions, Input: carryovertype.Input{Prompt: in.Prompt, Messages: in.Messages}})
}

func addCost(total *float64, c float64) *float64 {
	v := c
	if total != nil {
		v += *total
	}
	return &v
}

// costNote explains a missing or incomplete cost estimate.
func costNote(model string, price *store.Price, calls store.CallStats, streamBreaks int) string {
	switch {
	case price == nil:
		return fmt.Sprintf("no price for model %q in model_prices; cost is not estimated", model)
	case calls.Lost > 0:
		return fmt.Sprintf("%d lost call(s) may have been billed; their usage is unknown and not in the estimate", calls.Lost)
	case streamBreaks > 0:
		return fmt.Sprintf("%d stream(s) broke before reporting usage; what they were billed is not in the estimate", streamBreaks)
	}
	return ""
}
