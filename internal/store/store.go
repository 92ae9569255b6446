// Package store is carryover's only access to Postgres: jobs, chunks, model
// calls, decisions, events, results and prices. Postgres is the source of
// truth; every write the pipeline depends on is one statement, and a chunk's
// claim and save share their round trips and commit with the other chunks of
// the worker (see locker.go), so a chunk costs as little as the design allows.
//
// One file per thing owned: jobs.go (the jobs table, events, webhook
// delivery attempts), webhooks.go (the webhook events a job's end writes),
// claims.go (a delivery's hold on a job), saves.go (storing a chunk),
// failures.go (failed and lost calls, stopping a job), results.go (chunks
// and results as read back), merge.go (what a merge reads), prices.go,
// keys.go (API keys) and locker.go (the lock session).
//
// By key. A statement that changes one job (or a batch of jobs) given by id
// and guarded by its status tests the status joined to an empty string, an
// expression no index answers, so that Postgres can only find the rows by
// their key. Written plainly, the status test matches the partial indexes
// of live jobs and the status indexes, and whenever the statistics say few
// jobs are live — a fresh deployment, or any burst of new jobs since the
// last ANALYZE, which is exactly when a backlog builds — Postgres scans
// every live job's index entry to find the one row (EXPLAIN ANALYZE by
// hand, 20,000 jobs queued: 3.3 ms instead of 0.15 ms to end a job, 4.8 ms
// instead of 0.9 ms to start three; TestKeyLookupsWithStaleStatistics
// checks the plans). The lock session goes further: see
// lockSession.connect.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carryover/carryover/migrations"
)

// ErrNotFound is returned when a job does not exist.
var ErrNotFound = errors.New("not found")

// Store wraps a pgx pool, and the lock session of a worker's chunk claims
// (started by the first claim: producers and readers never need it).
type Store struct {
	pool     *pgxpool.Pool
	lockOnce sync.Once
	locker   *locker
	pollOnce sync.Once
	polls    *pollBook
	hubOnce  sync.Once
	hub      *hub
	log      *slog.Logger // the notification hub's warnings
}

// notifications returns the notification hub, starting it on first use:
// only a process that watches jobs (the API, a waiting CLI) listens.
func (s *Store) notifications() *hub {
	s.hubOnce.Do(func() { s.hub = newHub(s, s.pool.Config().ConnConfig.Copy(), s.log) })
	return s.hub
}

// pollBook returns the poll recorder, starting it on first use.
func (s *Store) pollBook() *pollBook {
	s.pollOnce.Do(func() { s.polls = newPollBook(s) })
	return s.polls
}

// locks returns the lock session, starting it on first use.
func (s *Store) locks() *locker {
	s.lockOnce.Do(func() { s.locker = newLocker(s.pool.Config().ConnConfig.Copy()) })
	return s.locker
}

// Options tune the connection pool.
type Options struct {
	// MaxConns caps the pool. 0 keeps pgx's default (max(4, CPUs)) unless the
	// URL sets pool_max_conns. A worker needs one per concurrent task, or its
	// tasks queue for connections.
	MaxConns int32
	// AcquireTimeout bounds how long a statement waits for a pooled
	// connection; past it the statement fails with
	// context.DeadlineExceeded instead of queueing without end behind a
	// saturated pool. 0 waits as long as the caller's context allows.
	AcquireTimeout time.Duration
	// Logger receives the store's own warnings (the job-notification
	// listener losing its connection); nil is slog.Default.
	Logger *slog.Logger
}

// Open connects to Postgres and checks the connection.
func Open(ctx context.Context, dsn string, opts ...Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parse DATABASE_URL: %w", err)
	}
	log := slog.Default()
	for _, o := range opts {
		if o.Logger != nil {
			log = o.Logger
		}
		if o.MaxConns > 0 && !strings.Contains(dsn, "pool_max_conns") {
			cfg.MaxConns = o.MaxConns
		}
		if o.AcquireTimeout > 0 {
			cfg.ConnConfig.Tracer = acquireBound{o.AcquireTimeout}
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: ping %s: %w", Redact(dsn), err)
	}
	return &Store{pool: pool, log: log}, nil
}

// Pool exposes the pool for callers that read with their own SQL (tests, views).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close releases every connection. The lock session first runs what is
// queued on it.
func (s *Store) Close() {
	s.lockOnce.Do(func() {}) // no lock session starts after this
	if s.locker != nil {
		s.locker.close()
	}
	s.pollOnce.Do(func() {})
	if s.polls != nil {
		s.polls.close()
	}
	s.hubOnce.Do(func() {})
	if s.hub != nil {
		s.hub.close()
	}
	s.pool.Close()
}

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Migrate applies every pending migration. golang-migrate holds a Postgres
// advisory lock while it runs, so several workers starting at once are safe:
// one migrates, the others wait and then find nothing to do.
func Migrate(dsn string) error {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("store: migrations source: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, migrateURL(dsn))
	if err != nil {
		return fmt.Errorf("store: migrate %s: %w", Redact(dsn), err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("store: migrate up: %w", err)
	}
	return nil
}

// migrateURL rewrites a postgres:// DSN to the pgx5:// scheme golang-migrate's
// pgx v5 driver registers.
func migrateURL(dsn string) string {
	for _, p := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(dsn, p) {
			return "pgx5://" + strings.TrimPrefix(dsn, p)
		}
	}
	return dsn
}

// Redact hides the passwords of a DSN so it can be logged: in a URL-style
// DSN the userinfo's password and any *password query parameter, in a
// keyword/value one (host=… password=secret, password='a b') every
// *password setting. A URL it cannot parse keeps only its scheme and host.
func Redact(dsn string) string {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		rest, _, _ = strings.Cut(rest, "?")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = "xxxxx" + rest[i:]
		}
		return scheme + "://" + rest
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); len(q) > 0 {
		redacted := false
		for k := range q {
			if strings.HasSuffix(strings.ToLower(k), "password") {
				q.Set(k, "xxxxx")
				redacted = true
			}
		}
		if redacted {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// kvPassword matches a *password setting of a keyword/value DSN and its
// value as libpq reads it: single-quoted with backslash escapes (an
// unterminated quote runs to the end), or up to the next unescaped space.
var kvPassword = regexp.MustCompile(`(?i)((?:^|\s)\w*password\s*=\s*)('(?:\\.|[^'\\])*'?|(?:\\.|[^\s\\'])*)`)
