// Package client is the Go producer API of carryover: enqueue a completion
// job, poll its status, read its merged result, cancel it, or wait for it.
// Every producer — the enqueue CLI, the HTTP API, your web app — goes through
// the same enqueuer, so validation and idempotency are the same everywhere.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
)

// The request a producer submits, and what it may say, are defined and
// documented in package carryovertype, which the worker and the HTTP API
// share; these names let a producer import client alone.
type (
	Request         = carryovertype.Request
	Input           = carryovertype.Input
	Message         = carryovertype.Message
	Continuation    = carryovertype.Continuation
	ValidationError = carryovertype.ValidationError
	FieldError      = carryovertype.FieldError
	ResumeOptions   = carryovertype.ResumeOptions
	ErrorPolicy     = carryovertype.ErrorPolicy
	JSONSchema      = carryovertype.JSONSchema
	Strategy        = carryovertype.Strategy
	ToolCall        = carryovertype.ToolCall
)

// Errors.
var (
	ErrNotFound = errors.New("job not found")
	// ErrNotReady is returned by Result while the job has no result yet.
	ErrNotReady = errors.New("job has no result yet")
	// ErrPruned is returned by Result when retention removed the content.
	ErrPruned = errors.New("the result's content was removed by retention")
	// ErrNotMigrated is wrapped by New's error when the database lacks
	// carryover's tables or holds an older schema: run `worker migrate`.
	ErrNotMigrated = store.ErrNotMigrated
)

// Config says where the queue and the database are.
type Config struct {
	DatabaseURL string
	RedisURL    string
	ChunkQueue  string // default "carryover"
	MergeQueue  string // default the chunk queue
	// ChunkLanes is how many chunk queues tenants are spread over; it must
	// be the workers' setting (CARRYOVER_CHUNK_LANES). 0 is
	// jobs.DefaultLanes.
	ChunkLanes int
	// Logger receives the client's log lines (a job enqueued, cancelled,
	// resumed; a job stored whose first task is left to the reconciler).
	// nil logs nothing: a library stays quiet unless given a logger, and
	// never writes through the process's slog.Default.
	Logger *slog.Logger
	// MaxConns caps the Postgres pool (0: pgx's default). A Watch holds
	// none of its connections while it waits.
	MaxConns int32
	// AcquireTimeout bounds how long a call waits for a pooled connection;
	// past it the call fails with an error that wraps
	// context.DeadlineExceeded. 0 waits as long as the call's context allows.
	AcquireTimeout time.Duration
	// Quota bounds each tenant's jobs in flight and daily spend; a job past
	// it is refused with a *QuotaError. The HTTP API sets it from the
	// operator's settings (CARRYOVER_TENANT_MAX_JOBS, CARRYOVER_TENANT_DAILY_USD).
	// nil checks no quota: a producer holding the database's credentials
	// is trusted.
	Quota *Quota
	// WebhookAllow is the operator's webhook egress allow-list, written as
	// CARRYOVER_WEBHOOK_ALLOW is (e.g. "http,127.0.0.0/8" for development);
	// "" accepts only https webhook URLs whose host is not a reserved
	// literal address. Give it the workers' setting: a URL refused here is
	// refused with a field error naming webhook_url, and the workers check
	// the addresses again when they connect.
	WebhookAllow string
	// Tenant owns the jobs this client enqueues with no Request.Tenant of
	// their own; "" is "default". An API key of the same tenant (`worker
	// apikey create --tenant NAME`) sees them through the HTTP API; a key of
	// another tenant gets 404. The tenant must exist: creating a key
	// creates it.
	Tenant string
	// ReadOnly connects to Postgres alone: Status, Result, Events, Watch,
	// Wait, Owner, Authenticate and JobCounts work while Redis is down (or
	// unreachable from where the reader runs); Enqueue, Cancel, Resume,
	// Remerge and Consumers return ErrReadOnly, and Inspector is nil.
	ReadOnly bool
	// TracerProvider makes the spans of Enqueue (the root of each job's
	// trace, which the workers' task spans join); nil is the global
	// provider (otel.GetTracerProvider), a no-op one unless the program
	// set another.
	TracerProvider trace.TracerProvider
}

// Quota is a per-tenant quota; a tenant's row may override either value.
type Quota = store.Quota

// QuotaError refuses a job because its tenant is at a quota (which one, and
// how long to wait); nothing is stored or enqueued.
type QuotaError = store.QuotaError

// UnlimitedJobs as Quota.MaxJobsInFlight sets no cap on jobs in flight.
const UnlimitedJobs = store.UnlimitedJobs

