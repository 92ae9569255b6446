package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/store"
)

// HandlerConfig configures the chunk and merge handlers.
type HandlerConfig struct {
	Store    *store.Store
	Tasks    *Dispatcher
	Provider continuation.Provider
	Logger   *slog.Logger
	Metrics  *metrics.Metrics // nil records nothing
	// WebhookSecret signs webhook events; without it none are sent.
	WebhookSecret []byte
	// MaxRateLimitWaits bounds how often one chunk may be refused with 429
	// before the job stops (waits do not use the retry budget).
	MaxRateLimitWaits int
	// DefaultStrategy continues jobs that name no strategy: the provider's
	// natural one (stateful for OpenAI's Responses API).
	DefaultStrategy continuation.Strategy
	// CallTimeout bounds one model call; 0 means only the task's timeout.
	CallTimeout time.Duration
}

// Handlers processes chunk and merge tasks. Both are idempotent under
// asynq's at-least-once delivery.
type Handlers struct {
	cfg      HandlerConfig
	log      *slog.Logger
	prices   *priceCache
	webhooks *http.Client
}

// NewHandlers builds the handlers.
func NewHandlers(cfg HandlerConfig) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRateLimitWaits <= 0 {
		cfg.MaxRateLimitWaits = 50
	}
	return &Handlers{cfg: cfg, log: slog.New(deferAttrs(cfg.Logger.Handler())), prices: newPriceCache(cfg.Store, time.Minute),
		webhooks: &http.Client{Timeout: 10 * time.Second}}
}

// Register adds the handlers to an asynq mux.
func (h *Handlers) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeChunk, h.timedChunk)
	mux.HandleFunc(TypeMerge, h.HandleMerge)
	mux.HandleFunc(TypeWebhook, h.HandleWebhook)
}

// RetryLater is returned by a handler to have the task delivered again after
// Delay without counting as a failure (a rate limit, or another delivery
// holding the job's lock).
type RetryLater struct {
	Delay  time.Duration
	Reason string
}

func (e *RetryLater) Error() string { return fmt.Sprintf("retry in %s: %s", e.Delay, e.Reason) }

// RetryDelay is the asynq RetryDelayFunc: a RetryLater's own delay, else
// exponential backoff from one second (1s, 2s, 4s, ... at most 5 minutes,
// ±20% jitter). asynq's default starts near 15s and grows as n⁴, far too
// slow for a model API's passing 500.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	var rl *RetryLater
	if errors.As(err, &rl) && rl.Delay > 0 {
		return roundUpToSecond(time.Now(), rl.Delay)
	}
	var re *retryError
	if errors.As(err, &re) {
		return re.delay
	}
	return backoff(n)
}

// roundUpToSecond stretches d so that now+d falls on a whole second. asynq
// stores a retry's time in whole Unix seconds, rounding down, which would
// bring a 1s Retry-After back after anything from 0 to 1s.
func roundUpToSecond(now time.Time, d time.Duration) time.Duration {
	at := now.Add(d)
	up := at.Truncate(time.Second)
	if up.Before(at) {
		up = up.Add(time.Second)
	}
	return up.Sub(now)
}

// IsFailure is the asynq IsFailure func: waiting is not failing.
func IsFailure(err error) bool {
	var rl *RetryLater
	return !errors.As(err, &rl)
}

// timedChunk runs HandleChunk and records its duration by outcome.
func (h *Handlers) timedChunk(ctx context.Context, t *asynq.Task) error {
	reserveStack()
	start := time.Now()
	err := h.HandleChunk(ctx, t)
	var rl *RetryLater
	outcome := "done"
	switch {
	case errors.As(err, &rl):
		outcome = "waited"
	case err != nil:
		outcome = "failed"
	}
	h.cfg.Metrics.ChunkTask(outcome, time.Since(start))
	return err
}

