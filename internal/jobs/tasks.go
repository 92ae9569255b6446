package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// Task types. Payloads carry only IDs and sequence numbers, never content:
// Postgres is the source of truth and Redis may lose everything.
const (
	TypeChunk   = "carryover:chunk"
	TypeMerge   = "carryover:merge"
	TypeWebhook = "carryover:webhook"
)

// WebhookPayload asks for a job's end event to be delivered.
type WebhookPayload struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"`
}

// ChunkPayload asks for chunk Seq of a job.
type ChunkPayload struct {
	JobID string `json:"job_id"`
	Seq   int    `json:"seq"`
}

// MergePayload asks for a job's merge.
type MergePayload struct {
	JobID string `json:"job_id"`
}

func (p *ChunkPayload) jobID() string   { return p.JobID }
func (p *MergePayload) jobID() string   { return p.JobID }
func (p *WebhookPayload) jobID() string { return p.JobID }

// decodePayload reads a task's payload into p. A payload that cannot be read
// or names no job will never succeed, so its error skips asynq's retries.
func decodePayload(task string, raw []byte, p interface{ jobID() string }) error {
	err := json.Unmarshal(raw, p)
	if err == nil && p.jobID() == "" {
		err = errors.New("no job_id")
	}
	if err != nil {
		return fmt.Errorf("%s task payload %q: %w: %w", task, raw, err, asynq.SkipRetry)
	}
	return nil
}

// ChunkTaskID is the deterministic asynq TaskID of a chunk task: asynq refuses
// a second task with the same ID while the first is queued or running.
func ChunkTaskID(jobID string, seq int) string { return fmt.Sprintf("job:%s:chunk:%d", jobID, seq) }

// MergeTaskID is the deterministic asynq TaskID of a job's merge task.
func MergeTaskID(jobID string) string { return fmt.Sprintf("job:%s:merge", jobID) }

// Queues names the asynq queues tasks go to.
type Queues struct {
	Chunk string
	Merge string
}

// Webhook is the queue of webhook deliveries, WebhookQueue(q.Chunk).
func (q Queues) Webhook() string { return WebhookQueue(q.Chunk) }

// WebhookQueue is the queue of webhook deliveries for the chunk queue
// chunkQueue: a queue of their own, which workers serve with their own small
// concurrency, so that slow receivers never hold a chunk task's slot.
func WebhookQueue(chunkQueue string) string { return chunkQueue + ":webhooks" }

// DefaultQueues puts every task on the "carryover" queue.
func DefaultQueues() Queues { return Queues{Chunk: "carryover", Merge: "carryover"} }

// TaskOptions are the asynq options of every task.
type TaskOptions struct {
	MaxRetry int           // failed deliveries before the job stops with retry_limit_reached
	Timeout  time.Duration // a delivery's deadline (covers one model call)
}

// DefaultTaskOptions suit a model call of up to ten minutes.
func DefaultTaskOptions() TaskOptions { return TaskOptions{MaxRetry: 60, Timeout: 11 * time.Minute} }

// Dispatcher puts chunk and merge tasks on the queue. A TaskID conflict means
// the task is already queued or running, which is what was wanted.
type Dispatcher struct {
	client *asynq.Client
	queues Queues
	opts   TaskOptions
}

// NewDispatcher wraps an asynq client.
func NewDispatcher(c *asynq.Client, q Queues, o TaskOptions) *Dispatcher {
	return &Dispatcher{client: c, queues: q, opts: o}
}

// Queues returns the queue names in use.
func (d *Dispatcher) Queues() Queues { return d.queues }

// Chunk enqueues chunk seq of a job under its canonical TaskID.
func (d *Dispatcher) Chunk(ctx context.Context, jobID string, seq int) error {
	return d.ChunkWithID(ctx, jobID, seq, ChunkTaskID(jobID, seq))
}

