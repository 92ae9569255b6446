package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/store"
)

// HandlerConfig configures the chunk and merge handlers.
type HandlerConfig struct {
	Store    *store.Store
	Tasks    *Dispatcher
	Provider continuation.Provider
	Logger   *slog.Logger
	// LeaseTTL is how long a claim on a job survives without renewal; a worker
	// that dies mid-call blocks its job for at most this long.
	LeaseTTL time.Duration
	// MaxRateLimitWaits bounds how often one chunk may be refused with 429
	// before the job stops (waits do not use the retry budget).
	MaxRateLimitWaits int
}

// Handlers processes chunk and merge tasks. Both are idempotent under
// asynq's at-least-once delivery.
type Handlers struct {
	cfg    HandlerConfig
	log    *slog.Logger
	prices *priceCache
}

// NewHandlers builds the handlers.
func NewHandlers(cfg HandlerConfig) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.MaxRateLimitWaits <= 0 {
		cfg.MaxRateLimitWaits = 50
	}
	return &Handlers{cfg: cfg, log: cfg.Logger, prices: newPriceCache(cfg.Store, time.Minute)}
}

// Register adds the handlers to an asynq mux.
func (h *Handlers) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeChunk, h.HandleChunk)
	mux.HandleFunc(TypeMerge, h.HandleMerge)
}

// RetryLater is returned by a handler to have the task delivered again after
// Delay without counting as a failure (a rate limit, or another delivery
// holding the job's lease).
type RetryLater struct {
	Delay  time.Duration
	Reason string
}

func (e *RetryLater) Error() string { return fmt.Sprintf("retry in %s: %s", e.Delay, e.Reason) }

// RetryDelay is the asynq RetryDelayFunc: a RetryLater's own delay, else
// asynq's default backoff.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	var rl *RetryLater
	if errors.As(err, &rl) && rl.Delay > 0 {
		return rl.Delay
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// IsFailure is the asynq IsFailure func: waiting is not failing.
func IsFailure(err error) bool {
	var rl *RetryLater
	return !errors.As(err, &rl)
}

// HandleChunk produces one chunk: claim, call, persist, decide, enqueue next.
func (h *Handlers) HandleChunk(ctx context.Context, t *asynq.Task) error {
	var p ChunkPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" {
		return fmt.Errorf("chunk task payload %q: %v: %w", t.Payload(), err, asynq.SkipRetry)
	}
	log := h.log.With("job_id", p.JobID, "seq", p.Seq)
	attempt, _ := asynq.GetRetryCount(ctx)
	token := uuid.NewString()
	claim, err := h.cfg.Store.ClaimChunk(ctx, p.JobID, p.Seq, token, h.cfg.LeaseTTL, attempt)
	if err != nil {
		return err
	}
	switch claim.Outcome {
	case store.Claimed:
	case store.AlreadyStored:
		// A redelivery of a stored chunk: no model call; make sure the job's
		// next step is queued (the first delivery may have died before that).
		log.Debug("chunk already stored; ensuring the next step is queued")
		return h.ensureNext(ctx, claim.Job)
	case store.Leased:
		// Check back soon rather than at lease expiry: the holder usually
		// finishes well before its lease runs out.
		wait := min(max(time.Until(claim.LeaseUntil)+100*time.Millisecond, time.Second), 3*time.Second)
		log.Debug("another delivery holds the job; retrying later", "wait", wait)
		return &RetryLater{Delay: wait, Reason: "another delivery is producing this chunk"}
	case store.JobDone, store.Ahead, store.Missing:
		log.Debug("nothing to do", "outcome", claim.Outcome.String(), "status", claim.Job.Status)
		return nil
	}
	job := claim.Job
	cont, err := decodeContinuation(job.Continuation)
	if err != nil {
		h.releaseLease(job.ID, p.Seq, token, claim.CallID, err)
		return err
	}
	req := continuation.CallRequest{
		Model:           job.Model,
		Instructions:    job.Instructions,
		MaxOutputTokens: job.MaxOutputTokens,
	}
	prevID := ""
	if job.LastResponseID != nil {
		prevID = *job.LastResponseID
	}
	if p.Seq == 0 {
		if err := json.Unmarshal(job.Input, &req.Input); err != nil {
			err = fmt.Errorf("job %s input: %w", job.ID, err)
			h.releaseLease(job.ID, p.Seq, token, claim.CallID, err)
			return err
		}
	} else {
		req.PreviousID = prevID
		req.Prompt = continuation.ContinuePrompt(job.Format)
		log.Info("continuation started", "response_id", prevID, "attempt", attempt)
	}

	// Everything that can fail goes before the call, so a failure never
	// leaves a paid-for response unstored.
	price, err := h.prices.get(ctx, job.Model)
	if err != nil {
		h.releaseLease(job.ID, p.Seq, token, claim.CallID, err)
		return err
	}
	resp, callErr := h.call(ctx, log, job.ID, token, req)
	if callErr != nil {
		return h.callFailed(ctx, log, job, cont, p.Seq, token, claim.CallID, resp, callErr)
	}
	log = log.With("response_id", resp.ID)

	sum := sha256.Sum256([]byte(resp.Text))
	textSHA, prevSHA := hex.EncodeToString(sum[:]), ""
	if job.LastChunkSHA != nil {
		prevSHA = *job.LastChunkSHA
	}
	outcome := continuation.Decide(continuation.State{
		Seq: p.Seq, Finish: resp.Finish, Text: resp.Text, TextSHA: textSHA, PreviousSHA: prevSHA,
		Enabled: cont.EnabledOrDefault(), MaxAttempts: cont.MaxAttempts,
	}, continuation.DefaultCriteria())
	decision, _ := json.Marshal(outcome)
	usage := store.Usage(resp.Usage)
	nc := store.NewChunk{
		JobID: job.ID, Seq: p.Seq, LeaseToken: token, CallID: claim.CallID,
		Content: resp.Text, ContentSHA: textSHA, FinishReason: string(resp.Finish), RawStatus: resp.RawStatus,
		IncompleteReason: resp.IncompleteReason, ResponseID: resp.ID, Usage: usage,
		CostUSD: Cost(price, usage), Latency: resp.Latency,
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
	status, err := h.cfg.Store.SaveChunk(ctx, nc)
	if errors.Is(err, store.ErrLeaseLost) {
		log.Warn("lease lost during the call; another delivery owns this chunk (the call is recorded)")
		return nil
	}
	if err != nil {
		return err
	}
	log.Debug("chunk stored", "finish_reason", resp.Finish, "output_tokens", usage.Output,
		"decision", outcome.Decision, "resolved_by", outcome.ResolvedBy, "stop_reason", outcome.StopReason)
	switch status {
	case store.StatusRunning:
		return h.cfg.Tasks.Chunk(ctx, job.ID, p.Seq+1)
	case store.StatusMerging:
		log.Info("generation ended; merging", "stop_reason", outcome.StopReason, "chunks", p.Seq+1)
		return h.cfg.Tasks.Merge(ctx, job.ID)
	}
	return nil
}

// call makes the model call while keeping the job's lease alive; if the
// lease is lost (another delivery took over) the call is abandoned.
func (h *Handlers) call(ctx context.Context, log *slog.Logger, jobID, token string, req continuation.CallRequest) (continuation.Response, error) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(h.cfg.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				ok, err := h.cfg.Store.RenewLease(ctx, jobID, token, h.cfg.LeaseTTL)
				if err != nil {
					log.Warn("could not renew the job lease", "err", err)
					continue
				}
				if !ok {
					log.Warn("job lease lost mid-call (cancelled, or taken over); abandoning the call")
					cancel()
					return
				}
			}
		}
	}()
	return h.cfg.Provider.Call(callCtx, req)
}

