package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/throttle"
)

// leasedRetry is how soon a delivery that found the job locked looks again:
// soon, because the holder usually finishes well within a model call.
const leasedRetry = time.Second

// saveTimeout bounds a save or failure record made after the task's context
// may have ended: the response is paid for, so it is written regardless.
const saveTimeout = 30 * time.Second

// chunkRun is one delivery of a chunk task as it passes through the phases
// of HandleChunk. Each phase fills in what the next one reads, so a phase
// can be read (and tested) on its own.
type chunkRun struct {
	seq     int
	taskID  string
	attempt int
	claim   *store.Claim
	log     *slog.Logger

	// Filled by prepare: everything that can fail before the model is paid.
	cont     carryovertype.Continuation
	price    *store.Price
	strategy carryovertype.Strategy
	req      continuation.CallRequest
	kind     string

	// detacher makes the call detached (background mode); nil for a
	// synchronous call. Set by prepare.
	detacher continuation.Detacher
	// The detached wait: whether this delivery picked up a call an earlier
	// one started after that one died (and whether that was looked at yet),
	// and the status the last poll saw.
	resumed, resumeChecked bool
	lastStatus             string

	// sent: the current call's request reached the provider (written whole;
	// see traceSent), for the record of a failed call.
	sent atomic.Bool

	// Filled by callModel.
	started  time.Time
	resp     continuation.Response
	toolErr  string
	toolRule carryovertype.Rule
	// scrubbed counts the NULs and invalid UTF-8 sequences of the reply's
	// text and tool calls replaced with U+FFFD to make it storable.
	scrubbed int
	// ticket is the call's admission by the provider throttle, settled
	// once the reply's usage is known.
	ticket throttle.Ticket
}

// HandleChunk produces one chunk: claim (lock, no write), prepare, call,
// decide, save (one insert, one commit) and enqueue the next task. Each
// phase is its own method; this one only sequences them.
//
// The delivery is a span of the job's trace (SpanChunk), and its model call
// a span under it.
func (h *Handlers) HandleChunk(ctx context.Context, t *asynq.Task) (err error) {
	var p ChunkPayload
	if err := decodePayload("chunk", t.Payload(), &p); err != nil {
		return err
	}
	ctx, span := startTask(ctx, h.tracer, SpanChunk, p.Traceparent, p.JobID, AttrSeq.Int(p.Seq))
	defer func() { endTask(span, err) }()
	if q, ok := asynq.GetQueueName(ctx); ok {
		ctx = h.cfg.Tasks.InLane(ctx, p.JobID, q)
	}
	claim, err := h.cfg.Store.ClaimChunk(ctx, p.JobID, p.Seq)
	if err != nil {
		return err
	}
	defer claim.Release()
	r := &chunkRun{seq: p.Seq, claim: claim, log: h.log.With("job_id", p.JobID, "seq", p.Seq)}
	r.taskID, _ = asynq.GetTaskID(ctx)
	r.attempt, _ = asynq.GetRetryCount(ctx)
	if proceed, err := h.claimed(ctx, r); !proceed {
		return err
	}
	if err := h.prepare(ctx, r); err != nil {
		return err
	}
	if proceed, err := h.callModel(ctx, r); !proceed {
		return err
	}
	outcome, nc := h.decide(ctx, r)
	return h.saveAndAdvance(ctx, r, outcome, nc)
}

// claimed acts on the claim's outcome: only a claimed chunk proceeds to the
// call; every other outcome ends the delivery with the returned error.
func (h *Handlers) claimed(ctx context.Context, r *chunkRun) (proceed bool, err error) {
	claim, log := r.claim, r.log
	trace.SpanFromContext(ctx).SetAttributes(AttrClaim.String(claim.Outcome.String()))
	switch claim.Outcome {
	case store.Claimed:
		return true, nil
	case store.AlreadyStored:
		// A redelivery of a stored chunk: no model call; make sure the job's
		// next step is queued (the first delivery may have died before that).
		log.Debug("chunk already stored; ensuring the next step is queued")
		return false, h.ensureNext(ctx, claim.Job.ID, claim.Job.Status, claim.NextSeq)
	case store.Leased:
		if maxRetry, _ := asynq.GetMaxRetry(ctx); r.attempt >= maxRetry {
			// asynq would archive even a wait at this point; the holder
			// carries the job on, so this duplicate just ends.
			log.Debug("another delivery holds the job; this duplicate ends")
			return false, nil
		}
		log.Debug("another delivery holds the job; retrying later")
		return false, &RetryLater{Delay: leasedRetry, Reason: "another delivery is producing this chunk"}
	case store.JobDone:
		log.Debug("job no longer generating", "status", claim.Job.Status)
		if claim.Job.Status == store.StatusCancelled && claim.Background != nil {
			if err := h.cancelBackground(ctx, claim); err != nil {
				return false, err
			}
		}
		// The delivery that stopped generation may have died before queueing the merge.
		return false, h.ensureNext(ctx, claim.Job.ID, claim.Job.Status, claim.NextSeq)
	default:
		log.Debug("nothing to do", "outcome", claim.Outcome.String())
		return false, nil
	}
}