// Client is safe for concurrent use. Close it when done.
type Client struct {
	store *store.Store
	rdb   redis.UniversalClient
	queue *asynq.Client
	insp  *asynq.Inspector
	enq   *jobs.Enqueuer
	tasks *jobs.Dispatcher
	// tenant is Config.Tenant, the default of Request.Tenant.
	tenant string
}

// New connects to Postgres and Redis. Config.RedisURL names one server
// (redis://, rediss://, unix://), a master behind Sentinel
// (redis-sentinel://host:26379,…/master-name[/db]) or a cluster
// (redis-cluster://host:7000,…); see the README.
func New(ctx context.Context, cfg Config) (*Client, error) {
	webhooks, err := egress.Parse(cfg.WebhookAllow)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: cfg.MaxConns, AcquireTimeout: cfg.AcquireTimeout, Logger: logger})
	if err != nil {
		return nil, err
	}
	if err := st.CheckSchema(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("client: %w", err)
	}
	if cfg.ReadOnly {
		return &Client{store: st}, nil
	}
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		st.Close()
		_ = rdb.Close()
		return nil, fmt.Errorf("client: redis ping: %w", err)
	}
	q := asynq.NewClientFromRedisClient(rdb)
	queues := jobs.DefaultQueues()
	if cfg.ChunkQueue != "" {
		queues.Chunk, queues.Merge = cfg.ChunkQueue, cfg.ChunkQueue
	}
	if cfg.MergeQueue != "" {
		queues.Merge = cfg.MergeQueue
	}
	queues.Lanes = cfg.ChunkLanes
	d := jobs.NewDispatcher(q, queues, jobs.DefaultTaskOptions(), st)
	return &Client{store: st, rdb: rdb, tenant: cfg.Tenant, queue: q, insp: asynq.NewInspectorFromRedisClient(rdb),
		enq: jobs.NewEnqueuer(st, d, logger, cfg.Quota, jobs.WithWebhookPolicy(webhooks),
			jobs.WithTracerProvider(cfg.TracerProvider)), tasks: d}, nil
}

// Close releases the connections.
func (c *Client) Close() error {
	c.store.Close()
	if c.rdb == nil {
		return nil
	}
	return c.rdb.Close()
}

// ErrReadOnly is returned by the methods that queue work, on a client made
// with Config.ReadOnly.
var ErrReadOnly = errors.New("client: read-only (Config.ReadOnly): no Redis connection to queue work on")

// writable refuses a call that queues work on a read-only client.
func (c *Client) writable() error {
	if c.enq == nil {
		return ErrReadOnly
	}
	return nil
}

// Job is an accepted job.
type Job struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Created bool   `json:"created"` // false when an idempotency key returned an existing job
}

// Validate fills a request's defaults and checks it as Enqueue does,
// without touching Postgres or Redis: a *ValidationError names every bad
// field. A numeric field left at its zero value is "not given" and takes
// its default: Go cannot tell an explicit 0 from an absent field (see
// carryovertype.Request).
func Validate(req Request) (Request, error) { return jobs.Normalize(req) }

// Validate is the package's Validate with this client's webhook policy
// (Config.WebhookAllow), so it judges webhook_url as Enqueue does.
func (c *Client) Validate(req Request) (Request, error) { return c.enq.Validate(req) }

// ValidateResume checks resume options as Resume does, without the job: a
// *ValidationError names every bad field as ResumeOptions names it.
// Resume also checks max_attempts against the chunks the job has stored
// (more than them, and at most carryovertype.MaxMaxAttempts more).
func ValidateResume(o ResumeOptions) error { return jobs.CheckResume(o) }

// RequestExplicitZeros names every field of a JSON request given as 0
// where its range excludes 0 (max_output_tokens, continuation.max_attempts,
// a budget, ...). Decoded into a Request, such a 0 would read as the
// default; a producer that takes requests as JSON refuses them with it.
// carryovertype.DecodeRequest, which the HTTP API uses, runs it and names
// every other problem of the body too (wrong types, unknown fields).
func RequestExplicitZeros(data []byte) []FieldError { return carryovertype.RequestExplicitZeros(data) }

// ResumeExplicitZeros is RequestExplicitZeros for JSON resume options.
func ResumeExplicitZeros(data []byte) []FieldError { return carryovertype.ResumeExplicitZeros(data) }

