// Package testenv gives tests real, isolated Postgres and Redis: each test
// binary gets its own freshly migrated database, and each test its own asynq
// queue names, so concurrent runs (and the demo) never collide. It talks only
// to the loopback services named by CARRYOVER_TEST_DATABASE_URL and
// CARRYOVER_TEST_REDIS_URL.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

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
	admin := AdminDatabaseURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("testenv: connect to %s (is Postgres running? see README): %w", store.Redact(admin), err)
	}
	defer conn.Close(ctx)
	name := RandomName("carryover_test_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("testenv: create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	db := &Database{URL: u.String(), name: name}
	if err := store.Migrate(db.URL); err != nil {
		db.Drop()
		return nil, err
	}
	return db, nil
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
	os.Exit(code)
}

// Queue returns a queue name unique to this test and, when the test ends,
// deletes every Redis key of that queue (see DeleteQueue).
func Queue(t testing.TB) string {
	q := RandomName("t_")
	t.Cleanup(func() { DeleteQueue(q) })
	return q
}

// DeleteQueue deletes every Redis key of queue q — tasks and asynq's daily
// stats, which asynq's own DeleteQueue leaves for 90 days — so runs leave
// nothing behind. Examples, which have no testing.TB, call it themselves.
func DeleteQueue(q string) {
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		return
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	_ = asynq.NewInspectorFromRedisClient(rdb).DeleteQueue(q, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, "asynq:{"+q+"}:*", 500).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	rdb.SRem(ctx, "asynq:queues", q)
}