// prepare records the calls of earlier deliveries that were sent and have
// no outcome (the claim saw their starts), then does everything that can
// fail before the call — settings, price, the request — so a failure never
// leaves a paid-for response unstored.
func (h *Handlers) prepare(ctx context.Context, r *chunkRun) error {
	claim, job := r.claim, r.claim.Job
	if claim.LostCalls {
		if n, err := claim.RecordLostCalls(ctx); err != nil {
			return err
		} else if n > 0 {
			r.log.Warn("earlier deliveries of this chunk sent calls and died before recording them; recorded as lost calls",
				"lost", n, "attempt", r.attempt)
		}
	}
	var err error
	if r.cont, err = decodeContinuation(job.Continuation); err != nil {
		return h.failBeforeCall(ctx, r, err)
	}
	opts, err := decodeOptions(job.Options)
	if err != nil {
		return h.failBeforeCall(ctx, r, err)
	}
	if r.price, err = h.prices.get(ctx, job.Model); err != nil {
		return h.failBeforeCall(ctx, r, err)
	}
	r.strategy = h.strategyFor(r.cont, claim)
	if r.req, r.kind, err = h.buildRequest(ctx, job, claim, r.cont, opts, r.strategy); err != nil {
		return h.failBeforeCall(ctx, r, err)
	}
	if r.detacher = h.detacherFor(r); r.detacher != nil && claim.Background != nil && claim.Background.MaxOutputTokens > 0 {
		r.req.MaxOutputTokens = claim.Background.MaxOutputTokens // the call in flight may have a raised budget
	}
	if r.seq > 0 && claim.Background == nil {
		r.log.Info("continuation started", "response_id", claim.PrevResponseID, "attempt", r.attempt, "strategy", r.strategy)
	}
	return nil
}

// callModel makes the call. Only a response to be judged proceeds; a failed
// or cancelled call, or a tool error the policy retries, is recorded here and
// ends the delivery with the returned error.
func (h *Handlers) callModel(ctx context.Context, r *chunkRun) (proceed bool, err error) {
	callErr, err := h.callRaisingBudget(ctx, r)
	if err != nil {
		return false, err
	}
	if w := (*waiting)(nil); errors.As(callErr, &w) {
		return false, &RetryLater{Delay: w.delay, Reason: w.Error()}
	}
	if t := (*throttled)(nil); errors.As(callErr, &t) {
		// Not held in the slot: the task comes back when the throttle
		// says, and its next delivery calls.
		r.log.Debug("provider throttle: re-scheduling the chunk", "model", t.model, "wait", t.delay)
		return false, &RetryLater{Delay: t.delay, Reason: t.Error()}
	}
	if ns := (*notStarted)(nil); errors.As(callErr, &ns) {
		return false, ns.retry(r.log)
	}
	if callErr != nil {
		if errors.Is(callErr, context.Canceled) && h.cancelled(ctx, r.claim.Job.ID) {
			return false, h.callCancelled(ctx, r)
		}
		return false, h.callFailed(ctx, r, callErr, -1)
	}
	r.log = r.log.With("response_id", r.resp.ID)
	r.toolErr = r.resp.ToolError()
	r.toolRule = r.cont.Policy().RuleFor(carryovertype.ErrTool)
	if r.toolErr == "" || r.toolRule.Action != carryovertype.ActionRetry {
		return true, nil
	}
	n, err := r.claim.Failures(ctx, string(carryovertype.ErrTool))
	if err != nil {
		return false, err
	}
	if n < r.toolRule.MaxConsecutiveRetries {
		return false, h.callFailed(ctx, r,
			&continuation.CallError{Type: carryovertype.ErrTool, HTTPStatus: 200, Err: fmt.Errorf("%s", r.toolErr)}, n)
	}
	return true, nil
}

