// Package maintenance holds the worker's periodic loops, each its own
// service with a Run(ctx) the worker starts and stops: the reconciler, which
// resumes jobs whose queue state was lost, and retention, which prunes the
// text of finished jobs.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/store"
)

// ReconcilerConfig configures the reconciler.
type ReconcilerConfig struct {
	Store     *store.Store
	Tasks     *jobs.Dispatcher
	Inspector *asynq.Inspector
	Logger    *slog.Logger
	// Interval between scans.
	Interval time.Duration
	// StaleAfter is how long a live job may go without progress before its
	// next task is re-queued. Longer than any queue wait you expect.
	StaleAfter time.Duration
	// Batch is the most jobs looked at per scan.
	Batch int
}

// Defaults of ReconcilerConfig, for fields left at zero.
const (
	ReconcileIntervalDefault = 15 * time.Second
	StaleAfterDefault        = 2 * time.Minute
	BatchDefault             = 500
)

// leftoverStart is how old a call's start with no outcome must be for the
// reconciler to record it as lost whatever its job's state: older than a
// chunk task's timeout and the saves after it (a delivery that died leaves
// its start to the chunk's next claim, unless the job was cancelled or
// stopped meanwhile).
func leftoverStart() time.Duration { return jobs.DefaultTaskOptions().Timeout + 2*time.Minute }

// Reconciler resumes live jobs whose queue state is gone: the task was never
// enqueued (a crash right after the insert), Redis lost its keys, or the
// worker running it died. It re-enqueues the job's next task under the same
// TaskID, so a task still queued is never doubled. A job whose lock is held
// is being worked on and is left alone.
type Reconciler struct {
	cfg ReconcilerConfig
	log *slog.Logger
	// suspects are active tasks that no live worker listed at the last scan;
	// a task still unlisted at the next scan belongs to a dead worker.
	suspects map[string]bool
}

// NewReconciler builds a reconciler.
func NewReconciler(cfg ReconcilerConfig) *Reconciler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = ReconcileIntervalDefault
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = StaleAfterDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = BatchDefault
	}
	return &Reconciler{cfg: cfg, log: cfg.Logger, suspects: map[string]bool{}}
}

// Run scans every Interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	every(ctx, r.cfg.Interval, func(ctx context.Context) {
		if n, err := r.Scan(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reconciler scan failed", "err", err)
		} else if n > 0 {
			r.log.Info("reconciler resumed jobs", "count", n)
		}
	})
}

// every runs fn at once, then every interval, until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scan looks at stale jobs once and returns how many it resumed. Run calls
// it; it is not safe for concurrent use.
func (r *Reconciler) Scan(ctx context.Context) (int, error) {
	if n, err := r.cfg.Store.RecordLostBefore(ctx, time.Now().Add(-leftoverStart())); err != nil {
		return 0, err
	} else if n > 0 {
		r.log.Warn("recorded calls started longer ago than any delivery lasts, with no outcome, as lost", "lost", n)
	}
	stale, err := r.cfg.Store.StaleJobs(ctx, time.Now().Add(-r.cfg.StaleAfter), r.cfg.Batch)
	if err != nil {
		return 0, err
	}
	s := &scan{suspects: map[string]bool{}}
	resumed := 0
	for _, j := range stale {
		ok, err := r.resume(ctx, s, j)
		if err != nil {
			r.log.Warn("reconciler could not resume job", "job_id", j.ID, "seq", j.NextSeq, "err", err)
			continue
		}
		if ok {
			resumed++
		}
	}
	r.suspects = s.suspects
	if err := r.requeueWebhooks(ctx); err != nil {
		r.log.Warn("reconciler could not queue undelivered webhook events", "err", err)
	}
	return resumed, nil
}

// webhookWindow is how long after an event the reconciler still queues its
// delivery again: the webhook queue's own retries span about a day
// (jobs.WebhookMaxRetry), and an event older than that was given up on.
const webhookWindow = 24 * time.Hour

// webhookQuiet is how long an undelivered event must have gone without an
// attempt before its task is taken for lost: longer than the webhook
// queue's longest wait between retries (2 h, plus jitter).
const webhookQuiet = 150 * time.Minute

// requeueWebhooks queues the delivery of stored events whose task went
// missing: the process that ended the job died between its commit and the
// enqueue, or Redis lost its keys. The task's ID is the event's, so a task
// still queued, retrying or archived (given up) is not doubled.
func (r *Reconciler) requeueWebhooks(ctx context.Context) error {
	now := time.Now()
	evs, err := r.cfg.Store.UndeliveredWebhookEvents(ctx, now.Add(-webhookWindow), now.Add(-r.cfg.StaleAfter),
		now.Add(-webhookQuiet), r.cfg.Batch)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if err := r.cfg.Tasks.Webhook(ctx, e.JobID, "", e.ID); err != nil {
			return err
		}
	}
	return nil
}

