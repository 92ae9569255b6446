package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/store"
)

// Detached calls.
//
// A stateful call runs detached on a provider that can (the Responses API's
// background mode): the chunk task creates the response, commits its id to
// Postgres (background_calls) before waiting on it, and then waits by
// polling. While the response is queued or in progress the task may end and
// come back later — a RetryLater under the chunk's own TaskID, which asynq
// holds in its retry set without counting a failure — so a worker's slots
// bound the calls being started and read, not the calls in flight. A
// delivery that finds a committed, unfinished call for its chunk resumes it:
// a crash mid-call never pays for the chunk twice. Only when the provider no
// longer knows the id (404: background responses are kept about ten minutes
// after they end) is a new call made, and the lost one recorded as such.
//
// The split between holding a slot and re-scheduling: a task holds its slot
// only when the call is expected to end within BackgroundHold of its start
// (by the latency estimate of its model and budget, or for one of a new
// key's pilots, by its doubling polls) and at most half the worker's slots
// are busy; otherwise it re-schedules at once. Holding saves the
// re-scheduling's latency (asynq runs a retry on a whole second) for short
// calls on an idle worker; under load every slot goes to starting and
// reading calls.

// Defaults of the detached wait.
const (
	// DefaultBackgroundHold is the worker's --background-hold by default.
	DefaultBackgroundHold = 2 * time.Second
	// firstPoll is the first poll's delay with no estimate of the call's
	// latency; later polls back off by doubling the time since the start.
	firstPoll = 250 * time.Millisecond
	// coldGap is where the doubling gaps of a call with no estimate stop
	// doubling.
	coldGap = 8 * time.Second
	// pilotGap is where a pilot's doubling gaps stop doubling (nextPoll).
	pilotGap = time.Second
	// pilotsPerKey is how many calls of a model and budget with no
	// estimate a worker polls closely (latencyBook.pilot).
	pilotsPerKey = 4
	// maxPollGap caps the time between two polls of one call.
	maxPollGap = 30 * time.Second
	// deferredFloor is the shortest re-scheduled wait: asynq keeps a
	// retry's time in whole seconds.
	deferredFloor = time.Second
)

// waiting is the error of a detached call that is not done yet: the task
// ends and comes back after delay.
type waiting struct {
	delay  time.Duration
	status string
}

func (w *waiting) Error() string {
	return fmt.Sprintf("background response %s; polling again in %s", w.status, w.delay)
}

// detacherFor is the detached transport for the run's call, or nil for a
// synchronous one. A call already in flight is always resumed detached,
// whatever the switches say now.
func (h *Handlers) detacherFor(r *chunkRun) continuation.Detacher {
	d, ok := h.cfg.Provider.(continuation.Detacher)
	switch {
	case !ok:
		return nil
	case r.claim.Background != nil:
		return d
	case r.strategy != carryovertype.StrategyStateful || !h.cfg.Background:
		return nil
	case r.cont.Background != nil && !*r.cont.Background:
		return nil
	}
	return d
}

// detached makes the run's call in background mode, or resumes the one in
// flight, and waits for it as the wait plan says: a terminal response, or a
// *waiting error when the task should end and come back.
func (h *Handlers) detached(ctx context.Context, r *chunkRun) (continuation.Response, error) {
	c := r.claim
	// A delivery that finds the call in flight waited in the queue (or
	// replaces one that died): it polls at once.
	pollNow := c.Background != nil
	if pollNow {
		r.sent.Store(true) // an earlier delivery sent it
	}
	if c.Background == nil {
		resp, err := h.startBackground(ctx, r)
		if err != nil || !resp.Pending() {
			return resp, err
		}
	} else if !r.resumeChecked {
		h.noteResume(ctx, r)
	}
	for {
		bg := c.Background
		if !pollNow {
			wait, hold := h.waitPlan(ctx, r, bg)
			if !hold {
				return continuation.Response{ID: bg.ResponseID}, &waiting{delay: wait, status: r.lastStatus}
			}
			if !sleep(ctx, wait) {
				return continuation.Response{ID: bg.ResponseID}, ctx.Err()
			}
		}
		pollNow = false
		if resp, done, err := h.pollOnce(ctx, r, bg); done {
			return resp, err
		}
	}
}