// callRaisingBudget makes the call; a reasoning model that spent the whole
// budget thinking returned no text, so with a ceiling the same call is made
// again with a doubled budget, each spent attempt recorded (it was billed).
// It returns the call's error, and separately an error recording an attempt.
func (h *Handlers) callRaisingBudget(ctx context.Context, r *chunkRun) (callErr, err error) {
	req := &r.req
	callErr = h.callOnce(ctx, r)
	for callErr == nil && reasoningOnly(r.resp) && req.MaxOutputTokens < r.cont.MaxOutputTokensCeiling {
		next := min(2*req.MaxOutputTokens, r.cont.MaxOutputTokensCeiling)
		u := store.Usage(r.resp.Usage)
		if err := r.claim.RecordAttempt(ctx, store.CallFailure{TaskID: r.taskID, Attempt: r.attempt, Counted: false,
			CloseBackground: r.replacing(),
			ResponseID:      r.resp.ID, ErrorType: "reasoning_exhausted", Usage: &u, CostUSD: Cost(r.price, u), Started: r.started,
			Latency: r.resp.Latency, Error: fmt.Sprintf("all %d output tokens went to reasoning, no visible text; calling again with %d",
				req.MaxOutputTokens, next)}); err != nil {
			r.log.Error("could not record the reasoning-only attempt", "response_id", r.resp.ID, "err", err)
			return nil, err
		}
		r.log.Warn("the output budget went to reasoning with no visible text; raising it for this call",
			"response_id", r.resp.ID, "max_output_tokens", req.MaxOutputTokens, "raised_to", next)
		req.MaxOutputTokens = next
		callErr = h.callOnce(ctx, r)
	}
	return callErr, nil
}

// callOnce makes the chunk's call into r.resp — detached when the run has
// a detacher, else synchronously — and feeds it to the metrics unless it is
// still running (a *waiting error).
//
// Every reply that ended is held to the bounds for the call's budget
// (continuation.CheckReply: sane usage, text and tool calls in proportion)
// before anything counts or prices it, and scrubbed of what Postgres cannot
// store; a reply past the bounds is a malformed model error for the error
// policy, its absurd usage neither billed nor counted.
func (h *Handlers) callOnce(ctx context.Context, r *chunkRun) (err error) {
	ctx = h.withModel(ctx, r.req.Model)
	if r.detacher == nil {
		// The throttle first: a call it holds back is never started.
		if err := h.admit(ctx, r); err != nil {
			return err
		}
		// Its start committed before the request (a background call's is
		// committed in startBackground).
		if err := r.claim.StartCall(ctx, r.taskID, r.attempt); err != nil {
			return &notStarted{err}
		}
	}
	r.started = time.Now()
	ctx, span := startCall(ctx, h.tracer, r.req)
	defer func() { endCall(span, r.resp, err) }()
	if r.detacher == nil {
		r.resp, err = h.call(traceSent(ctx, &r.sent), r.req)
	} else {
		r.resp, err = h.detached(ctx, r)
	}
	h.settle(ctx, r)
	if _, ok := err.(*throttled); ok {
		return err
	}
	if _, ok := err.(*notStarted); ok {
		return err
	}
	if _, ok := err.(*waiting); !ok {
		if cerr := continuation.CheckReply(&r.resp, r.req.MaxOutputTokens); cerr != nil {
			if err == nil {
				err = cerr
			} else {
				r.log.Warn("the failed call's reply is also out of bounds; its usage is not recorded", "err", cerr)
			}
		}
		r.scrubbed = r.resp.Scrub()
		h.recordCall(r.price, r.resp, err)
	}
	return err
}

// notStarted is the error of a call that was not made because its start
// could not be committed (StartCall): no request was sent.
type notStarted struct{ err error }

func (e *notStarted) Error() string { return "no call made: " + e.err.Error() }
func (e *notStarted) Unwrap() error { return e.err }

// retry is the delivery's error: a lock lost with the lock session waits a
// moment without counting as a failure (the job is claimed afresh), anything
// else (Postgres unreachable) is retried as asynq retries a failure.
func (e *notStarted) retry(log *slog.Logger) error {
	if errors.Is(e.err, store.ErrLockLost) {
		log.Warn("the job's lock went with the lock session before the call; no call made, claiming again")
		return &RetryLater{Delay: leasedRetry, Reason: e.Error()}
	}
	log.Warn("could not record the call's start; no call made", "err", e.err)
	return e
}