// Enqueue validates and submits a job. A *ValidationError names every bad
// field; nothing is stored or enqueued then.
func (c *Client) Enqueue(ctx context.Context, req Request) (Job, error) {
	if err := c.writable(); err != nil {
		return Job{}, err
	}
	if req.Tenant == "" {
		req.Tenant = c.tenant
	}
	j, created, err := c.enq.Enqueue(ctx, req)
	if j.ID == "" {
		return Job{}, err
	}
	// A stored job whose first task could not be queued yet is still
	// accepted: the reconciler queues it.
	return Job{ID: j.ID, Status: j.Status, Created: created}, nil
}

// Tokens sums a job's usage so far.
type Tokens struct {
	Input     int64 `json:"input"`
	Cached    int64 `json:"cached"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
}

// ChunkStatus is one chunk's figures (no content).
type ChunkStatus struct {
	Seq            int             `json:"seq"`
	Size           int             `json:"size"`
	FinishReason   string          `json:"finish_reason"`
	ResponseID     string          `json:"response_id,omitempty"`
	OutputTokens   int64           `json:"output_tokens"`
	CostUSD        *float64        `json:"cost_usd"`
	LatencyMS      int64           `json:"latency_ms"`
	ShouldContinue bool            `json:"should_continue"`
	StopReason     string          `json:"stop_reason,omitempty"`
	Decision       json.RawMessage `json:"decision"`
}

// Status is a job's state and progress.
type Status struct {
	ID            string          `json:"id"`
	Tenant        string          `json:"tenant"`
	Status        string          `json:"status"`
	Model         string          `json:"model"`
	Format        string          `json:"format"`
	Chunks        int             `json:"chunks"`
	FinishReasons []string        `json:"finish_reasons"`
	StopReason    string          `json:"stop_reason,omitempty"`
	Error         string          `json:"error,omitempty"`
	Tokens        Tokens          `json:"tokens"`
	CostUSD       *float64        `json:"cost_usd"`
	LastDecision  json.RawMessage `json:"last_decision,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	FinishedAt    *time.Time      `json:"finished_at,omitempty"`
	ChunkDetails  []ChunkStatus   `json:"chunk_details"`
}

// str is *p, or "" for nil: the store's nullable columns as the API's
// omitempty strings.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Terminal reports whether the job will not change again.
func (s Status) Terminal() bool { return store.Terminal(s.Status) }

// checkID refuses a malformed job ID before it reaches the database. Only
// the canonical form carryover hands out (lowercase, hyphenated) names a
// job: uuid.Parse and Postgres' uuid cast accept other spellings
// (urn:uuid:…, braces, upper case, no hyphens), and some of them Postgres
// refuses with an error rather than finding nothing.
func checkID(id string) error {
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return fmt.Errorf("%w: %q is not a job ID", ErrNotFound, id)
	}
	return nil
}

// Status reads a job's state and progress.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	if err := checkID(id); err != nil {
		return Status{}, err
	}
	j, err := c.store.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Status{}, ErrNotFound
	}
	if err != nil {
		return Status{}, err
	}
	chunks, err := c.store.Chunks(ctx, id, store.ChunkDecisions)
	if err != nil {
		return Status{}, err
	}
	// Usage and cost so far, over every attempt (failed calls that reported usage were billed too).
	u, cost, err := c.store.Totals(ctx, id)
	if err != nil {
		return Status{}, err
	}
	s := Status{
		ID: j.ID, Tenant: j.TenantID, Status: j.Status, Model: j.Model, Format: j.Format, Chunks: len(chunks),
		FinishReasons: make([]string, len(chunks)), StopReason: str(j.StopReason), Error: str(j.Error),
		CostUSD: cost, Metadata: j.Metadata,
		Tokens:    Tokens{Input: u.Input, Cached: u.Cached, Output: u.Output, Reasoning: u.Reasoning},
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt,
		ChunkDetails: make([]ChunkStatus, len(chunks)),
	}
	for i, ch := range chunks {
		s.FinishReasons[i] = ch.FinishReason
		s.ChunkDetails[i] = ChunkStatus{Seq: ch.Seq, Size: ch.Size, FinishReason: ch.FinishReason, ResponseID: str(ch.ResponseID),
			OutputTokens: ch.Usage.Output, CostUSD: ch.CostUSD, LatencyMS: ch.LatencyMS, ShouldContinue: ch.ShouldContinue,
			StopReason: str(ch.StopReason), Decision: ch.Decision}
	}
	if n := len(chunks); n > 0 {
		s.LastDecision = chunks[n-1].Decision
	}
	return s, nil
}

