package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The notification hub.
//
// A progress stream used to hold a pooled connection for its whole life,
// LISTENing on it, so as many open streams as the pool had connections
// stalled every other request of the process. Now one connection of the
// process's own, outside the pool, LISTENs on carryover_jobs, and the hub fans
// each notification out in-process to the subscribers of its job. A stream
// holds no connection: subscribing and unsubscribing are one short pooled
// statement each, and only for a job's first subscriber and its last.
//
// Chunk saves notify only jobs with a row in job_watchers (see the lock
// session's pg_notify). The hub keeps one row per watched job, whatever its
// number of subscribers: the rows are what a save reads, and a row per
// subscriber would only make subscribing dearer. Each row's watcher ID is
// that of one spell of subscription (a job's first subscriber to its last), so
// a new spell's insert and an ending spell's delete never touch the same row.
//
// Postgres drops notifications sent while no one listens, so when the LISTEN
// connection is lost the hub reconnects (with backoff) and then wakes every
// subscriber: each re-reads its job, and nothing is missed.

// Hub delivery and reconnection pacing.
const (
	hubBackoffMin = 50 * time.Millisecond
	hubBackoffMax = 5 * time.Second
	// hubConnectTimeout bounds one attempt to connect and LISTEN.
	hubConnectTimeout = 10 * time.Second
	// hubReadyWait is how long Watch waits for the LISTEN connection before it
	// returns anyway (the hub wakes every subscriber once it is up).
	hubReadyWait = 2 * time.Second
	// hubRefresh is how often the hub refreshes its watcher rows' since
	// column, which the retention sweep reads to remove rows a dead process
	// left behind (see results.go).
	hubRefresh = time.Hour
	// hubRowTimeout bounds the statement that removes a watcher row.
	hubRowTimeout = 5 * time.Second
)

// hub fans the carryover_jobs notifications out to in-process subscribers.
type hub struct {
	st     *Store
	cfg    *pgx.ConnConfig
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	jobs  map[string]*hubJob
	ready chan struct{} // closed while the LISTEN connection is up
	pid   uint32        // the LISTEN connection's backend, 0 while down
}

// hubJob is the subscribers of one job, and its watcher row.
type hubJob struct {
	id      string
	watcher string                     // the row's watcher column
	subs    map[*Subscription]struct{} // guarded by hub.mu

	reg        sync.Mutex // held while the row is inserted or deleted
	registered bool       // the row exists (guarded by reg)
	attempted  bool       // the row may exist (guarded by reg)
	gone       bool       // the last subscriber left (guarded by reg)
}

func newHub(st *Store, cfg *pgx.ConnConfig, log *slog.Logger) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hub{st: st, cfg: cfg, log: log, cancel: cancel, done: make(chan struct{}),
		jobs: map[string]*hubJob{}, ready: make(chan struct{})}
	go h.run(ctx)
	return h
}

// close stops listening. Subscriptions still open stay usable but are no
// longer woken.
func (h *hub) close() {
	h.cancel()
	<-h.done
}

// Subscription is one subscriber's interest in a job's progress.
type Subscription struct {
	// C receives when the job may have changed; it holds one wake-up, so a
	// slow reader misses none and reads every change on its next look.
	C    <-chan struct{}
	c    chan struct{}
	h    *hub
	job  *hubJob
	once sync.Once
}

func (s *Subscription) wake() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Watch subscribes to a job's progress: from its return on, every commit
// that changes the job's chunks or events wakes the subscription (Postgres
// LISTEN/NOTIFY on the process's one listening connection). The caller reads
// the job's state after Watch returns, and again on every wake-up; Close the
// subscription when done.
func (s *Store) Watch(ctx context.Context, jobID string) (*Subscription, error) {
	return s.notifications().subscribe(ctx, jobID)
}

