package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/breaker"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/throttle"
	"github.com/carryover/carryover/internal/tracing"
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
	// Webhooks says where and how webhooks are sent: the egress policy
	// (checked on each URL, and on each address when connecting), the
	// optional proxy, the timeouts.
	Webhooks egress.ClientConfig
	// WebhookBreaker configures the per-endpoint circuit breaker.
	WebhookBreaker breaker.Config
	// MaxRateLimitWaits bounds how often one chunk may be refused with 429
	// before the job stops (waits do not use the retry budget).
	MaxRateLimitWaits int
	// DefaultStrategy continues jobs that name no strategy: the provider's
	// natural one (stateful for OpenAI's Responses API).
	DefaultStrategy carryovertype.Strategy
	// CallTimeout bounds one model call; 0 means only the task's timeout.
	// A background call is timed from its creation, across deliveries.
	CallTimeout time.Duration
	// Background runs stateful calls detached (the Responses API's
	// background mode) when the provider can; a job may opt out.
	Background bool
	// BackgroundHold is the longest a task waits on a background call in
	// its slot (only while at most half the slots are busy) before it ends
	// and polls again later; 0 never holds.
	BackgroundHold time.Duration
	// Concurrency is the worker's task slots, for that rule.
	Concurrency int
	// TracerProvider makes the spans of tasks and model calls; nil is the
	// global provider (a no-op one unless the program set another).
	TracerProvider trace.TracerProvider
	// Throttle paces model calls to the provider's rate limits across
	// every worker; nil calls without pacing.
	Throttle *throttle.Throttle
}

// DefaultMaxRateLimitWaits is HandlerConfig.MaxRateLimitWaits when unset:
// how many 429s in a row one chunk waits out before its job stops.
const DefaultMaxRateLimitWaits = 50

// Handlers processes chunk and merge tasks. Both are idempotent under
// asynq's at-least-once delivery.
type Handlers struct {
	cfg      HandlerConfig
	busy     atomic.Int64 // chunk tasks running now
	latency  *latencyBook
	log      *slog.Logger
	prices   *priceCache
	schemas  *schemaCache
	webhooks *http.Client
	breaker  *breaker.Breaker
	tracer   trace.Tracer
}

// NewHandlers builds the handlers.
func NewHandlers(cfg HandlerConfig) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRateLimitWaits <= 0 {
		cfg.MaxRateLimitWaits = DefaultMaxRateLimitWaits
	}
	if cfg.BackgroundHold < 0 {
		cfg.BackgroundHold = 0
	}
	return &Handlers{cfg: cfg, log: cfg.Logger, prices: newPriceCache(cfg.Store, time.Minute), latency: newLatencyBook(),
		schemas:  newSchemaCache(DefaultSchemaCacheSize, cfg.Metrics.SchemaCompiled),
		webhooks: egress.NewClient(cfg.Webhooks), breaker: breaker.New(cfg.WebhookBreaker), tracer: tracing.Tracer(cfg.TracerProvider)}
}

// Register adds the handlers to an asynq mux. The webhook handler is among
// them for webhook tasks queued on the merge queue by earlier versions;
// RegisterWebhooks serves the webhook queue.
func (h *Handlers) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeChunk, h.timedChunk)
	mux.HandleFunc(TypeMerge, h.HandleMerge)
	mux.HandleFunc(TypeWebhook, h.HandleWebhook)
}