// callFailed records a failed attempt and decides between retrying the task
// and stopping the job.
func (h *Handlers) callFailed(ctx context.Context, log *slog.Logger, job store.Job, cont Continuation, seq int,
	token string, callID int64, resp continuation.Response, callErr error) error {
	ce := continuation.Classify(callErr)
	msg := ce.Error()
	if resp.ID != "" {
		log = log.With("response_id", resp.ID)
	}
	failed, err := h.cfg.Store.FailCall(ctx, job.ID, token, seq, store.CallFailure{
		CallID: callID, HTTPStatus: ce.HTTPStatus, ErrorType: string(ce.Type), Error: msg, Latency: resp.Latency,
	})
	if err != nil {
		return err
	}
	if ce.Malformed {
		log.Error("malformed response from the provider", "err", msg)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	var stop continuation.StopReason
	switch {
	case !ce.Retryable():
		stop = continuation.StopErrorForbade
	case ce.Type == continuation.ErrRateLimit && failed < h.cfg.MaxRateLimitWaits:
		wait := max(ce.RetryAfter, time.Second)
		log.Warn("rate limited; waiting as the provider asked", "retry_after", wait, "err", msg)
		return &RetryLater{Delay: wait, Reason: msg}
	case ce.Type == continuation.ErrRateLimit, retried >= maxRetry:
		stop = continuation.StopRetryLimit
	default:
		log.Warn("model call failed; will retry", "error_type", ce.Type, "err", msg, "retried", retried)
		return fmt.Errorf("chunk %d of job %s: %w", seq, job.ID, ce)
	}
	log.Error("model call failed; stopping the job", "error_type", ce.Type, "err", msg, "stop_reason", stop)
	status, err := h.cfg.Store.StopJob(ctx, job.ID, string(stop), msg, cont.OnFailure == OnFailurePartial)
	if err != nil {
		return err
	}
	if status == store.StatusMerging {
		return h.cfg.Tasks.Merge(ctx, job.ID)
	}
	return nil
}

// releaseLease gives up a claim before any model call was made: the attempt
// row is closed as failed (no call happened, nothing was billed) and the
// retry can claim at once.
func (h *Handlers) releaseLease(jobID string, seq int, token string, callID int64, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.cfg.Store.FailCall(ctx, jobID, token, seq, store.CallFailure{CallID: callID, ErrorType: "internal",
		Error: "no call made: " + cause.Error()}); err != nil {
		h.log.Warn("could not release the job lease; it expires on its own", "job_id", jobID, "err", err)
	}
}

// ensureNext queues whatever a job needs next, after a redelivery found its
// chunk already stored.
func (h *Handlers) ensureNext(ctx context.Context, j store.Job) error {
	switch j.Status {
	case store.StatusQueued, store.StatusRunning:
		return h.cfg.Tasks.Chunk(ctx, j.ID, j.NextSeq)
	case store.StatusMerging:
		return h.cfg.Tasks.Merge(ctx, j.ID)
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