// scan holds what one Scan learned.
type scan struct {
	listed   map[string]bool // tasks live workers report as active; nil until needed
	suspects map[string]bool
}

func (r *Reconciler) resume(ctx context.Context, s *scan, j store.StaleJob) (bool, error) {
	ok, unlock, err := r.cfg.Store.TryLockJob(ctx, j.ID)
	if err != nil || !ok {
		return false, err // locked: a delivery is working on it (a long model call)
	}
	defer unlock()
	if j.Status != store.StatusMerging {
		// Nobody holds the job: calls started and not recorded belong to
		// deliveries that are gone (a worker killed, whose task may be
		// recovered here, or whose task Redis lost). A delivery that died
		// before its call started none.
		if n, err := r.cfg.Store.RecordLost(ctx, j.ID); err != nil {
			return false, err
		} else if n > 0 {
			r.log.Warn("recorded calls whose delivery died after sending them as lost", "job_id", j.ID, "lost", n)
		}
	}
	var queue, taskID string
	if j.Status == store.StatusMerging {
		queue, taskID = r.cfg.Tasks.Queues().Merge, jobs.MergeTaskID(j.ID)
	} else {
		taskID = jobs.ChunkTaskID(j.ID, j.NextSeq)
		if queue, err = r.cfg.Tasks.ChunkQueue(ctx, j.ID); err != nil {
			return false, err
		}
	}
	info, err := r.cfg.Inspector.GetTaskInfo(queue, taskID)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound):
		// Lost or never queued: queue it under its canonical ID.
		r.log.Info("reconciler re-queueing a job with no queued task", "job_id", j.ID, "seq", j.NextSeq, "status", j.Status)
		return true, r.enqueue(ctx, j, taskID)
	case err != nil:
		return false, fmt.Errorf("inspect %s: %w", taskID, err)
	}
	switch info.State {
	case asynq.TaskStateActive:
		// Active in Redis, yet nobody holds the job's lock and nothing has
		// moved for StaleAfter. If no live worker lists the task on two
		// scans in a row, its worker died; asynq would recover the task only
		// after its 30s lease and the recoverer's minute, so queue a recovery
		// copy now (the lock keeps the two from both calling the model).
		if s.listed == nil {
			if s.listed, err = r.activeTasks(); err != nil {
				return false, err
			}
		}
		if s.listed[taskID] {
			return false, nil
		}
		if !r.suspects[taskID] {
			s.suspects[taskID] = true
			return false, nil
		}
		rid := fmt.Sprintf("%s:recover:%d", taskID, time.Now().UnixNano())
		r.log.Warn("reconciler recovering a job whose worker died", "job_id", j.ID, "seq", j.NextSeq, "task_id", rid)
		return true, r.enqueue(ctx, j, rid)
	case asynq.TaskStateArchived:
		// asynq gave up on the task (its workers kept dying): end the job
		// rather than leave it stuck.
		r.log.Error("job's task was archived after repeated failures; stopping the job", "job_id", j.ID, "seq", j.NextSeq)
		status := store.StatusFailed
		if j.Status == store.StatusMerging {
			err = r.cfg.Store.FailJob(ctx, j.ID, "merge task archived after repeated failed deliveries")
		} else {
			status, err = r.cfg.Store.StopJob(ctx, j.ID, store.Stop{Reason: "retry_limit_reached",
				Error: "task archived after repeated failed deliveries", Merge: true})
		}
		switch {
		case err != nil:
		case status == store.StatusMerging:
			err = r.cfg.Tasks.Merge(ctx, j.ID)
		case status == store.StatusFailed:
			err = jobs.QueueWebhooks(ctx, r.cfg.Store, r.cfg.Tasks, j.ID, status) // none for a job without a webhook
		}
		return true, err
	}
	return false, nil // pending, scheduled, retry: it will run
}

// activeTasks lists the task IDs that live workers report as in progress.
func (r *Reconciler) activeTasks() (map[string]bool, error) {
	servers, err := r.cfg.Inspector.Servers()
	if err != nil {
		return nil, fmt.Errorf("list asynq servers: %w", err)
	}
	m := map[string]bool{}
	for _, s := range servers {
		for _, w := range s.ActiveWorkers {
			m[w.TaskID] = true
		}
	}
	return m, nil
}

// enqueue queues the job's next task under taskID.
func (r *Reconciler) enqueue(ctx context.Context, j store.StaleJob, taskID string) error {
	if j.Status == store.StatusMerging {
		return r.cfg.Tasks.MergeWithID(ctx, j.ID, taskID)
	}
	return r.cfg.Tasks.ChunkWithID(ctx, j.ID, j.NextSeq, taskID)
}