// Result is a job's merged document.
type Result struct {
	JobID        string          `json:"job_id"`
	Tenant       string          `json:"tenant"`
	Status       string          `json:"status"`
	Content      string          `json:"content"`
	Metadata     json.RawMessage `json:"metadata"`
	CostUSD      *float64        `json:"cost_usd"`
	MergeSuccess bool            `json:"merge_success"`
	MergeError   string          `json:"merge_error,omitempty"`
}

// Result reads a job's merged document, or ErrNotReady.
func (c *Client) Result(ctx context.Context, id string) (Result, error) {
	if err := checkID(id); err != nil {
		return Result{}, err
	}
	j, err := c.store.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, ErrNotFound
	}
	if err != nil {
		return Result{}, err
	}
	r, err := c.store.GetResult(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, ErrNotReady
	}
	if err != nil {
		return Result{}, err
	}
	if r.PrunedAt != nil {
		return Result{}, fmt.Errorf("%w on %s", ErrPruned, r.PrunedAt.Format(time.DateOnly))
	}
	return Result{JobID: id, Tenant: j.TenantID, Status: j.Status, Content: r.Content, Metadata: r.Metadata, CostUSD: r.CostUSD,
		MergeSuccess: r.MergeSuccess, MergeError: str(r.MergeError)}, nil
}

// Cancel stops a job: no model call starts after it, and a call in flight
// is aborted (the cancellation is committed in Postgres first, so the
// aborted task is not retried). Chunks already stored are kept; Remerge
// merges them. Cancelling a finished job changes nothing.
func (c *Client) Cancel(ctx context.Context, id string) (Status, error) {
	if err := c.writable(); err != nil {
		return Status{}, err
	}
	if err := checkID(id); err != nil {
		return Status{}, err
	}
	_, changed, err := c.enq.Cancel(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Status{}, ErrNotFound
	}
	if err != nil {
		return Status{}, err
	}
	st, err := c.Status(ctx, id)
	if err == nil && changed {
		// Best effort: the next chunk's task, if a worker is running it now;
		// if it is waiting on a background call, it runs at once instead of
		// at its next poll and cancels the call at the provider.
		taskID := jobs.ChunkTaskID(id, st.Chunks)
		_ = c.insp.CancelProcessing(taskID)
		if queue, err := c.tasks.ChunkQueue(ctx, id); err == nil {
			_ = c.insp.RunTask(queue, taskID)
		}
	}
	return st, err
}

// Resume continues a job stopped by a limit, a budget, exhausted retries or
// a cancel, with the raised limits in o, from its last stored response (not
// from scratch). Its time limit counts from the resume.
func (c *Client) Resume(ctx context.Context, id string, o ResumeOptions) (Status, error) {
	if err := c.writable(); err != nil {
		return Status{}, err
	}
	if err := checkID(id); err != nil {
		return Status{}, err
	}
	if err := c.enq.Resume(ctx, id, o); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Status{}, ErrNotFound
		}
		return Status{}, err
	}
	return c.Status(ctx, id)
}

// Remerge merges a finished or cancelled job's stored chunks again — for a
// cancelled job, for the first time — and sets its status from the new
// merge. It returns ErrNotReady for a job still generating or with no chunks.
func (c *Client) Remerge(ctx context.Context, id string) (Status, error) {
	if err := c.writable(); err != nil {
		return Status{}, err
	}
	if err := checkID(id); err != nil {
		return Status{}, err
	}
	ok, err := c.enq.Remerge(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Status{}, ErrNotFound
	}
	if err != nil {
		return Status{}, err
	}
	if !ok {
		return Status{}, fmt.Errorf("%w: only a finished or cancelled job with stored chunks can be merged again", ErrNotReady)
	}
	return c.Status(ctx, id)
}