// noteResume logs and counts a delivery that found the call in flight and
// is not the one that started it (that one died).
func (h *Handlers) noteResume(ctx context.Context, r *chunkRun) {
	bg := r.claim.Background
	r.resumeChecked = true
	// Re-scheduled polls are the creating delivery again (same task, same
	// attempt: a wait is not a failure); any other delivery picked the call
	// up after the one before it died.
	r.resumed = r.taskID != bg.TaskID || r.attempt != bg.Attempt
	if !r.resumed {
		return
	}
	r.log.Info("resuming the background call an earlier delivery started", "response_id", bg.ResponseID,
		"created_by_task", bg.TaskID, "created_by_attempt", bg.Attempt)
	h.cfg.Metrics.Background("resumed")
	if err := h.cfg.Store.ResumedBackground(ctx, bg.ResponseID); err != nil {
		r.log.Warn("could not record the resume of the background call", "response_id", bg.ResponseID, "err", err)
	}
}

// pollOnce reads bg once. done says the wait is over, with the response
// (or the error) to go on with; otherwise the call is still running — or
// could not be read, or was replaced by a new one after it expired — and
// the wait goes on.
func (h *Handlers) pollOnce(ctx context.Context, r *chunkRun, bg *store.BackgroundCall) (continuation.Response, bool, error) {
	resp, err := r.detacher.Poll(ctx, bg.ResponseID, bg.MaxOutputTokens)
	switch {
	case ctx.Err() != nil:
		return continuation.Response{ID: bg.ResponseID}, true, ctx.Err()
	case expired(err):
		if err := h.recordExpired(ctx, r, bg); err != nil {
			r.log.Error("could not record the expired background call", "response_id", bg.ResponseID, "err", err)
			return continuation.Response{}, true, err
		}
		resp, err := h.startBackground(ctx, r)
		return resp, err != nil || !resp.Pending(), err
	case err != nil && resp.RawStatus == "":
		// The poll did not get the response (a transport error, a 5xx or
		// 429 on the read): the call is still there.
		r.log.Warn("could not poll the background call; polling again later", "response_id", bg.ResponseID, "err", err)
		r.lastStatus = "unreadable"
	case resp.Pending():
		h.polled(r, bg, resp.RawStatus)
	default:
		return h.finished(r, bg, resp), true, err
	}
	if h.cfg.CallTimeout > 0 && time.Since(bg.Created) > h.cfg.CallTimeout {
		resp, err := h.timedOut(ctx, r, bg)
		return resp, true, err
	}
	return continuation.Response{}, false, nil
}

// timedOut cancels a background call that outlived the call timeout; the
// cancel's usage is what it was billed, and the error is a timeout for the
// error policy.
func (h *Handlers) timedOut(ctx context.Context, r *chunkRun, bg *store.BackgroundCall) (continuation.Response, error) {
	resp, err := r.detacher.Cancel(ctx, bg.ResponseID, bg.MaxOutputTokens)
	if err != nil && resp.RawStatus == "" {
		r.log.Warn("could not cancel the background call that timed out", "response_id", bg.ResponseID, "err", err)
	}
	resp.ID, resp.Latency, resp.Finish = bg.ResponseID, time.Since(bg.Created), continuation.FinishError
	r.started = bg.Created
	return resp, &continuation.CallError{Type: carryovertype.ErrTimeout,
		Err: fmt.Errorf("background response %s not finished within the call timeout (%s); cancelled", bg.ResponseID, h.cfg.CallTimeout)}
}

// startNext starts the next chunk's background call from the delivery
// that stored this one, and schedules the next chunk's task for when that
// call should be done: one task per chunk, not a task to start the call and
// another to read it. The task is queued before the call is made, so a
// crash in between costs only the wait (the task then makes the call); a
// call that would be held for is queued right after it is made, to be
// waited on in the next task's slot. Anything unusual — the job moved on,
// the request cannot be built, the call failed — leaves the next chunk to
// its task, as without background mode.
func (h *Handlers) startNext(ctx context.Context, jobID string, seq int) error {
	next, err := h.cfg.Store.ClaimChunk(ctx, jobID, seq)
	if err != nil || next.Outcome != store.Claimed {
		return h.cfg.Tasks.Chunk(ctx, jobID, seq)
	}
	defer next.Release()
	n := &chunkRun{seq: seq, claim: next, taskID: ChunkTaskID(jobID, seq), log: h.log.With("job_id", jobID, "seq", seq)}
	if err := h.prepare(ctx, n); err != nil || n.detacher == nil || next.Background != nil {
		return h.cfg.Tasks.Chunk(ctx, jobID, seq)
	}
	wait, hold := h.waitPlan(ctx, n, &store.BackgroundCall{Created: time.Now(), MaxOutputTokens: n.req.MaxOutputTokens})
	if !hold {
		if err := h.cfg.Tasks.ChunkIn(ctx, jobID, seq, wait); err != nil {
			return err
		}
	}
	n.started = time.Now()
	resp, err := h.startBackground(ctx, n)
	if t := (*throttled)(nil); errors.As(err, &t) {
		n.log.Debug("provider throttle: the next chunk's task makes the call", "wait", t.delay)
	} else if err != nil {
		n.log.Warn("could not start the next chunk's background call; its task will", "err", err)
	} else {
		n.log.Debug("next chunk's background call started", "response_id", resp.ID, "poll_in", wait)
	}
	if hold || err != nil || !resp.Pending() {
		next.Release() // before the task can claim it
		return h.cfg.Tasks.Chunk(ctx, jobID, seq)
	}
	return nil
}

