// Package testenv gives tests real, isolated Postgres and Redis: each test
// binary gets its own freshly migrated database, a test that runs in
// parallel with others and acts on the whole database gets one of its own
// (DB), and each test its own asynq queue names, so concurrent tests, runs
// (and the demo) never collide. It talks only to the loopback services named
// by CARRYOVER_TEST_DATABASE_URL and CARRYOVER_TEST_REDIS_URL.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
)

// AdminDatabaseURL is the server tests create their databases on.
func AdminDatabaseURL() string {
	if v := os.Getenv("CARRYOVER_TEST_DATABASE_URL"); v != "" {
		return v
	}
	return "postgres://root@127.0.0.1:5432/postgres?sslmode=disable"
}

// RedisURL is the Redis tests use; isolation comes from unique queue names.
func RedisURL() string {
	if v := os.Getenv("CARRYOVER_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

// RandomName returns prefix plus 12 random hex digits.
func RandomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Database is a migrated database that exists for one test binary.
type Database struct {
	URL  string
	name string
}

// NewDatabase creates and migrates a fresh database. Call Drop when done
// (from TestMain, after m.Run).
func NewDatabase(ctx context.Context) (*Database, error) {
	db, err := createDatabase(ctx, "")
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(db.URL); err != nil {
		db.Drop()
		return nil, err
	}
	return db, nil
}

// createDatabase creates an empty database, or a copy of template when named.
func createDatabase(ctx context.Context, template string) (*Database, error) {
	admin := AdminDatabaseURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("testenv: connect to %s (is Postgres running? see README): %w", store.Redact(admin), err)
	}
	defer conn.Close(ctx)
	name := RandomName("carryover_test_")
	sql := "CREATE DATABASE " + name
	if template != "" {
		sql += " TEMPLATE " + template
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return nil, fmt.Errorf("testenv: create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	return &Database{URL: u.String(), name: name}, nil
}

// template is a migrated database nobody connects to, which DB copies (a
// copy is much faster than migrating); made on first use, dropped by Main.
var template struct {
	sync.Mutex
	db *Database
}

// DB returns the URL of a migrated database of this test's own, dropped
// when the test ends: for a test that runs in parallel with others and acts
// on or looks at the whole database (the reconciler and retention do, and so
// does a look at pg_locks). The binary must use Main.
func DB(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// One copy at a time: Postgres refuses to copy a template while another
	// session is connected to it.
	template.Lock()
	defer template.Unlock()
	if template.db == nil {
		db, err := NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		template.db = db
	}
	db, err := createDatabase(ctx, template.db.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Drop)
	return db.URL
}

// Drop removes the database, disconnecting anyone still on it.
func (d *Database) Drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, AdminDatabaseURL())
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)")
}

// Main runs a package's tests against a fresh database whose URL it puts in
// *dbURL, and drops it afterwards. Use from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m, &dbURL) }
func Main(m *testing.M, dbURL *string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	db, err := NewDatabase(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*dbURL = db.URL
	code := m.Run()
	db.Drop()
	if template.db != nil {
		template.db.Drop()
	}
	os.Exit(code)
}

// Queue returns a queue name unique to this test and, when the test ends,
// deletes every Redis key of that queue (see DeleteQueue).
func Queue(t testing.TB) string {
	q := RandomName("t_")
	t.Cleanup(func() { DeleteQueue(q) })
	return q
}

// DeleteQueue deletes every Redis key of queue q and of its webhook queue —
// tasks and asynq's daily stats, which asynq's own DeleteQueue leaves for
// 90 days — so runs leave nothing behind. Examples, which have no testing.TB, call it themselves.
func DeleteQueue(q string) {
	rdb, err := redisconn.Open(RedisURL())
	if err != nil {
		return
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The queue's chunk lanes (q.lane1, …; see jobs.Queues) go with it.
	queues := []string{q, jobs.WebhookQueue(q)}
	all, _ := rdb.SMembers(ctx, "asynq:queues").Result()
	for _, name := range all {
		if strings.HasPrefix(name, q+".lane") {
			queues = append(queues, name)
		}
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for _, name := range queues {
		_ = insp.DeleteQueue(name, true)
		deleteKeys(ctx, rdb, "asynq:{"+name+"}:*")
		rdb.SRem(ctx, "asynq:queues", name)
	}
	deleteKeys(ctx, rdb, "asynq:{"+q+".lane*}:*")
}

// deleteKeys deletes the keys matching pattern, on every master of a
// cluster (a SCAN sees one node's keys).
func deleteKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) {
	del := func(ctx context.Context, c redis.Cmdable) {
		iter := c.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			del(ctx, c)
			return nil
		})
		return
	}
	del(ctx, rdb)
}

// BuildWorker compiles cmd/worker into a temporary directory of tb and
// returns the binary's path, for tests and benchmarks that run the worker
// as a process of its own (to kill it, or to measure it alone).
func BuildWorker(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "worker")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/carryover/carryover/cmd/worker")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("build the worker: %v", err)
	}
	return bin
}