func (h *hub) subscribe(ctx context.Context, jobID string) (*Subscription, error) {
	c := make(chan struct{}, 1)
	sub := &Subscription{C: c, c: c, h: h}
	h.mu.Lock()
	j := h.jobs[jobID]
	if j == nil {
		j = &hubJob{id: jobID, watcher: uuid.NewString(), subs: map[*Subscription]struct{}{}}
		h.jobs[jobID] = j
	}
	j.subs[sub] = struct{}{}
	sub.job = j
	ready := h.ready
	h.mu.Unlock()

	j.reg.Lock()
	var err error
	if !j.registered && !j.gone {
		// An insert that failed may have committed all the same (its answer
		// lost): hence ON CONFLICT, and Close deletes after any attempt.
		j.attempted = true
		_, err = h.st.pool.Exec(ctx, `INSERT INTO job_watchers (job_id, watcher) VALUES ($1::uuid, $2::uuid) ON CONFLICT DO NOTHING`,
			jobID, j.watcher)
		j.registered = err == nil
	}
	j.reg.Unlock()
	if err != nil {
		sub.Close()
		return nil, fmt.Errorf("store: watch job %s: %w", jobID, err)
	}
	// Wait for the LISTEN connection, so that what commits after Watch
	// returns notifies; if it is slow in coming, the hub wakes every
	// subscriber once it is up, which serves as well.
	t := time.NewTimer(hubReadyWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
	return sub, nil
}

// Close ends the subscription; the job's last subscriber removes its watcher
// row. It is safe to call more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		h, j := s.h, s.job
		h.mu.Lock()
		delete(j.subs, s)
		last := len(j.subs) == 0
		if last && h.jobs[j.id] == j {
			delete(h.jobs, j.id)
		}
		h.mu.Unlock()
		if !last {
			return
		}
		j.reg.Lock()
		defer j.reg.Unlock()
		j.gone = true
		if !j.attempted {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), hubRowTimeout)
		defer cancel()
		if _, err := h.st.pool.Exec(ctx, `DELETE FROM job_watchers WHERE job_id = $1::uuid AND watcher = $2::uuid`, j.id, j.watcher); err != nil {
			// The row only makes the job's chunks notify; the retention
			// sweep removes it after a day.
			h.log.Warn("job notifications: removing a watcher row failed", "job_id", j.id, "err", err)
		}
		j.registered, j.attempted = false, false
	})
}

// wake wakes the subscribers of a job ("" for every job).
func (h *hub) wake(jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if jobID != "" {
		if j := h.jobs[jobID]; j != nil {
			for s := range j.subs {
				s.wake()
			}
		}
		return
	}
	for _, j := range h.jobs {
		for s := range j.subs {
			s.wake()
		}
	}
}

// run keeps a LISTEN connection up until the hub closes.
func (h *hub) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer close(h.done)
	defer wg.Wait()
	wg.Go(func() {
		refresh := time.NewTicker(hubRefresh)
		defer refresh.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-refresh.C:
				h.refreshRows(ctx)
			}
		}
	})
	backoff := hubBackoffMin
	for {
		up, err := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if up {
			backoff = hubBackoffMin
		}
		h.log.Warn("job notifications: LISTEN connection lost; reconnecting", "in", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, hubBackoffMax)
	}
}

// listen connects, LISTENs, wakes every subscriber (what was sent while no
// one listened is lost), and relays notifications until the connection
// fails; up says whether it got as far as listening.
func (h *hub) listen(ctx context.Context) (up bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, hubConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, h.cfg.Copy())
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		h.mu.Lock()
		h.ready, h.pid = make(chan struct{}), 0
		h.mu.Unlock()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(cctx, "LISTEN carryover_jobs"); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	// Wake the subscribers that came while no one listened, then let new
	// ones through without waiting.
	h.wake("")
	h.mu.Lock()
	close(h.ready)
	h.pid = conn.PgConn().PID()
	h.mu.Unlock()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		h.wake(n.Payload)
	}
}

// refreshRows marks the watched jobs' rows as live, so the sweep of rows
// left by dead processes spares a job watched without a break for a day.
func (h *hub) refreshRows(ctx context.Context) {
	h.mu.Lock()
	watchers := make([]string, 0, len(h.jobs))
	for _, j := range h.jobs {
		watchers = append(watchers, j.watcher)
	}
	h.mu.Unlock()
	if len(watchers) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, hubRowTimeout)
	defer cancel()
	if _, err := h.st.pool.Exec(ctx, `UPDATE job_watchers SET since = now() WHERE watcher = ANY($1::uuid[])`, watchers); err != nil &&
		!errors.Is(err, context.Canceled) {
		h.log.Warn("job notifications: refreshing watcher rows failed", "err", err)
	}
}

// listenerPID is the LISTEN connection's backend process ID, 0 while it is
// down (for tests that kill it).
func (h *hub) listenerPID() uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid
}