// reserveStack grows the calling goroutine's stack to about 32 KB at once,
// while it is still shallow (chunk tasks only: one per chunk, against one
// merge per job). asynq runs every task on a new goroutine, which
// starts with a small stack, and a chunk's path — the handler, openai-go,
// net/http, pgx, go-redis — is deep: the runtime grew the stack several
// times per chunk, each time copying every frame and adjusting its
// pointers, which took 8% of the pipeline benchmark's CPU (and half of the
// model call's). One copy of a shallow stack costs next to nothing.
//
//go:noinline
func reserveStack() {
	var frame [28 << 10]byte
	touchStack(frame[:])
}

// touchStack keeps reserveStack's frame from being optimized away; the
// slice does not escape, so the frame stays on the stack.
//
//go:noinline
func touchStack(b []byte) { b[len(b)-1] = 1 }

// leasedRetry is how soon a delivery that found the job locked looks again:
// soon, because the holder usually finishes well within a model call.
const leasedRetry = time.Second

// HandleChunk produces one chunk: claim (lock, no write), call, save (one
// insert, one commit), enqueue the next task.
func (h *Handlers) HandleChunk(ctx context.Context, t *asynq.Task) error {
	var p ChunkPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" {
		return fmt.Errorf("chunk task payload %q: %v: %w", t.Payload(), err, asynq.SkipRetry)
	}
	taskID, _ := asynq.GetTaskID(ctx)
	attempt, _ := asynq.GetRetryCount(ctx)
	claim, err := h.cfg.Store.ClaimChunk(ctx, p.JobID, p.Seq)
	if err != nil {
		return err
	}
	defer claim.Release()
	log := h.log.With("job_id", p.JobID, "seq", p.Seq)
	switch claim.Outcome {
	case store.Claimed:
	case store.AlreadyStored:
		// A redelivery of a stored chunk: no model call; make sure the job's
		// next step is queued (the first delivery may have died before that).
		log.Debug("chunk already stored; ensuring the next step is queued")
		return h.ensureNext(ctx, claim.Job.ID, claim.Job.Status, claim.NextSeq)
	case store.Leased:
		if maxRetry, _ := asynq.GetMaxRetry(ctx); attempt >= maxRetry {
			// asynq would archive even a wait at this point; the holder
			// carries the job on, so this duplicate just ends.
			log.Debug("another delivery holds the job; this duplicate ends")
			return nil
		}
		log.Debug("another delivery holds the job; retrying later")
		return &RetryLater{Delay: leasedRetry, Reason: "another delivery is producing this chunk"}
	case store.JobDone:
		log.Debug("job no longer generating", "status", claim.Job.Status)
		// The delivery that stopped generation may have died before queueing the merge.
		return h.ensureNext(ctx, claim.Job.ID, claim.Job.Status, claim.NextSeq)
	default:
		log.Debug("nothing to do", "outcome", claim.Outcome.String())
		return nil
	}
	job := claim.Job
	if n, err := claim.RecordLostAttempts(ctx, taskID, attempt); err != nil {
		return err
	} else if n > 0 {
		log.Warn("earlier deliveries of this chunk died without a trace; recorded as lost attempts", "lost", n, "attempt", attempt)
	}
	// Everything that can fail goes before the call, so a failure never
	// leaves a paid-for response unstored.
	cont, err := decodeContinuation(job.Continuation)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	opts, err := decodeOptions(job.Options)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	price, err := h.prices.get(ctx, job.Model)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	strategy := h.strategyFor(cont, claim)
	req, kind, err := h.buildRequest(ctx, job, claim, cont, opts, strategy)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	if p.Seq > 0 {
		log.Info("continuation started", "response_id", claim.PrevResponseID, "attempt", attempt, "strategy", strategy)
	}

	started := time.Now()
	resp, callErr := h.call(ctx, req)
	h.recordCall(job.Model, price, resp, callErr)
	// A reasoning model that spent the whole budget thinking returned no
	// text: with a ceiling, the same call is made again with a doubled
	// budget; each spent attempt is recorded (it was billed).
	for callErr == nil && reasoningOnly(resp) && req.MaxOutputTokens < cont.MaxOutputTokensCeiling {
		next := min(2*req.MaxOutputTokens, cont.MaxOutputTokensCeiling)
		u := store.Usage(resp.Usage)
		if err := claim.RecordAttempt(ctx, store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: false,
			ResponseID: resp.ID, ErrorType: "reasoning_exhausted", Usage: &u, CostUSD: Cost(price, u), Started: started,
			Latency: resp.Latency, Error: fmt.Sprintf("all %d output tokens went to reasoning, no visible text; calling again with %d",
				req.MaxOutputTokens, next)}); err != nil {
			return err
		}
		log.Warn("the output budget went to reasoning with no visible text; raising it for this call",
			"response_id", resp.ID, "max_output_tokens", req.MaxOutputTokens, "raised_to", next)
		req.MaxOutputTokens = next
		started = time.Now()
		resp, callErr = h.call(ctx, req)
		h.recordCall(job.Model, price, resp, callErr)
	}
	if callErr != nil {
		if errors.Is(callErr, context.Canceled) && h.cancelled(job.ID) {
			return h.callCancelled(log, claim, taskID, attempt, started, resp)
		}
		return h.callFailed(ctx, log, claim, cont, taskID, attempt, started, price, resp, callErr, -1)
	}
	log = log.With("response_id", resp.ID)
	toolErr := resp.ToolError()
	toolRule := cont.Policy().RuleFor(continuation.ErrTool)
	if toolErr != "" && toolRule.Action == continuation.ActionRetry {
		n, err := claim.Failures(ctx, string(continuation.ErrTool))
		if err != nil {
			return err
		}
		if n < toolRule.MaxConsecutiveRetries {
			return h.callFailed(ctx, log, claim, cont, taskID, attempt, started, price, resp,
				&continuation.CallError{Type: continuation.ErrTool, HTTPStatus: 200, Err: fmt.Errorf("%s", toolErr)}, n)
		}
	}

	sum := sha256.Sum256([]byte(resp.Text))
	textSHA := hex.EncodeToString(sum[:])
	usage := store.Usage(resp.Usage)
	cost := Cost(price, usage)
	cumCost := claim.CumCost
	if cost != nil && (cumCost != nil || p.Seq == 0) {
		cumCost = addCost(cumCost, *cost)
	}
	execStart := started
	if job.StartedAt != nil {
		execStart = *job.StartedAt
	}
	records, inQuote := countRecords(job.Format, p.Seq, claim.InQuote, resp.Text)
	toolTruncated := false
	for _, tc := range resp.ToolCalls {
		toolTruncated = toolTruncated || tc.Truncated
	}
	outcome := continuation.Decide(continuation.State{
		Seq: p.Seq, Finish: resp.Finish, Text: resp.Text, TextSHA: textSHA, PreviousSHA: claim.PrevSHA,
		Enabled: cont.EnabledOrDefault(), MaxAttempts: cont.MaxAttempts,
		OutputTokens: claim.CumOutput + usage.Output, CostUSD: cumCost, Elapsed: time.Since(execStart),
		PreviousTail: claim.PrevTail, Budgets: cont.Budgets(), Records: claim.CumRecords + records,
		StreamBroken: resp.StreamBroken, ToolTruncated: toolTruncated, ToolError: toolErr, ToolRule: toolRule,
		// A cancel cancels the task's context; only then is the job read again.
		Cancelled: ctx.Err() != nil && h.cancelled(job.ID),
	}, continuation.DefaultCriteria())
	decision, _ := json.Marshal(outcome)
	var toolCalls json.RawMessage
	if len(resp.ToolCalls) > 0 {
		toolCalls, _ = json.Marshal(resp.ToolCalls)
	}
	nc := store.NewChunk{
		Content: resp.Text, ContentSHA: textSHA, FinishReason: string(resp.Finish), RawStatus: resp.RawStatus,
		IncompleteReason: resp.IncompleteReason, ResponseID: resp.ID, TaskID: taskID, Attempt: attempt,
		Usage: usage, CostUSD: cost, CumOutput: claim.CumOutput + usage.Output, CumCost: cumCost,
		CallStarted: started, Latency: resp.Latency,
		ShouldContinue: outcome.ShouldContinue, StopReason: string(outcome.StopReason), Decision: decision,
		DecisionNote: decisionNote(p.Seq, resp, outcome), Strategy: string(strategy), Prompt: req.Prompt,
		MaxOutputTokens: req.MaxOutputTokens, ToolCalls: toolCalls, CumRecords: claim.CumRecords + records,
		InQuote: inQuote, StreamBroken: resp.StreamBroken, ContentKind: kind,
	}
	switch {
	case resp.Finish == continuation.FinishContentFilter:
		log.Warn("response stopped by the content filter; not continuing")
		nc.Event = &store.EventNote{Level: "warn", Type: "content_filter", Message: "response " + resp.ID + " stopped by the content filter"}
	case resp.StreamBroken:
		log.Warn("the stream broke mid-answer; keeping the text received and continuing from it", "bytes", len(resp.Text))
	case resp.Finish == continuation.FinishIncomplete:
		log.Warn("response incomplete for a reason that cannot be continued; resume from its response id",
			"incomplete_reason", resp.IncompleteReason)
		nc.Event = &store.EventNote{Level: "warn", Type: "incomplete", Message: fmt.Sprintf(
			"response %s incomplete (%s); resume from it", resp.ID, resp.IncompleteReason)}
	}
	if toolErr != "" {
		log.Warn("unusable tool call", "error_type", continuation.ErrTool, "err", toolErr, "action", toolRule.Action)
		if nc.Event == nil {
			nc.Event = &store.EventNote{Level: "warn", Type: "tool_error", Message: toolErr}
		}
	}
	// The save must happen even if the task's context ended during the call:
	// the response is paid for.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	status, err := claim.Save(saveCtx, nc)
	if errors.Is(err, store.ErrChunkExists) {
		log.Warn("chunk was stored by another delivery; this call's response is discarded")
		return nil
	}
	if err != nil {
		return err
	}
	log.Debug("chunk stored", "finish_reason", resp.Finish, "output_tokens", usage.Output,
		"decision", outcome.Decision, "resolved_by", outcome.ResolvedBy, "stop_reason", outcome.StopReason)
	switch status {
	case store.StatusRunning, store.StatusQueued:
		return h.cfg.Tasks.Chunk(ctx, job.ID, p.Seq+1)
	case store.StatusMerging:
		log.Info("generation ended; merging", "stop_reason", outcome.StopReason, "chunks", p.Seq+1)
		return h.cfg.Tasks.Merge(ctx, job.ID)
	}
	return nil
}

