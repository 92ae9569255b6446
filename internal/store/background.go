package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// BackgroundCall is a detached model call (the Responses API's background
// mode) whose response id is committed: the record that lets a later
// delivery resume the call instead of paying for a new one.
type BackgroundCall struct {
	ResponseID      string
	TaskID          string
	Attempt         int // the delivery that created it
	MaxOutputTokens int
	Created         time.Time
	Polls           int // polls that found it unfinished
}

// Background call statuses: what a poll saw, then why a row closed.
const (
	BackgroundQueued     = "queued"
	BackgroundInProgress = "in_progress"
	BackgroundCancelled  = "cancelled"
	BackgroundExpired    = "expired"  // the provider no longer knows the id (404)
	BackgroundReplaced   = "replaced" // a new call with a larger budget took its place
	BackgroundFailed     = "failed"
)

// StartBackground commits the id of a background call just created for the
// claim's chunk, before anyone waits on it. It is one short write on a pooled
// connection, made as soon as the provider answered: a crash before it
// commits is the one window in which a call can be paid for twice (and the
// call's start, removed by this statement, then records it as lost).
func (c *Claim) StartBackground(ctx context.Context, b BackgroundCall) error {
	_, err := c.store.pool.Exec(ctx, `
WITH s AS (DELETE FROM call_starts WHERE id = nullif($8, '')::uuid)
INSERT INTO background_calls (response_id, job_id, seq, task_id, attempt, max_output_tokens, created_at)
VALUES ($1, $2::uuid, $3, $4, $5, $6, $7) ON CONFLICT (response_id) DO NOTHING`,
		b.ResponseID, c.Job.ID, c.Seq, b.TaskID, b.Attempt, b.MaxOutputTokens, b.Created, c.callID)
	if err != nil {
		return fmt.Errorf("store: record background call %s of job %s chunk %d: %w", b.ResponseID, c.Job.ID, c.Seq, err)
	}
	c.Background, c.callID = &b, "" // the call is followed through its id now, not its start
	return nil
}

// PolledBackground counts a poll that found the call unfinished, with the
// status it saw. Polls are statistics, and a worker with thousands of calls
// in flight makes thousands a second: they are written in batches, one
// statement every pollFlush for all the polls since the last, committed
// without waiting for the WAL flush. A crash loses the counts of the last
// batch, never a call.
func (s *Store) PolledBackground(responseID, status string) {
	if b := s.pollBook(); b != nil {
		b.add(responseID, status)
	}
}

// pollFlush is how often the polls counted are written.
const pollFlush = 250 * time.Millisecond

// pollBook gathers polls until the next flush.
type pollBook struct {
	s       *Store
	mu      sync.Mutex
	pending map[string]pollCount
	quit    chan struct{}
	done    chan struct{}
}

type pollCount struct {
	n      int
	status string
}

func newPollBook(s *Store) *pollBook {
	b := &pollBook{s: s, pending: map[string]pollCount{}, quit: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *pollBook) add(responseID, status string) {
	b.mu.Lock()
	c := b.pending[responseID]
	b.pending[responseID] = pollCount{n: c.n + 1, status: status}
	b.mu.Unlock()
}

func (b *pollBook) loop() {
	defer close(b.done)
	t := time.NewTicker(pollFlush)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			b.flush()
			return
		case <-t.C:
			b.flush()
		}
	}
}

// flush writes the polls gathered since the last flush in one statement.
func (b *pollBook) flush() {
	b.mu.Lock()
	batch := b.pending
	if len(batch) > 0 {
		b.pending = make(map[string]pollCount, len(batch))
	}
	b.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ids, ns, statuses := make([]string, 0, len(batch)), make([]int32, 0, len(batch)), make([]string, 0, len(batch))
	for id, c := range batch {
		ids, ns, statuses = append(ids, id), append(ns, int32(c.n)), append(statuses, c.status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = b.s.asyncUpdate(ctx, `UPDATE background_calls b SET polls = b.polls + d.n, status = d.status, last_polled_at = now()
FROM unnest($1::text[], $2::int4[], $3::text[]) AS d(id, n, status) WHERE b.response_id = d.id AND b.closed_at IS NULL`,
		ids, ns, statuses)
}

func (b *pollBook) close() {
	close(b.quit)
	<-b.done
}

// ResumedBackground counts a delivery that picked the call up after the
// one waiting on it died (statistics, as PolledBackground).
func (s *Store) ResumedBackground(ctx context.Context, responseID string) error {
	return s.asyncUpdate(ctx, `UPDATE background_calls SET resumes = resumes + 1 WHERE response_id = $1`, responseID)
}

// asyncUpdate runs one statement in a transaction that commits without
// waiting for the WAL flush.
func (s *Store) asyncUpdate(ctx context.Context, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: update background calls: %w", err)
	}
	return nil
}

// CloseBackground closes a background call that will never be a chunk, with
// the reason (failed, cancelled, expired, replaced).
func (s *Store) CloseBackground(ctx context.Context, responseID, status string) error {
	_, err := s.pool.Exec(ctx, `UPDATE background_calls SET status = $2, closed_at = now() WHERE response_id = $1 AND closed_at IS NULL`,
		responseID, status)
	if err != nil {
		return fmt.Errorf("store: close background call %s: %w", responseID, err)
	}
	return nil
}

// RecentLatency is the median time from creation to read of the last
// hundred background calls of the hour for model and output budget that
// became chunks, or false when there were none: a worker that has not seen
// such a call yet times its first polls by it. (It is the time the worker
// read the call, a little past its end: a first estimate, which the calls
// the worker sees itself then correct.)
func (s *Store) RecentLatency(ctx context.Context, model string, budget int) (time.Duration, bool, error) {
	var ms *float64
	err := s.pool.QueryRow(ctx, `
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) FROM (
	SELECT c.latency_ms FROM background_calls b
	JOIN chunks c ON c.job_id = b.job_id AND c.seq = b.seq AND c.response_id = b.response_id
	JOIN jobs j ON j.id = b.job_id
	WHERE b.max_output_tokens = $2 AND b.created_at > now() - interval '1 hour' AND j.model = $1 AND c.latency_ms IS NOT NULL
	ORDER BY b.created_at DESC LIMIT 100
) recent`, model, budget).Scan(&ms)
	if err != nil {
		return 0, false, fmt.Errorf("store: recent latency of %s: %w", model, err)
	}
	if ms == nil {
		return 0, false, nil
	}
	return time.Duration(*ms * float64(time.Millisecond)), true, nil
}

// BackgroundCounts are the background calls in flight, by the status their
// last poll saw.
func (s *Store) BackgroundCounts(ctx context.Context) (map[string]int64, error) {
	return s.countBy(ctx, "background calls", `SELECT status, count(*) FROM background_in_flight GROUP BY status`)
}