// traceSent has sent set once the request on ctx has been written whole:
// then it reached the provider (a dial that failed, or a write cut short,
// sent nothing a provider would bill).
func traceSent(ctx context.Context, sent *atomic.Bool) context.Context {
	sent.Store(false)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			sent.Store(true)
		}
	}})
}

// replacing is how the background call whose answer was spent on
// reasoning closes as a new one replaces it ("" for a synchronous call).
func (r *chunkRun) replacing() string {
	if r.detacher == nil {
		return ""
	}
	return store.BackgroundReplaced
}

// decide judges the response against every criterion and builds the chunk
// row that records it.
func (h *Handlers) decide(ctx context.Context, r *chunkRun) (continuation.Outcome, store.NewChunk) {
	claim, job, resp := r.claim, r.claim.Job, r.resp
	sum := sha256.Sum256([]byte(resp.Text))
	textSHA := hex.EncodeToString(sum[:])
	usage := store.Usage(resp.Usage)
	cost := Cost(r.price, usage)
	cumCost := claim.CumCost
	if cost != nil && (cumCost != nil || r.seq == 0) {
		cumCost = addCost(cumCost, *cost)
	}
	execStart := r.started
	if job.StartedAt != nil {
		execStart = *job.StartedAt
	}
	records, inQuote := countRecords(job.Format, r.seq, claim.InQuote, resp.Text)
	outcome := continuation.Decide(continuation.State{
		Seq: r.seq, Finish: resp.Finish, Text: resp.Text, TextSHA: textSHA, PreviousSHA: claim.PrevSHA,
		Enabled: r.cont.EnabledOrDefault(), MaxAttempts: r.cont.MaxAttempts,
		OutputTokens: claim.CumOutput + usage.Output, CostUSD: cumCost, Elapsed: time.Since(execStart),
		PreviousTail: claim.PrevTail, Budgets: budgets(r.cont), Records: claim.CumRecords + records,
		StreamBroken: resp.StreamBroken, ToolTruncated: anyTruncated(resp.ToolCalls), ToolError: r.toolErr, ToolRule: r.toolRule,
		// A cancel cancels the task's context; only then is the job read again.
		Cancelled: ctx.Err() != nil && h.cancelled(ctx, job.ID),
	}, continuation.DefaultCriteria())
	decision, _ := json.Marshal(outcome)
	var toolCalls json.RawMessage
	if len(resp.ToolCalls) > 0 {
		toolCalls, _ = json.Marshal(resp.ToolCalls)
	}
	nc := store.NewChunk{
		Content: resp.Text, ContentSHA: textSHA, FinishReason: string(resp.Finish), RawStatus: resp.RawStatus,
		IncompleteReason: resp.IncompleteReason, ResponseID: resp.ID, TaskID: r.taskID, Attempt: r.attempt,
		Usage: usage, CostUSD: cost, CumOutput: claim.CumOutput + usage.Output, CumCost: cumCost,
		CallStarted: r.started, Latency: resp.Latency,
		ShouldContinue: outcome.ShouldContinue, StopReason: string(outcome.StopReason), Decision: decision,
		DecisionNote: r.note(decisionNote(r.seq, resp, outcome)), Strategy: string(r.strategy), Prompt: r.req.Prompt,
		MaxOutputTokens: r.req.MaxOutputTokens, ToolCalls: toolCalls, CumRecords: claim.CumRecords + records,
		InQuote: inQuote, StreamBroken: resp.StreamBroken, ContentKind: r.kind,
	}
	nc.Event = r.warnings()
	return outcome, nc
}

// note adds to a chunk's decision note what was replaced to store its
// text, if anything: then the chunk is not routine, and its decision event
// tells the operator the stored text differs from what the model sent.
func (r *chunkRun) note(note string) string {
	if r.scrubbed == 0 {
		return note
	}
	s := fmt.Sprintf("%d NUL or invalid UTF-8 sequence(s) in the reply replaced with U+FFFD to store it", r.scrubbed)
	if note == "" {
		return fmt.Sprintf("chunk %d: continue (finish_reason); %s", r.seq, s)
	}
	return note + "; " + s
}

