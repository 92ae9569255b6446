package store_test

import (
	"context"
	"io/fs"
	"slices"
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
	// Step down through the migrations that exist (their numbers may have
	// gaps while branches that each add one are merged).
	ups, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ups)
	for _, up := range ups {
		v, _, _ := strings.Cut(up, "_")
		if err := m.Steps(-1); err != nil {
			t.Fatalf("migration %s down: %v", v, err)
		}
		if err := m.Steps(1); err != nil {
			t.Fatalf("migration %s up again: %v", v, err)
		}
		if err := m.Steps(-1); err != nil {
			t.Fatalf("migration %s down again: %v", v, err)
		}
	}
	if err := m.Up(); err != nil {
		t.Fatalf("every migration up from none: %v", err)
	}
	if v, dirty, err := m.Version(); err != nil || dirty || v != top {
		t.Fatalf("version %d (dirty %v) after the round trip, want %d: %v", v, dirty, top, err)
	}
}