// startBackground creates the call in background mode and commits its id
// before anything waits on it.
func (h *Handlers) startBackground(ctx context.Context, r *chunkRun) (continuation.Response, error) {
	if err := h.admit(ctx, r); err != nil {
		return continuation.Response{}, err
	}
	if err := r.claim.StartCall(ctx, r.taskID, r.attempt); err != nil {
		return continuation.Response{}, &notStarted{err}
	}
	created := time.Now()
	resp, err := r.detacher.Start(traceSent(h.withModel(ctx, r.req.Model), &r.sent), r.req)
	if err != nil {
		return resp, err
	}
	bg := store.BackgroundCall{ResponseID: resp.ID, TaskID: r.taskID, Attempt: r.attempt,
		MaxOutputTokens: r.req.MaxOutputTokens, Created: created}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := r.claim.StartBackground(saveCtx, bg); err != nil {
		// Unrecorded, the call would be paid for again by the retry:
		// stop it while it has cost little.
		if _, cerr := r.detacher.Cancel(saveCtx, resp.ID, r.req.MaxOutputTokens); cerr != nil {
			r.log.Warn("could not cancel a background call whose id was not recorded", "response_id", resp.ID, "err", cerr)
		}
		return continuation.Response{}, err
	}
	r.lastStatus = resp.RawStatus
	h.cfg.Metrics.Background("created")
	if !resp.Pending() {
		return h.finished(r, r.claim.Background, resp), nil
	}
	r.log.Debug("background call started", "response_id", resp.ID, "status", resp.RawStatus)
	return resp, nil
}

// polled counts a poll that found the call unfinished.
func (h *Handlers) polled(r *chunkRun, bg *store.BackgroundCall, status string) {
	r.lastStatus = status
	bg.Polls++
	h.cfg.Metrics.Background("poll")
	h.cfg.Store.PolledBackground(bg.ResponseID, status)
}

// finished is a terminal response read from the provider, timed from the
// call's creation (which may have been another delivery's), with what it
// took fed to the latency book.
func (h *Handlers) finished(r *chunkRun, bg *store.BackgroundCall, resp continuation.Response) continuation.Response {
	r.started = bg.Created
	resp.Latency = time.Since(bg.Created)
	took := resp.ServerLatency
	if took <= 0 {
		took = resp.Latency
	}
	h.latency.observe(r.claim.Job.Model, bg.MaxOutputTokens, took)
	h.cfg.Metrics.BackgroundDone(bg.Polls+1, resp.Latency)
	return resp
}

// recordExpired records a background call the provider no longer knows: it
// was billed, and its answer is gone.
func (h *Handlers) recordExpired(ctx context.Context, r *chunkRun, bg *store.BackgroundCall) error {
	r.log.Warn("the provider no longer knows the background call; making a new one", "response_id", bg.ResponseID)
	h.cfg.Metrics.Background("expired")
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	return r.claim.RecordAttempt(saveCtx, store.CallFailure{TaskID: bg.TaskID, Attempt: bg.Attempt, Counted: false,
		ResponseID: bg.ResponseID, HTTPStatus: http.StatusNotFound, ErrorType: "expired", Lost: true,
		CloseBackground: store.BackgroundExpired, Started: bg.Created, Latency: time.Since(bg.Created),
		Error: "the background response expired at the provider before its answer was read; it was billed, its usage is unknown; a new call was made"})
}

// expired reports a poll answered 404: the provider no longer has the id.
func expired(err error) bool {
	var ce *continuation.CallError
	return errors.As(err, &ce) && ce.HTTPStatus == http.StatusNotFound
}

