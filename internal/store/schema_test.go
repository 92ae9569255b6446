package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

// CheckSchema accepts this build's schema and refuses an older or a
// half-applied one with ErrNotMigrated and the command that fixes it (an
// empty database is TestServicesMissing's, in cmd/enqueue).
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.Open(ctx, testenv.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("migrated database: %v", err)
	}
	var version int64
	if err := s.Pool().QueryRow(ctx, `SELECT version FROM schema_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		update string
		want   string
	}{
		{`UPDATE schema_migrations SET version = 1`, "its schema is at version 1"},
		{`UPDATE schema_migrations SET dirty = true`, "failed midway"},
	}
	for _, tt := range tests {
		if _, err := s.Pool().Exec(ctx, tt.update); err != nil {
			t.Fatal(err)
		}
		err := s.CheckSchema(ctx)
		if !errors.Is(err, store.ErrNotMigrated) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "worker migrate") {
			t.Errorf("%s: %v; want ErrNotMigrated saying %q and to run worker migrate", tt.update, err, tt.want)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE schema_migrations SET version = $1, dirty = false`, version); err != nil {
			t.Fatal(err)
		}
	}
}

// A malformed tenant is refused with the rule, not the tenants table's
// constraint, and nothing is stored.
func TestCreateAPIKeyBadTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	bad := []string{"Bad Tenant!", "", "-lead", "UPPER", strings.Repeat("a", 64)}
	for _, tenant := range bad {
		_, _, err := s.CreateAPIKey(ctx, tenant)
		if !errors.Is(err, store.ErrBadTenant) || !strings.Contains(err.Error(), "lowercase letters") || strings.Contains(err.Error(), "SQLSTATE") {
			t.Errorf("%q: %v; want ErrBadTenant with the rule", tenant, err)
		}
	}
	// Parallel tests make tenants of their own: count only these.
	var stored int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM tenants WHERE id = ANY($1)`, bad).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatalf("%d tenants stored", stored)
	}
}
