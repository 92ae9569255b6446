package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/internal/tracing"
)

// Task types. Payloads carry only IDs and sequence numbers, never content:
// Postgres is the source of truth and Redis may lose everything. Each also
// carries the job's W3C traceparent when tracing is on (see Traceparent).
const (
	TypeChunk   = "carryover:chunk"
	TypeMerge   = "carryover:merge"
	TypeWebhook = "carryover:webhook"
)

// WebhookPayload asks for a job's end event to be delivered: the stored
// event EventID. A payload without one was queued before events were
// stored (migration 11) and names the job's status instead.
type WebhookPayload struct {
	JobID       string `json:"job_id"`
	Status      string `json:"status"`
	EventID     string `json:"event_id,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
}

// ChunkPayload asks for chunk Seq of a job.
type ChunkPayload struct {
	JobID string `json:"job_id"`
	Seq   int    `json:"seq"`
	// Traceparent is the W3C traceparent of the job's root span (its
	// enqueue, or the first task of a job the reconciler queued), whose
	// child the task's span is; "" when tracing is off.
	Traceparent string `json:"traceparent,omitempty"`
}

// MergePayload asks for a job's merge.
type MergePayload struct {
	JobID       string `json:"job_id"`
	Traceparent string `json:"traceparent,omitempty"`
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
	// Lanes spreads chunk tasks over this many queues, each tenant's on
	// one lane (its ordinal mod Lanes; see ChunkLane), so that one
	// tenant's backlog waits in its own lane while the worker picks among
	// the non-empty lanes at random, with equal weights. 0 is DefaultLanes;
	// 1 puts every chunk task on Chunk. Producers and workers must agree.
	Lanes int
}

// DefaultLanes is how many chunk queue lanes tenants are spread over: the
// first DefaultLanes tenants get one each, later ones share.
const DefaultLanes = 8

// MaxLanes bounds Lanes: each lane is a queue every worker polls.
const MaxLanes = 64

// Webhook is the queue of webhook deliveries, WebhookQueue(q.Chunk).
func (q Queues) Webhook() string { return WebhookQueue(q.Chunk) }

// WebhookQueue is the queue of webhook deliveries for the chunk queue
// chunkQueue: a queue of their own, which workers serve with their own small
// concurrency, so that slow receivers never hold a chunk task's slot.
func WebhookQueue(chunkQueue string) string { return chunkQueue + ":webhooks" }

// DefaultQueues puts every task on the "carryover" queue, chunk tasks on
// its lanes.
func DefaultQueues() Queues { return Queues{Chunk: "carryover", Merge: "carryover"} }

func (q Queues) lanes() int64 {
	if q.Lanes <= 0 {
		return DefaultLanes
	}
	return int64(q.Lanes)
}

// ChunkLane is the chunk queue of the tenant with this ordinal: lane 0 is
// Chunk itself (the default tenant's, and where chunk tasks went before
// there were lanes), lane i is "<Chunk>.lane<i>".
func (q Queues) ChunkLane(ordinal int64) string {
	i := ordinal % q.lanes()
	if i < 0 {
		i += q.lanes()
	}
	if i == 0 {
		return q.Chunk
	}
	return fmt.Sprintf("%s.lane%d", q.Chunk, i)
}

// ChunkLanes lists every chunk queue, lane 0 first.
func (q Queues) ChunkLanes() []string {
	out := make([]string, q.lanes())
	for i := range out {
		out[i] = q.ChunkLane(int64(i))
	}
	return out
}

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
	client   *asynq.Client
	queues   Queues
	opts     TaskOptions
	ordinals Ordinals
	laneList []string // queues.ChunkLanes()

	mu    sync.Mutex
	lanes map[string]string // job ID → its chunk queue (never changes)
}

// Ordinals tells the ordinal of the tenant a job belongs to, which picks
// its chunk queue lane (*store.Store does).
type Ordinals interface {
	TenantOrdinal(ctx context.Context, jobID string) (int64, error)
}

// maxCachedLanes bounds the jobs whose lane a Dispatcher remembers.
const maxCachedLanes = 4096

// NewDispatcher wraps an asynq client; ord finds a job's lane (nil puts
// every chunk task on lane 0).
func NewDispatcher(c *asynq.Client, q Queues, o TaskOptions, ord Ordinals) *Dispatcher {
	return &Dispatcher{client: c, queues: q, opts: o, ordinals: ord, laneList: q.ChunkLanes(), lanes: map[string]string{}}
}

// Queues returns the queue names in use.
func (d *Dispatcher) Queues() Queues { return d.queues }

// ChunkQueue returns the queue of a job's chunk tasks: its tenant's lane.
// A job's lane never changes, so it is looked up once per job (a bounded
// cache keeps it for the job's next chunks).
func (d *Dispatcher) ChunkQueue(ctx context.Context, jobID string) (string, error) {
	if d.ordinals == nil || d.queues.lanes() == 1 {
		return d.queues.Chunk, nil
	}
	if h, ok := ctx.Value(laneKey{}).(lane); ok && h.jobID == jobID {
		return h.queue, nil
	}
	d.mu.Lock()
	q, ok := d.lanes[jobID]
	d.mu.Unlock()
	if ok {
		return q, nil
	}
	n, err := d.ordinals.TenantOrdinal(ctx, jobID)
	if err != nil {
		return "", fmt.Errorf("chunk queue of job %s: %w", jobID, err)
	}
	q = d.queues.ChunkLane(n)
	d.mu.Lock()
	if len(d.lanes) >= maxCachedLanes {
		clear(d.lanes)
	}
	d.lanes[jobID] = q
	d.mu.Unlock()
	return q, nil
}

type laneKey struct{}

// lane is the chunk queue a running chunk task of a job came from.
type lane struct{ jobID, queue string }

// InLane returns ctx, inside a chunk task of jobID delivered from queue,
// such that the job's next chunk tasks go to the same lane without a look
// at Postgres (the delivery that makes a chunk enqueues the next one; with
// thousands of jobs in flight the bounded cache would miss). A queue that
// is not one of the dispatcher's lanes changes nothing.
func (d *Dispatcher) InLane(ctx context.Context, jobID, queue string) context.Context {
	if d != nil && slices.Contains(d.laneList, queue) {
		return context.WithValue(ctx, laneKey{}, lane{jobID: jobID, queue: queue})
	}
	return ctx
}

// Chunk enqueues chunk seq of a job under its canonical TaskID.
func (d *Dispatcher) Chunk(ctx context.Context, jobID string, seq int) error {
	return d.ChunkWithID(ctx, jobID, seq, ChunkTaskID(jobID, seq))
}

// ChunkIn enqueues chunk seq of a job under its canonical TaskID, to be
// delivered after delay (stretched to a whole second: asynq keeps a
// scheduled time in whole seconds).
func (d *Dispatcher) ChunkIn(ctx context.Context, jobID string, seq int, delay time.Duration) error {
	queue, err := d.ChunkQueue(ctx, jobID)
	if err != nil {
		return err
	}
	return d.enqueue(ctx, chunkTask(ctx, jobID, seq), ChunkTaskID(jobID, seq), queue,
		asynq.ProcessIn(roundUpToSecond(time.Now(), delay)))
}

// ChunkWithID enqueues chunk seq of a job under taskID: the canonical one,
// or one of its own when a task under the canonical one may be stranded (a
// recovery copy, a resumed job).
func (d *Dispatcher) ChunkWithID(ctx context.Context, jobID string, seq int, taskID string) error {
	queue, err := d.ChunkQueue(ctx, jobID)
	if err != nil {
		return err
	}
	return d.enqueue(ctx, chunkTask(ctx, jobID, seq), taskID, queue)
}

// chunkTask is the task that makes chunk seq of a job, in the job's trace
// as ctx carries it.
func chunkTask(ctx context.Context, jobID string, seq int) *asynq.Task {
	b, _ := json.Marshal(ChunkPayload{JobID: jobID, Seq: seq, Traceparent: tracing.Traceparent(ctx, jobID)})
	return asynq.NewTask(TypeChunk, b)
}

// Merge enqueues a job's merge under its canonical TaskID.
func (d *Dispatcher) Merge(ctx context.Context, jobID string) error {
	return d.MergeWithID(ctx, jobID, MergeTaskID(jobID))
}

// MergeWithID enqueues a job's merge under taskID (see ChunkWithID).
func (d *Dispatcher) MergeWithID(ctx context.Context, jobID, taskID string) error {
	b, _ := json.Marshal(MergePayload{JobID: jobID, Traceparent: tracing.Traceparent(ctx, jobID)})
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

// Webhook queues the delivery of a job's stored end event (status is its
// job's, for the trace), on the webhook queue, retried for about a day
// (WebhookRetryDelay). Each event has a task of its own (WebhookTaskID): a
// job that ends twice (resumed, or remerged) has two.
func (d *Dispatcher) Webhook(ctx context.Context, jobID, status, eventID string) error {
	b, _ := json.Marshal(WebhookPayload{JobID: jobID, Status: status, EventID: eventID,
		Traceparent: tracing.Traceparent(ctx, jobID)})
	id := WebhookTaskID(jobID, eventID)
	_, err := d.client.EnqueueContext(ctx, asynq.NewTask(TypeWebhook, b), asynq.TaskID(id), asynq.Queue(d.queues.Webhook()),
		asynq.MaxRetry(WebhookMaxRetry), asynq.Timeout(WebhookTaskTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue %s: %w", id, err)
	}
	return nil
}

// WebhookTaskID is the deterministic asynq TaskID of an event's delivery:
// queueing it again while it is queued, retrying or archived is a no-op.
func WebhookTaskID(jobID, eventID string) string {
	return fmt.Sprintf("job:%s:webhook:%s", jobID, eventID)
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