// recordCall feeds a model call into the metrics.
func (h *Handlers) recordCall(model string, price *store.Price, resp continuation.Response, err error) {
	if h.cfg.Metrics == nil {
		return
	}
	outcome := string(resp.Finish)
	if err != nil {
		outcome = "error:" + string(continuation.Classify(err).Type)
	}
	u := store.Usage(resp.Usage)
	h.cfg.Metrics.Call(model, outcome, resp.Latency, u.Input, u.Cached, u.Output, u.Reasoning, Cost(price, u))
}

// cancelled reports whether the job was cancelled (asked after a call was
// aborted, so the context of the task is not used).
func (h *Handlers) cancelled(jobID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	j, err := h.cfg.Store.GetJob(ctx, jobID)
	return err == nil && j.Status == store.StatusCancelled
}

// callCancelled records a call aborted by the user's cancel — it may have
// been billed in part — and ends the task without a retry.
func (h *Handlers) callCancelled(log *slog.Logger, c *store.Claim, taskID string, attempt int, started time.Time, resp continuation.Response) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Fail(ctx, store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: false, ErrorType: "cancelled",
		Error: "the job was cancelled during the call; the call was aborted", Started: started, Latency: time.Since(started)}, nil); err != nil {
		return err
	}
	log.Info("model call aborted: the job was cancelled")
	return nil
}

