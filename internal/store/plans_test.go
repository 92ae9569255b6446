package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

// TestKeyLookupsWithStaleStatistics checks that the statements run for
// every job find their rows by key when the statistics are stale: the jobs
// table analyzed while it held a few finished jobs, then 5,000 queued (a
// fresh deployment's first burst, before autovacuum comes by). Written
// plainly, the status guards match the live jobs' partial indexes, and the
// lock session's generic plan, made while the table was small, scanned the
// whole table for every claim read.
func TestKeyLookupsWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	db, err := testenv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Drop()
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	addJobs := func(n int, status string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, model, format, input, max_output_tokens, continuation, tenant_id, status, request_hash)
			SELECT gen_random_uuid(), 'm', 'text', '{}', 64, '{}', 'plans', $2, 'h' FROM generate_series(1, $1)`, n, status); err != nil {
			t.Fatal(err)
		}
	}
	exec(`ALTER TABLE jobs SET (autovacuum_enabled = false)`)
	exec(`INSERT INTO tenants (id) VALUES ('plans')`)
	addJobs(20, "succeeded")
	exec(`ANALYZE jobs`)

	// The lock session's statements, planned (once, generic) while the
	// table is small.
	exec(store.LockSessionSettings)
	exec(`PREPARE claim(uuid[], int4[]) AS ` + store.ClaimSQL)
	exec(`PREPARE mark(uuid[]) AS ` + store.MarkRunningSQL)
	exec(`EXECUTE claim('{00000000-0000-0000-0000-000000000001}', '{0}')`)
	addJobs(5000, "queued")
	exec(`UPDATE jobs SET status = 'merging' WHERE id = (SELECT id FROM jobs WHERE status = 'queued' LIMIT 1)`)

	var ids, merging string // three queued jobs as an array literal, and the merging one
	if err := conn.QueryRow(ctx, `SELECT (SELECT array_agg(id)::text FROM (SELECT id FROM jobs WHERE status = 'queued' LIMIT 3) q),
		(SELECT id::text FROM jobs WHERE status = 'merging')`).Scan(&ids, &merging); err != nil {
		t.Fatal(err)
	}
	arr := "'" + ids + "'"
	exec(`RESET ALL`) // the pool's statements run with the defaults
	exec(`PREPARE result(uuid, text, jsonb, numeric, bool, text, text, text, int, int8, int8, int8, int8, int8) AS ` + store.SaveResultSQL)
	for _, c := range []struct{ name, settings, run string }{
		{"claim read (lock session)", store.LockSessionSettings, `EXECUTE claim(` + arr + `, '{1,1,1}')`},
		{"start (lock session)", store.LockSessionSettings, `EXECUTE mark(` + arr + `)`},
		{"result (pool)", `RESET ALL`, `EXECUTE result('` + merging + `', 'x', '{}', 0, true, '', 'succeeded', '', 1, 0, 0, 0, 0, 0)`},
	} {
		exec(c.settings)
		rows, err := conn.Query(ctx, `EXPLAIN (COSTS OFF) `+c.run, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", c.run, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "jobs_pkey") || strings.Contains(plan, "Seq Scan on jobs") || strings.Contains(plan, "live_idx") ||
			strings.Contains(plan, "status_created_idx") {
			t.Errorf("%s does not find the jobs by key:\n%s", c.name, plan)
		}
	}
}
