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
	return &Handlers{cfg: cfg, log: cfg.Logger, prices: newPriceCache(cfg.Store, time.Minute),
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
	d := min(time.Second<<min(n, 9), 5*time.Minute)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
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
	if err := claim.MarkRunning(ctx); err != nil {
		return err
	}
	// Everything that can fail goes before the call, so a failure never
	// leaves a paid-for response unstored.
	cont, err := decodeContinuation(job.Continuation)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	price, err := h.prices.get(ctx, job.Model)
	if err != nil {
		return h.failBeforeCall(ctx, claim, taskID, attempt, err)
	}
	req := continuation.CallRequest{Model: job.Model, Instructions: job.Instructions, MaxOutputTokens: job.MaxOutputTokens}
	if p.Seq == 0 {
		if err := json.Unmarshal(job.Input, &req.Input); err != nil {
			return h.failBeforeCall(ctx, claim, taskID, attempt, fmt.Errorf("job input: %w", err))
		}
	} else {
		req.PreviousID = claim.PrevResponseID
		req.Prompt = continuation.ContinuePrompt(job.Format)
		log.Info("continuation started", "response_id", claim.PrevResponseID, "attempt", attempt)
	}

	started := time.Now()
	resp, callErr := h.cfg.Provider.Call(ctx, req)
	h.recordCall(job.Model, price, resp, callErr)
	if callErr != nil {
		if errors.Is(callErr, context.Canceled) && h.cancelled(job.ID) {
			return h.callCancelled(log, claim, taskID, attempt, started, resp)
		}
		return h.callFailed(ctx, log, claim, cont, taskID, attempt, started, price, resp, callErr)
	}
	log = log.With("response_id", resp.ID)

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
	outcome := continuation.Decide(continuation.State{
		Seq: p.Seq, Finish: resp.Finish, Text: resp.Text, TextSHA: textSHA, PreviousSHA: claim.PrevSHA,
		Enabled: cont.EnabledOrDefault(), MaxAttempts: cont.MaxAttempts,
		OutputTokens: claim.CumOutput + usage.Output, CostUSD: cumCost, Elapsed: time.Since(execStart),
		PreviousTail: claim.PrevTail, Budgets: cont.Budgets(),
	}, continuation.DefaultCriteria())
	decision, _ := json.Marshal(outcome)
	nc := store.NewChunk{
		Content: resp.Text, ContentSHA: textSHA, FinishReason: string(resp.Finish), RawStatus: resp.RawStatus,
		IncompleteReason: resp.IncompleteReason, ResponseID: resp.ID, TaskID: taskID, Attempt: attempt,
		Usage: usage, CostUSD: cost, CumOutput: claim.CumOutput + usage.Output, CumCost: cumCost,
		CallStarted: started, Latency: resp.Latency,
		ShouldContinue: outcome.ShouldContinue, StopReason: string(outcome.StopReason), Decision: decision,
	}
	switch resp.Finish {
	case continuation.FinishContentFilter:
		log.Warn("response stopped by the content filter; not continuing")
		nc.Event = &store.EventNote{Level: "warn", Type: "content_filter", Message: "response " + resp.ID + " stopped by the content filter"}
	case continuation.FinishIncomplete:
		log.Warn("response incomplete for a reason that cannot be continued; resume from its response id",
			"incomplete_reason", resp.IncompleteReason)
		nc.Event = &store.EventNote{Level: "warn", Type: "incomplete", Message: fmt.Sprintf(
			"response %s incomplete (%s); resume from it", resp.ID, resp.IncompleteReason)}
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
	if _, _, err := c.Fail(ctx, store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: false, ErrorType: "cancelled",
		Error: "the job was cancelled during the call; the call was aborted", Started: started, Latency: time.Since(started)}, nil); err != nil {
		return err
	}
	log.Info("model call aborted: the job was cancelled")
	return nil
}