// waitPlan says how long to wait before the next poll of bg, and whether
// to wait holding the task's slot (else the task ends and comes back then).
func (h *Handlers) waitPlan(ctx context.Context, r *chunkRun, bg *store.BackgroundCall) (time.Duration, bool) {
	elapsed := time.Since(bg.Created)
	est, known := h.estimate(ctx, r.claim.Job.Model, bg.MaxOutputTokens)
	pilot := !known && h.latency.pilot(r.claim.Job.Model, bg.MaxOutputTokens, bg.ResponseID)
	wait := nextPoll(elapsed, est, known, pilot)
	if h.cfg.CallTimeout > 0 && elapsed+wait > h.cfg.CallTimeout {
		wait = max(h.cfg.CallTimeout-elapsed, 0) + firstPoll // the poll after the timeout ends the call
	}
	// A call with no estimate, unless a pilot, is not held for: its
	// "expected end" is only the next doubling gap. When a key is new to
	// the worker — its start, or a burst of a new model — its calls come
	// by the thousand, and holding each for its first polls kept a third
	// of the slots asleep while the rest of the burst waited to start.
	hold := h.cfg.BackgroundHold > 0 && elapsed+wait <= h.cfg.BackgroundHold && (known || pilot) && h.slotsFree()
	if !hold && lastDelivery(ctx, r.attempt) {
		// asynq archives a task that has no retries left even when it
		// only asks to wait: the last delivery waits in its slot.
		hold = true
	}
	if !hold {
		wait = max(wait, deferredFloor)
	}
	return wait, hold
}

// nextPoll is the wait before the next poll of a call started elapsed ago:
// just past the end its latency estimate expects; once that has passed, a
// quarter of the time taken so far (a call a little slower than usual is
// read soon after it ends). With no estimate at all the gaps double (the
// wait is as long as the call has taken) up to coldGap, then grow by a
// quarter: the first calls of a model after a start are read at most
// coldGap late, and a long one is not polled too often. A pilot — one of
// the first few calls of a model and budget with no estimate (see
// latencyBook.pilot) — is polled closely instead, its gaps a sixteenth of
// its age past a second: its end, read within a few percent, is what
// teaches every other call of the key when to be read. (Sparser polls for
// the others while the pilots run — a first poll after 4s — gained nothing
// on the in-flight benchmark: 80.5s twice, against 78.0s to 81.7s without.)
func nextPoll(elapsed, est time.Duration, known, pilot bool) time.Duration {
	switch {
	case known && elapsed < est:
		margin := max(est/50, 100*time.Millisecond)
		return est - elapsed + margin
	case known:
		return min(max(elapsed/4, firstPoll), maxPollGap)
	case pilot:
		return min(max(firstPoll, min(elapsed, max(pilotGap, elapsed/16))), maxPollGap)
	}
	return min(max(firstPoll, min(elapsed, max(coldGap, elapsed/4))), maxPollGap)
}

// lastDelivery reports whether asynq will not retry the task again.
func lastDelivery(ctx context.Context, attempt int) bool {
	maxRetry, ok := asynq.GetMaxRetry(ctx)
	return ok && attempt >= maxRetry
}

// slotsFree reports whether at most half the worker's slots are busy.
func (h *Handlers) slotsFree() bool {
	if h.cfg.Concurrency <= 0 {
		return true
	}
	return 2*h.busy.Load() <= int64(h.cfg.Concurrency)
}

// cancelBackground stops a cancelled job's call in flight at the provider,
// and records what it was billed up to the cancel.
func (h *Handlers) cancelBackground(ctx context.Context, c *store.Claim) error {
	d, ok := h.cfg.Provider.(continuation.Detacher)
	bg := c.Background
	if !ok || bg == nil {
		return nil
	}
	log := h.log.With("job_id", c.Job.ID, "seq", c.Seq, "response_id", bg.ResponseID)
	resp, err := d.Cancel(ctx, bg.ResponseID, bg.MaxOutputTokens)
	if err != nil && !expired(err) && resp.RawStatus == "" {
		return fmt.Errorf("cancel background call %s: %w", bg.ResponseID, err)
	}
	price, err := h.prices.get(ctx, c.Job.Model)
	if err != nil {
		return err
	}
	if err := continuation.CheckUsage(resp.Usage, bg.MaxOutputTokens); err != nil {
		log.Warn("the cancelled call's usage is not recorded", "err", err)
		resp.Usage = continuation.Usage{}
	}
	u := store.Usage(resp.Usage)
	h.cfg.Metrics.Background("cancelled")
	log.Info("background call cancelled at the provider: the job was cancelled", "status", resp.RawStatus, "output_tokens", u.Output)
	err = c.RecordAttempt(ctx, store.CallFailure{TaskID: bg.TaskID, Attempt: bg.Attempt, Counted: false,
		ResponseID: bg.ResponseID, ErrorType: "cancelled", Usage: &u, CostUSD: Cost(price, u), Started: bg.Created,
		Latency: time.Since(bg.Created), CloseBackground: store.BackgroundCancelled,
		Error: fmt.Sprintf("the job was cancelled; the background call was cancelled at the provider (status %s), billed for the usage recorded here", resp.RawStatus)})
	if err != nil {
		log.Error("could not record the cancelled background call", "err", err)
	}
	return err
}

