package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/internal/testenv"
)

var dbURL string

// TestMain runs the command itself when testenv.Command asks it to, and the
// tests otherwise.
func TestMain(m *testing.M) { testenv.MainOrCommand(m, &dbURL, main) }

// A typo of a subcommand or a stray argument is refused with the usage and
// exit code 2 before anything connects (the services here are unreachable:
// `worker help` and `worker apii` used to start a worker, which failed on
// them with exit 1); help and -h list the subcommands and exit 0.
func TestUsageRefused(t *testing.T) {
	t.Parallel()
	nowhere := []string{"DATABASE_URL=postgres://root@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", "REDIS_URL=redis://127.0.0.1:1/0"}
	subs := []string{"worker migrate", "worker merge", "worker api", "worker apikey create --tenant NAME", "worker help"}
	tests := []struct {
		args []string
		code int
		want []string // in stderr
	}{
		{[]string{"help"}, 0, subs},
		{[]string{"-h"}, 0, append(subs, "-concurrency")},
		{[]string{"run", "-h"}, 0, append(subs, "-concurrency")},
		{[]string{"apii"}, 2, []string{`unknown worker subcommand "apii" (did you mean "api"?)`, "usage: worker"}},
		{[]string{"mirgate"}, 2, []string{`(did you mean "migrate"?)`}},
		{[]string{"hello"}, 2, []string{`unknown worker subcommand "hello"`}},
		{[]string{"run", "extra"}, 2, []string{`worker: run takes no arguments, got ["extra"]`}},
		{[]string{"migrate", "now"}, 2, []string{`migrate takes no arguments`}},
		{[]string{"api", "8080"}, 2, []string{`api takes no arguments`}},
		{[]string{"--no-such-flag"}, 2, []string{"flag provided but not defined: -no-such-flag", "usage: worker"}},
		{[]string{"apikey"}, 2, []string{"apikey: give a subcommand"}},
		{[]string{"apikey", "crate"}, 2, []string{`unknown apikey subcommand "crate" (did you mean "create"?)`}},
		{[]string{"apikey", "create"}, 2, []string{"apikey create: --tenant is required"}},
		{[]string{"apikey", "create", "--tenant", "Bad Tenant!"}, 2, []string{`--tenant "Bad Tenant!": a tenant must be 1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit`}},
		{[]string{"apikey", "create", "--tenant", "acme", "extra"}, 2, []string{"apikey create takes no arguments"}},
		{[]string{"apikey", "revoke"}, 2, []string{"apikey revoke: give one PREFIX or KEY"}},
		{[]string{"merge", "--format", "csv"}, 2, []string{"merge: no chunk files given"}},
	}
	for _, tt := range tests {
		code, out, errOut := testenv.Command(t, nowhere, tt.args...)
		if code != tt.code || out != "" {
			t.Errorf("worker %q: exit %d, stdout %q; want exit %d and nothing on stdout (stderr %q)", tt.args, code, out, tt.code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("worker %q: stderr lacks %q:\n%s", tt.args, w, errOut)
			}
		}
	}
}

// apikey create without --tenant, or with a malformed one, stores nothing
// (it used to make a key of tenant "default", or fail on the tenants
// table's CHECK constraint); with --tenant it makes the key and the tenant.
func TestAPIKeyCreateTenant(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	env := []string{"DATABASE_URL=" + db}
	count := func() (keys, tenants int) {
		conn, err := pgx.Connect(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM api_keys), (SELECT count(*) FROM tenants)`).Scan(&keys, &tenants); err != nil {
			t.Fatal(err)
		}
		return keys, tenants
	}
	k0, t0 := count()
	for _, args := range [][]string{{"apikey", "create"}, {"apikey", "create", "--tenant", "Bad Tenant!"}, {"apikey", "create", "--tenant", ""}} {
		if code, out, errOut := testenv.Command(t, env, args...); code != 2 || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a refusal", args, code, out, errOut)
		}
	}
	if k, tn := count(); k != k0 || tn != t0 {
		t.Fatalf("refusals stored %d keys and %d tenants", k-k0, tn-t0)
	}
	tenant := testenv.RandomName("acme-")
	code, out, errOut := testenv.Command(t, env, "apikey", "create", "--tenant", tenant)
	if code != 0 || !strings.HasPrefix(out, "co_") || !strings.Contains(errOut, "for tenant "+tenant) {
		t.Fatalf("create --tenant %s: exit %d, stdout %q, stderr %q", tenant, code, out, errOut)
	}
	if k, tn := count(); k != k0+1 || tn != t0+1 {
		t.Fatalf("create stored %d keys and %d tenants, want 1 and 1", k-k0, tn-t0)
	}
}