// failBeforeCall records a delivery that stopped before calling the model
// (nothing was billed) and has asynq retry it.
func (h *Handlers) failBeforeCall(ctx context.Context, c *store.Claim, taskID string, attempt int, cause error) error {
	_, _, err := c.Fail(ctx, store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: true, ErrorType: "internal",
		Error: "no call made: " + cause.Error(), Started: time.Now()}, nil)
	return errors.Join(fmt.Errorf("job %s chunk %d: %w", c.Job.ID, c.Seq, cause), err)
}

// callFailed records a failed attempt and decides between retrying the task
// and stopping the job.
func (h *Handlers) callFailed(ctx context.Context, log *slog.Logger, c *store.Claim, cont Continuation, taskID string,
	attempt int, started time.Time, price *store.Price, resp continuation.Response, callErr error) error {
	ce := continuation.Classify(callErr)
	msg := ce.Error()
	if resp.ID != "" {
		log = log.With("response_id", resp.ID)
	}
	if ce.Malformed {
		log.Error("malformed response from the provider", "err", msg)
	}
	f := store.CallFailure{TaskID: taskID, Attempt: attempt, Counted: ce.Type != continuation.ErrRateLimit,
		ResponseID: resp.ID, HTTPStatus: ce.HTTPStatus, ErrorType: string(ce.Type), Error: msg,
		Started: started, Latency: resp.Latency}
	if resp.Usage != (continuation.Usage{}) {
		u := store.Usage(resp.Usage)
		f.Usage, f.CostUSD = &u, Cost(price, u)
	}
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	var stop continuation.StopReason
	switch {
	case !ce.Retryable():
		stop = continuation.StopErrorForbade
	case attempt >= maxRetry:
		// asynq checks the retry count before IsFailure, so even a rate-limit
		// wait would be archived now: stop instead.
		stop = continuation.StopRetryLimit
	}
	var st *store.Stop
	if stop != "" {
		st = &store.Stop{Reason: string(stop), Error: msg, Merge: cont.OnFailure == OnFailurePartial}
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	failed, status, err := c.Fail(saveCtx, f, st)
	if err != nil {
		return err
	}
	if ce.Type == continuation.ErrRateLimit && st == nil {
		if failed < h.cfg.MaxRateLimitWaits {
			wait := max(ce.RetryAfter, time.Second)
			log.Warn("rate limited; waiting as the provider asked", "retry_after", wait, "err", msg)
			return &RetryLater{Delay: wait, Reason: msg}
		}
		return h.stopAfterFailure(ctx, log, c.Job.ID, continuation.StopRetryLimit, msg, cont)
	}
	if st == nil {
		log.Warn("model call failed; will retry", "error_type", ce.Type, "err", msg, "attempt", attempt)
		return fmt.Errorf("chunk %d of job %s: %w", c.Seq, c.Job.ID, ce)
	}
	log.Error("model call failed; stopping the job", "error_type", ce.Type, "err", msg, "stop_reason", stop, "status", status)
	if status == store.StatusFailed {
		h.cfg.Metrics.JobFinished(status, string(stop))
		h.notify(ctx, c.Job, status)
	}
	if status == store.StatusMerging {
		return h.cfg.Tasks.Merge(ctx, c.Job.ID)
	}
	return nil
}

// stopAfterFailure ends a job's generation after its claim was released.
func (h *Handlers) stopAfterFailure(ctx context.Context, log *slog.Logger, jobID string, reason continuation.StopReason, msg string, cont Continuation) error {
	status, err := h.cfg.Store.StopJob(ctx, jobID, store.Stop{Reason: string(reason), Error: msg, Merge: cont.OnFailure == OnFailurePartial})
	if err != nil {
		return err
	}
	log.Error("model call failed too often; stopping the job", "stop_reason", reason, "status", status, "err", msg)
	if status == store.StatusFailed {
		h.cfg.Metrics.JobFinished(status, string(reason))
		if j, err := h.cfg.Store.GetJob(ctx, jobID); err == nil {
			h.notify(ctx, j, status)
		}
	}
	if status == store.StatusMerging {
		return h.cfg.Tasks.Merge(ctx, jobID)
	}
	return nil
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