// sleep waits d, or less if ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// estimate is how long a call of model and budget is expected to take:
// what this worker saw such calls take, or before it has seen one, what
// recent ones took by Postgres's record (asked at most once a minute per
// model and budget).
func (h *Handlers) estimate(ctx context.Context, model string, budget int) (time.Duration, bool) {
	if d, ok := h.latency.estimate(model, budget); ok || !h.latency.ask(model, budget) {
		return d, ok
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d, ok, err := h.cfg.Store.RecentLatency(qctx, model, budget)
	if err != nil {
		h.log.Warn("could not read recent calls' latency", "model", model, "max_output_tokens", budget, "err", err)
		return 0, false
	}
	if ok {
		h.latency.seed(model, budget, d)
	}
	return d, ok
}

// latencyBook remembers how long recent calls took per model and output
// budget, so that a background call's first poll comes just after the call
// is expected to end instead of at a guess.
type latencyBook struct {
	mu     sync.Mutex
	m      map[latencyKey]time.Duration
	asked  map[latencyKey]time.Time            // when Postgres was last asked for a key with no estimate
	pilots map[latencyKey]map[string]time.Time // a key's pilots (response id: last polled), until it has an estimate
}

// pilot reports whether the call responseID is one of its key's pilots: the
// first pilotsPerKey calls this worker polls while the key has no estimate.
// Polled closely, a pilot is read soon after it ends, and its latency is
// the estimate every other call of the key is then polled by: without
// pilots, the first of a key's calls to be read — and so the estimate —
// comes up to coldGap late, and the calls started in the meantime are
// read late too, all at once. A pilot not polled for pilotIdle (it failed,
// was cancelled, or went to another worker) gives its place up.
func (b *latencyBook) pilot(model string, budget int, responseID string) bool {
	if responseID == "" {
		return false
	}
	k := latencyKey{model, budget}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, known := b.m[k]; known {
		return false
	}
	ids := b.pilots[k]
	if ids == nil {
		if len(b.pilots) >= 1024 {
			clear(b.pilots)
		}
		ids = map[string]time.Time{}
		b.pilots[k] = ids
	}
	maps.DeleteFunc(ids, func(_ string, seen time.Time) bool { return now.Sub(seen) > pilotIdle })
	if _, ok := ids[responseID]; !ok && len(ids) >= pilotsPerKey {
		return false
	}
	ids[responseID] = now
	return true
}

// pilotIdle is how long a pilot keeps its place unpolled: longer than
// any gap between its polls.
const pilotIdle = 2 * maxPollGap

// askEvery is how often Postgres is asked for a key still without an estimate.
const askEvery = time.Minute

// ask reports whether Postgres should be asked for the key now, and if so
// notes that it was.
func (b *latencyBook) ask(model string, budget int) bool {
	k := latencyKey{model, budget}
	b.mu.Lock()
	defer b.mu.Unlock()
	if at, ok := b.asked[k]; ok && time.Since(at) < askEvery {
		return false
	}
	if len(b.asked) >= 1024 {
		clear(b.asked)
	}
	b.asked[k] = time.Now()
	return true
}

// seed sets a key's first estimate, unless a call seen meanwhile set one.
func (b *latencyBook) seed(model string, budget int, d time.Duration) {
	k := latencyKey{model, budget}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok {
		b.m[k] = d
		delete(b.pilots, k) // the key has an estimate: pilots are done
	}
}

type latencyKey struct {
	model  string
	budget int
}

func newLatencyBook() *latencyBook {
	return &latencyBook{m: map[latencyKey]time.Duration{}, asked: map[latencyKey]time.Time{}, pilots: map[latencyKey]map[string]time.Time{}}
}

// observe folds one call's latency into the estimate: an exponentially
// weighted average, a quarter to the newest.
func (b *latencyBook) observe(model string, budget int, took time.Duration) {
	k := latencyKey{model, budget}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.m[k]; ok {
		took = old + (took-old)/4
	} else if len(b.m) >= 1024 {
		clear(b.m) // a bound on models × budgets; estimates come back quickly
	}
	b.m[k] = took
	delete(b.pilots, k) // the key has an estimate: pilots are done
}

func (b *latencyBook) estimate(model string, budget int) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.m[latencyKey{model, budget}]
	return d, ok
}
