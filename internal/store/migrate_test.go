package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/migrations"
)

// Every migration goes down and up again, one step at a time, on a database
// of its own holding a finished job: each down migration undoes its up
// migration over real rows, and the schema it leaves takes the next up
// migration again.
func TestMigrationsDownAndUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := testenv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Drop()
	s, err := store.Open(ctx, db.URL, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	id := newJob(t, s)
	c, err := s.ClaimChunk(ctx, id, 0)
	if err != nil || c.Outcome != store.Claimed {
		t.Fatal(c.Outcome, err)
	}
	if _, err := c.Save(ctx, chunk("a", false)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, "pgx5://"+strings.TrimPrefix(db.URL, "postgres://"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	top, _, err := m.Version()
	if err != nil {
		t.Fatal(err)
	}
	// Step down by version, not by number: versions need not be contiguous.
	for v := top; ; {
		if err := m.Steps(-1); err != nil {
			t.Fatalf("migration %d down: %v", v, err)
		}
		if err := m.Steps(1); err != nil {
			t.Fatalf("migration %d up again: %v", v, err)
		}
		if err := m.Steps(-1); err != nil {
			t.Fatalf("migration %d down again: %v", v, err)
		}
		next, _, err := m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		v = next
	}
	if err := m.Up(); err != nil {
		t.Fatalf("every migration up from none: %v", err)
	}
	if v, dirty, err := m.Version(); err != nil || dirty || v != top {
		t.Fatalf("version %d (dirty %v) after the round trip, want %d: %v", v, dirty, top, err)
	}
}