// failBeforeCall records a delivery that stopped before calling the model
// (nothing was billed) and has asynq retry it.
func (h *Handlers) failBeforeCall(ctx context.Context, c *store.Claim, taskID string, attempt int, cause error) error {
	_, err := c.Fail(ctx, store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: true, ErrorType: "internal",
		Error: "no call made: " + cause.Error(), Started: time.Now()}, nil)
	return errors.Join(fmt.Errorf("job %s chunk %d: %w", c.Job.ID, c.Seq, cause), err)
}

// callFailed records a failed attempt and applies the job's error policy:
// retry the task (with backoff, or after a rate limit's Retry-After), or
// stop the job's generation. prior is how many attempts at this chunk failed
// before with the same error type, or -1 when the caller has not asked.
func (h *Handlers) callFailed(ctx context.Context, log *slog.Logger, c *store.Claim, cont Continuation, taskID string,
	attempt int, started time.Time, price *store.Price, resp continuation.Response, callErr error, prior int) error {
	ce := continuation.Classify(callErr)
	msg := ce.Error()
	if resp.ID != "" {
		log = log.With("response_id", resp.ID)
	}
	if ce.Malformed {
		log.Error("malformed response from the provider", "err", msg)
	}
	rule := cont.Policy().RuleFor(ce.Type)
	// A rate-limit wait under the default rule is the provider's pacing,
	// not a failure: it does not count against asynq's failure budget.
	waiting := ce.Type == continuation.ErrRateLimit && rule.Action == continuation.ActionRetry
	f := store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: !waiting,
		ResponseID: resp.ID, HTTPStatus: ce.HTTPStatus, ErrorType: string(ce.Type), Error: msg,
		Started: started, Latency: resp.Latency}
	if resp.Usage != (continuation.Usage{}) {
		u := store.Usage(resp.Usage)
		f.Usage, f.CostUSD = &u, Cost(price, u)
	}
	limit := rule.MaxConsecutiveRetries
	if waiting && limit == 0 {
		limit = h.cfg.MaxRateLimitWaits
	}
	if rule.Action != continuation.ActionRetry {
		prior = 0
	} else if prior < 0 {
		n, err := c.Failures(ctx, string(ce.Type))
		if err != nil {
			c.Release()
			return err
		}
		prior = n
	}
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	var stop continuation.StopReason
	var ignored bool
	switch {
	case rule.Action == continuation.ActionStop:
		stop = continuation.StopErrorForbade
	case rule.Action == continuation.ActionIgnore:
		stop, ignored = continuation.StopErrorForbade, true
	case prior >= limit:
		stop = continuation.StopRetryLimit
	case attempt >= maxRetry:
		// asynq checks the retry count before IsFailure, so even a rate-limit
		// wait would be archived now: stop instead.
		stop = continuation.StopRetryLimit
	}
	var st *store.Stop
	if stop != "" {
		st = &store.Stop{Reason: string(stop), Error: msg, Merge: ignored || cont.OnFailure == OnFailurePartial}
		if ignored {
			st.Error = IgnoredErrorPrefix + msg
		}
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	status, err := c.Fail(saveCtx, f, st)
	if err != nil {
		return err
	}
	if st == nil {
		if waiting {
			wait := max(ce.RetryAfter, time.Second)
			log.Warn("rate limited; waiting as the provider asked", "retry_after", wait, "err", msg)
			return &RetryLater{Delay: wait, Reason: msg}
		}
		delay := backoff(prior)
		log.Warn("model call failed; the error policy retries it", "error_type", ce.Type, "err", msg, "attempt", attempt,
			"retry", prior+1, "of", limit, "in", delay.Round(time.Millisecond))
		return &retryError{delay: delay, err: fmt.Errorf("chunk %d of job %s: %w", c.Seq, c.Job.ID, ce)}
	}
	log.Error("model call failed; stopping the job", "error_type", ce.Type, "err", msg, "stop_reason", stop,
		"action", rule.Action, "status", status)
	if status == store.StatusFailed {
		h.cfg.Metrics.JobFinished(status, string(stop))
		h.notify(ctx, c.Job, status)
	}
	if status == store.StatusMerging {
		return h.cfg.Tasks.Merge(ctx, c.Job.ID)
	}
	return nil
}