// Wait polls until the job is terminal or ctx ends, calling progress (if not
// nil) whenever the job moved.
func (c *Client) Wait(ctx context.Context, id string, progress func(Status)) (Status, error) {
	delay := 50 * time.Millisecond
	lastChunks, lastStatus := -1, ""
	for {
		s, err := c.Status(ctx, id)
		if err != nil {
			return s, err
		}
		if progress != nil && (s.Chunks != lastChunks || s.Status != lastStatus) {
			progress(s)
			lastChunks, lastStatus = s.Chunks, s.Status
		}
		if s.Terminal() {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// Event is one entry of a job's history: state changes, warnings, errors.
type Event struct {
	// ID increases with every event; pass the last one read to Events to
	// read only newer ones.
	ID int64 `json:"id"`
	// Seq is the chunk the event is about, if any.
	Seq *int `json:"seq,omitempty"`
	// Level is info, warn or error.
	Level string `json:"level"`
	// Type is what happened: status, decision, call_failed, content_filter,
	// incomplete, tool_error, ...
	Type      string          `json:"type"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// ParseErrorPolicy reads an error policy's short form, e.g.
// "retry_all(3),validation=stop" (see ErrorPolicy).
func ParseErrorPolicy(s string) (ErrorPolicy, error) { return carryovertype.ParseErrorPolicy(s) }

// Events lists a job's events after the event id after (0 for all), oldest first.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if _, err := c.store.GetJob(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	rows, err := c.store.Events(ctx, id, after)
	if err != nil {
		return nil, err
	}
	events := make([]Event, len(rows))
	for i, e := range rows {
		events[i] = Event(e)
	}
	return events, nil
}

// Ping checks that Postgres and Redis answer. Its error wraps
// ErrPostgresUnavailable or ErrRedisUnavailable, and the cause.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.store.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrPostgresUnavailable, err)
	}
	if c.rdb == nil {
		return nil
	}
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrRedisUnavailable, err)
	}
	return nil
}

// Ping's errors name the service that did not answer.
var (
	ErrPostgresUnavailable = errors.New("postgres unavailable")
	ErrRedisUnavailable    = errors.New("redis unavailable")
)

// Authenticate returns the tenant an API key belongs to, or ErrUnauthorized.
func (c *Client) Authenticate(ctx context.Context, key string) (string, error) {
	t, err := c.store.Authenticate(ctx, key)
	if errors.Is(err, store.ErrBadKey) {
		return "", ErrUnauthorized
	}
	return t, err
}

// ErrUnauthorized means an API key is unknown or revoked.
var ErrUnauthorized = errors.New("unknown or revoked API key")

// Owner returns the tenant a job belongs to.
func (c *Client) Owner(ctx context.Context, id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	t, err := c.store.JobTenant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotFound
	}
	return t, err
}

// Watch sends the job's status on the returned channel whenever it changes
// — at once, then on every chunk and status change (Postgres LISTEN/NOTIFY,
// re-reading the tables each time, so nothing is missed) — and closes the
// channel after a final status or when ctx ends. A watch holds no Postgres
// connection while it waits: the process listens on one connection of its
// own for every watch, and each re-read is a short pooled query.
func (c *Client) Watch(ctx context.Context, id string) (<-chan Status, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	// Subscribe before the first read, so that a change committed after it
	// wakes the watch.
	sub, err := c.store.Watch(ctx, id)
	if err != nil {
		return nil, err
	}
	first, err := c.Status(ctx, id)
	if err != nil {
		sub.Close()
		return nil, err
	}
	out := make(chan Status, 1)
	go func() {
		defer close(out)
		defer sub.Close()
		last := first
		select {
		case out <- first:
		case <-ctx.Done():
			return
		}
		tick := time.NewTicker(5 * time.Second) // a safety net; notifications drive the stream
		defer tick.Stop()
		for !last.Terminal() {
			select {
			case <-ctx.Done():
				return
			case <-sub.C:
			case <-tick.C:
			}
			st, err := c.Status(ctx, id)
			if err != nil {
				return
			}
			if st.Status == last.Status && st.Chunks == last.Chunks {
				continue
			}
			select {
			case out <- st:
				last = st
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// JobCounts counts jobs by status.
func (c *Client) JobCounts(ctx context.Context) (map[string]int64, error) {
	return c.store.CountByStatus(ctx)
}

// Inspector is the client's asynq inspector, for operator tools (nil on a
// read-only client).
func (c *Client) Inspector() *asynq.Inspector { return c.insp }

// Consumers reports the queue a job's next chunk task goes to and how many
// live asynq servers (workers) take tasks from it. Servers announce
// themselves in Redis every few seconds and expire when they stop, so 0
// means nobody will run the job until a worker on that queue starts: a
// waiting producer can say so instead of waiting in silence.
func (c *Client) Consumers(ctx context.Context, id string) (queue string, servers int, err error) {
	if err := checkID(id); err != nil {
		return "", 0, err
	}
	if err := c.writable(); err != nil {
		return "", 0, err
	}
	if queue, err = c.tasks.ChunkQueue(ctx, id); err != nil {
		return "", 0, err
	}
	infos, err := c.insp.Servers()
	if err != nil {
		return queue, 0, fmt.Errorf("client: asynq servers: %w", err)
	}
	for _, s := range infos {
		if _, ok := s.Queues[queue]; ok && s.Status == "active" {
			servers++
		}
	}
	return queue, servers, nil
}