// anyTruncated reports whether a tool call was cut off by the token limit.
func anyTruncated(calls []carryovertype.ToolCall) bool {
	for _, tc := range calls {
		if tc.Truncated {
			return true
		}
	}
	return false
}

// warnings logs what about the response an operator should know, and
// returns the event the chunk's row carries for it (nil for none).
func (r *chunkRun) warnings() *store.EventNote {
	resp, log := r.resp, r.log
	var ev *store.EventNote
	switch {
	case resp.Finish == continuation.FinishContentFilter:
		log.Warn("response stopped by the content filter; not continuing")
		ev = &store.EventNote{Level: "warn", Type: "content_filter", Message: "response " + resp.ID + " stopped by the content filter"}
	case resp.StreamBroken:
		log.Warn("the stream broke mid-answer; keeping the text received and continuing from it", "bytes", len(resp.Text))
	case resp.Finish == continuation.FinishIncomplete:
		log.Warn("response incomplete for a reason that cannot be continued; resume from its response id",
			"incomplete_reason", resp.IncompleteReason)
		ev = &store.EventNote{Level: "warn", Type: "incomplete", Message: fmt.Sprintf(
			"response %s incomplete (%s); resume from it", resp.ID, resp.IncompleteReason)}
	}
	if r.scrubbed > 0 {
		msg := fmt.Sprintf("response %s: %d NUL or invalid UTF-8 sequence(s) replaced with U+FFFD (Postgres text cannot hold them)", resp.ID, r.scrubbed)
		log.Warn("the reply had characters Postgres cannot store; replaced with U+FFFD", "replaced", r.scrubbed)
		if ev == nil {
			ev = &store.EventNote{Level: "warn", Type: "text_replaced", Message: msg}
		}
	}
	if r.toolErr != "" {
		log.Warn("unusable tool call", "error_type", carryovertype.ErrTool, "err", r.toolErr, "action", r.toolRule.Action)
		if ev == nil {
			ev = &store.EventNote{Level: "warn", Type: "tool_error", Message: r.toolErr}
		}
	}
	return ev
}

// saveAndAdvance stores the chunk and queues what the job needs next: the
// next chunk, or the merge once generation has ended.
func (h *Handlers) saveAndAdvance(ctx context.Context, r *chunkRun, outcome continuation.Outcome, nc store.NewChunk) error {
	// The save must happen even if the task's context ended during the call:
	// the response is paid for.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	status, err := r.claim.Save(saveCtx, nc)
	if errors.Is(err, store.ErrChunkExists) {
		// Still a call the provider answered (and billed): on record as one.
		r.log.Warn("chunk was stored by another delivery; this call's response is discarded")
		u := nc.Usage
		return r.claim.RecordAttempt(saveCtx, store.CallFailure{TaskID: r.taskID, Attempt: r.attempt, Counted: false,
			ResponseID: r.resp.ID, ErrorType: "duplicate", Usage: &u, CostUSD: nc.CostUSD, Started: r.started, Latency: r.resp.Latency,
			Error: "another delivery stored this chunk first; this call's reply was discarded"})
	}
	if err != nil && store.IsDataError(err) {
		// The reply cannot be stored, and would not be on a redelivery
		// either: recorded as a malformed reply under the error policy,
		// instead of a delivery that dies without a trace and calls the
		// model again.
		r.log.Error("the chunk cannot be stored; recording the reply as malformed", "err", err, "output_tokens", nc.Usage.Output)
		return h.callFailed(ctx, r, &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true,
			Err: fmt.Errorf("the reply could not be stored: %w", err)}, -1)
	}
	if err != nil {
		r.log.Error("could not store the chunk; the delivery is retried", "err", err)
		return err
	}
	r.log.Debug("chunk stored", "finish_reason", r.resp.Finish, "output_tokens", nc.Usage.Output,
		"decision", outcome.Decision, "resolved_by", outcome.ResolvedBy, "stop_reason", outcome.StopReason)
	jobID := r.claim.Job.ID
	switch status {
	case store.StatusRunning, store.StatusQueued:
		if r.detacher != nil {
			return h.startNext(ctx, jobID, r.seq+1)
		}
		return h.cfg.Tasks.Chunk(ctx, jobID, r.seq+1)
	case store.StatusMerging:
		r.log.Info("generation ended; merging", "stop_reason", outcome.StopReason, "chunks", r.seq+1)
		return h.cfg.Tasks.Merge(ctx, jobID)
	}
	return nil
}