// IgnoredErrorPrefix marks a job error the error policy ignored: the job is
// merged as partial even when on_failure is raise_error.
const IgnoredErrorPrefix = "ignored by the error policy: "

// retryError has asynq retry a failed call after the policy's backoff.
type retryError struct {
	delay time.Duration
	err   error
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// backoff is the wait before retry n+1 of a chunk's calls failing with one
// error type: 1s, 2s, 4s, ... at most 5 minutes, ±20% jitter. asynq's
// default starts near 15s and grows as n⁴, far too slow for a passing 500.
func backoff(n int) time.Duration {
	d := min(time.Second<<min(n, 9), 5*time.Minute)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// ensureNext queues whatever a job needs next, after a redelivery found its
// chunk already stored.
func (h *Handlers) ensureNext(ctx context.Context, jobID, status string, nextSeq int) error {
	switch status {
	case store.StatusQueued, store.StatusRunning:
		return h.cfg.Tasks.Chunk(ctx, jobID, nextSeq)
	case store.StatusMerging:
		return h.cfg.Tasks.Merge(ctx, jobID)
	}
	return nil
}

func decodeContinuation(raw json.RawMessage) (Continuation, error) {
	var c Continuation
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("job continuation settings: %w", err)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.OnFailure == "" {
		c.OnFailure = OnFailurePartial
	}
	return c, nil
}

// call makes one model call within the call timeout; a call that runs out
// of it is a timeout error.
func (h *Handlers) call(ctx context.Context, req continuation.CallRequest) (continuation.Response, error) {
	if h.cfg.CallTimeout <= 0 {
		return h.cfg.Provider.Call(ctx, req)
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	resp, err := h.cfg.Provider.Call(cctx, req)
	if err != nil && ctx.Err() == nil && cctx.Err() == context.DeadlineExceeded {
		err = &continuation.CallError{Type: continuation.ErrTimeout,
			Err: fmt.Errorf("no complete reply within the call timeout (%s): %w", h.cfg.CallTimeout, err)}
	}
	return resp, err
}

// reasoningOnly reports a response cut off by the limit with no visible
// text and no tool call: its whole budget went to reasoning.
func reasoningOnly(r continuation.Response) bool {
	return r.Finish == continuation.FinishLength && r.Text == "" && len(r.ToolCalls) == 0 && r.Usage.Reasoning > 0
}

// decisionNote is the one-line summary of a chunk's decision event, or ""
// for a routine continuation — the reply was cut off by the token limit and
// nothing else had a say — which gets no event: every chunk's row keeps its
// whole decision (the chunk_decisions view), and an event per routine chunk
// cost Postgres more than a third of the chunk's own insert.
func decisionNote(seq int, r continuation.Response, o continuation.Outcome) string {
	if o.ShouldContinue && o.ResolvedBy == "finish_reason" && r.Finish == continuation.FinishLength && !r.StreamBroken {
		return ""
	}
	if o.ShouldContinue {
		return fmt.Sprintf("chunk %d: continue (%s)", seq, o.ResolvedBy)
	}
	return fmt.Sprintf("chunk %d: stop, %s (%s)", seq, o.StopReason, o.ResolvedBy)
}