// ChunkIn enqueues chunk seq of a job under its canonical TaskID, to be
// delivered after delay (stretched to a whole second: asynq keeps a
// scheduled time in whole seconds).
func (d *Dispatcher) ChunkIn(ctx context.Context, jobID string, seq int, delay time.Duration) error {
	return d.enqueue(ctx, chunkTask(jobID, seq), ChunkTaskID(jobID, seq), d.queues.Chunk,
		asynq.ProcessIn(roundUpToSecond(time.Now(), delay)))
}

// ChunkWithID enqueues chunk seq of a job under taskID: the canonical one,
// or one of its own when a task under the canonical one may be stranded (a
// recovery copy, a resumed job).
func (d *Dispatcher) ChunkWithID(ctx context.Context, jobID string, seq int, taskID string) error {
	return d.enqueue(ctx, chunkTask(jobID, seq), taskID, d.queues.Chunk)
}

// chunkTask is the task that makes chunk seq of a job.
func chunkTask(jobID string, seq int) *asynq.Task {
	b, _ := json.Marshal(ChunkPayload{JobID: jobID, Seq: seq})
	return asynq.NewTask(TypeChunk, b)
}

// Merge enqueues a job's merge under its canonical TaskID.
func (d *Dispatcher) Merge(ctx context.Context, jobID string) error {
	return d.MergeWithID(ctx, jobID, MergeTaskID(jobID))
}

// MergeWithID enqueues a job's merge under taskID (see ChunkWithID).
func (d *Dispatcher) MergeWithID(ctx context.Context, jobID, taskID string) error {
	b, _ := json.Marshal(MergePayload{JobID: jobID})
	return d.enqueue(ctx, asynq.NewTask(TypeMerge, b), taskID, d.queues.Merge)
}

func (d *Dispatcher) enqueue(ctx context.Context, t *asynq.Task, taskID, queue string, more ...asynq.Option) error {
	opts := append([]asynq.Option{asynq.TaskID(taskID), asynq.Queue(queue), asynq.MaxRetry(d.opts.MaxRetry),
		asynq.Timeout(d.opts.Timeout)}, more...)
	_, err := d.client.EnqueueContext(ctx, t, opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue %s: %w", taskID, err)
	}
	return nil
}

// Webhook queues the delivery of a job's end event (one per final status),
// on the webhook queue, retried for about a day (WebhookRetryDelay).
func (d *Dispatcher) Webhook(ctx context.Context, jobID, status string) error {
	b, _ := json.Marshal(WebhookPayload{JobID: jobID, Status: status})
	id := fmt.Sprintf("job:%s:webhook:%s", jobID, status)
	_, err := d.client.EnqueueContext(ctx, asynq.NewTask(TypeWebhook, b), asynq.TaskID(id), asynq.Queue(d.queues.Webhook()),
		asynq.MaxRetry(WebhookMaxRetry), asynq.Timeout(WebhookTaskTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue %s: %w", id, err)
	}
	return nil
}

// WebhookMaxRetry is how often a failed webhook delivery is retried: with
// WebhookRetryDelay's schedule, the last retry comes about a day (23.8 h)
// after the first attempt.
const WebhookMaxRetry = 19

// WebhookTaskTimeout is a webhook task's deadline: one delivery (bounded by
// the webhook client's own 10 s timeout) and recording it.
const WebhookTaskTimeout = 30 * time.Second

// webhookBackoff is the delay before webhook retry n (0 for the first),
// without jitter: 2 s, tripling, at most 2 hours — 2s, 6s, 18s, 54s, 2.7m,
// 8.1m, 24m, 73m, then every 2 hours.
func webhookBackoff(n int) time.Duration {
	d := 2 * time.Second
	for range min(n, 10) {
		d *= 3
	}
	return min(d, 2*time.Hour)
}

// WebhookRetryDelay is the asynq RetryDelayFunc of the webhook queue:
// webhookBackoff with ±10% jitter, so that deliveries failed together
// (a receiver down) are not retried together.
func WebhookRetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	return time.Duration(float64(webhookBackoff(n)) * (0.9 + 0.2*rand.Float64()))
}