// RegisterWebhooks adds the webhook handler to the mux of the webhook
// queue's server.
func (h *Handlers) RegisterWebhooks(mux *asynq.ServeMux) {
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
	start := time.Now()
	h.busy.Add(1)
	err := h.HandleChunk(ctx, t)
	h.busy.Add(-1)
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

// recordCall feeds a model call into the metrics.
func (h *Handlers) recordCall(price *store.Price, resp continuation.Response, err error) {
	if h.cfg.Metrics == nil {
		return
	}
	outcome := string(resp.Finish)
	if err != nil {
		outcome = "error:" + string(continuation.Classify(err).Type)
	}
	u := store.Usage(resp.Usage)
	h.cfg.Metrics.Call(modelLabel(price), outcome, resp.Latency, u.Input, u.Cached, u.Output, u.Reasoning, Cost(price, u))
}

// modelLabel is the model a call's metrics are reported under: the price
// table's name for it (gpt-4.1-mini for gpt-4.1-mini-2025-04-14 too), or
// metrics.OtherModel. Tenants choose model names; as label values they
// would make series without bound.
func modelLabel(price *store.Price) string {
	if price == nil {
		return metrics.OtherModel
	}
	return price.Model
}

// cancelled reports whether the job was cancelled. It is asked after a call
// was aborted, when the task's context has ended, so it keeps only ctx's
// values.
func (h *Handlers) cancelled(ctx context.Context, jobID string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	j, err := h.cfg.Store.GetJob(ctx, jobID)
	return err == nil && j.Status == store.StatusCancelled
}

// callCancelled records a call aborted by the user's cancel — it may have
// been billed in part — and ends the task without a retry.
func (h *Handlers) callCancelled(ctx context.Context, r *chunkRun) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if r.claim.Background != nil {
		return h.cancelBackground(ctx, r.claim)
	}
	if _, err := r.claim.Fail(ctx, store.CallFailure{TaskID: r.taskID, Attempt: r.attempt, Counted: false, ErrorType: "cancelled",
		Error: "the job was cancelled during the call; the call was aborted", Started: r.started, Latency: time.Since(r.started),
		Sent: r.sent.Load()}, nil); err != nil {
		return err
	}
	r.log.Info("model call aborted: the job was cancelled")
	return nil
}

// failBeforeCall records a delivery that stopped before calling the model
// (nothing was billed) and has asynq retry it.
func (h *Handlers) failBeforeCall(ctx context.Context, r *chunkRun, cause error) error {
	c := r.claim
	_, err := c.Fail(ctx, store.CallFailure{TaskID: r.taskID, Attempt: r.attempt, Counted: true, ErrorType: "internal",
		Error: "no call made: " + cause.Error(), Started: time.Now()}, nil)
	return errors.Join(fmt.Errorf("job %s chunk %d: %w", c.Job.ID, c.Seq, cause), err)
}

// callFailed records a failed attempt and applies the job's error policy:
// retry the task (with backoff, or after a rate limit's Retry-After), or
// stop the job's generation. prior is how many attempts at this chunk failed
// before with the same error type, or -1 when the caller has not asked.
func (h *Handlers) callFailed(ctx context.Context, r *chunkRun, callErr error, prior int) error {
	ce := continuation.Classify(callErr)
	log := r.log
	if r.resp.ID != "" {
		log = log.With("response_id", r.resp.ID)
	}
	if ce.Malformed {
		log.Error("malformed response from the provider", "err", ce.Error())
	}
	rule := r.cont.Policy().RuleFor(ce.Type)
	// A rate-limit wait under the default rule is the provider's pacing,
	// not a failure: it does not count against asynq's failure budget.
	waiting := ce.Type == carryovertype.ErrRateLimit && rule.Action == carryovertype.ActionRetry
	limit := rule.MaxConsecutiveRetries
	if waiting && limit == 0 {
		limit = h.cfg.MaxRateLimitWaits
	}
	if rule.Action != carryovertype.ActionRetry {
		prior = 0
	} else if prior < 0 {
		n, err := r.claim.Failures(ctx, string(ce.Type))
		if err != nil {
			log.Error("could not count the chunk's failed calls", "err", err)
			r.claim.Release()
			return err
		}
		prior = n
	}
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	stop := policyStop(rule, prior, limit, r.attempt, maxRetry)
	st := r.stopFor(stop, rule, ce.Error())
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	status, err := r.claim.Fail(saveCtx, r.failure(ce, waiting), st)
	if err != nil {
		log.Error("could not record the failed call", "error_type", ce.Type, "call_err", ce.Error(), "err", err)
		return err
	}
	if st == nil {
		return r.retry(log, ce, waiting, prior, limit)
	}
	log.Error("model call failed; stopping the job", "error_type", ce.Type, "err", ce.Error(), "stop_reason", stop,
		"action", rule.Action, "status", status)
	if status == store.StatusFailed {
		h.cfg.Metrics.JobFinished(status, string(stop))
		h.notify(ctx, r.claim.Job, status)
	}
	if status == store.StatusMerging {
		return h.cfg.Tasks.Merge(ctx, r.claim.Job.ID)
	}
	return nil
}

// policyStop is the stop reason a failed call under rule ends generation
// with, or "" when the call is to be retried. prior is how many attempts
// failed before with the same error type, limit how many the rule allows.
func policyStop(rule carryovertype.Rule, prior, limit, attempt, maxRetry int) continuation.StopReason {
	switch {
	case rule.Action == carryovertype.ActionStop, rule.Action == carryovertype.ActionIgnore:
		return continuation.StopErrorForbade
	case prior >= limit:
		return continuation.StopRetryLimit
	case attempt >= maxRetry:
		// asynq checks the retry count before IsFailure, so even a rate-limit
		// wait would be archived now: stop instead.
		return continuation.StopRetryLimit
	}
	return ""
}

// stopFor is the job's stop for a failed call, nil when it is retried. An
// ignored error is merged (as partial) whatever on_failure says.
func (r *chunkRun) stopFor(stop continuation.StopReason, rule carryovertype.Rule, msg string) *store.Stop {
	if stop == "" {
		return nil
	}
	ignored := rule.Action == carryovertype.ActionIgnore
	st := &store.Stop{Reason: string(stop), Error: msg, Merge: ignored || r.cont.OnFailure == carryovertype.OnFailurePartial}
	if ignored {
		st.Error = IgnoredErrorPrefix + msg
	}
	return st
}

// failure is the record of a failed call; a rate-limit wait is not counted
// as a failure, and whatever usage the response reported is priced.
func (r *chunkRun) failure(ce *continuation.CallError, waiting bool) store.CallFailure {
	f := store.CallFailure{TaskID: r.taskID, Attempt: r.attempt, Counted: !waiting,
		ResponseID: r.resp.ID, HTTPStatus: ce.HTTPStatus, ErrorType: string(ce.Type), Error: ce.Error(),
		Started: r.started, Latency: r.resp.Latency,
		// An answer (any status), a response id or a background call in
		// flight says the provider had the request as surely as the trace.
		Sent: r.sent.Load() || ce.HTTPStatus != 0 || r.resp.ID != "" || r.claim.Background != nil}
	if bg := r.claim.Background; bg != nil && bg.ResponseID == r.resp.ID {
		f.CloseBackground = store.BackgroundFailed // a retry makes a new call
	}
	if r.resp.Usage != (continuation.Usage{}) {
		u := store.Usage(r.resp.Usage)
		f.Usage, f.CostUSD = &u, Cost(r.price, u)
	}
	return f
}

// retry is the task's error for a failed call the policy retries: a wait
// as long as the provider asked, or the policy's backoff.
func (r *chunkRun) retry(log *slog.Logger, ce *continuation.CallError, waiting bool, prior, limit int) error {
	msg := ce.Error()
	if waiting {
		wait := max(ce.RetryAfter, time.Second)
		log.Warn("rate limited; waiting as the provider asked", "retry_after", wait, "err", msg)
		return &RetryLater{Delay: wait, Reason: msg}
	}
	delay := backoff(prior)
	log.Warn("model call failed; the error policy retries it", "error_type", ce.Type, "err", msg, "attempt", r.attempt,
		"retry", prior+1, "of", limit, "in", delay.Round(time.Millisecond))
	return &retryError{delay: delay, err: fmt.Errorf("chunk %d of job %s: %w", r.claim.Seq, r.claim.Job.ID, ce)}
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

func decodeContinuation(raw json.RawMessage) (carryovertype.Continuation, error) {
	var c carryovertype.Continuation
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("job continuation settings: %w", err)
	}
	return continuationDefaults(c), nil
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
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = &continuation.CallError{Type: carryovertype.ErrTimeout,
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
