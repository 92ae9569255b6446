package store

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carryover/carryover/migrations"
)

// ErrNotMigrated means the database lacks carryover's tables, or holds an
// older schema than this build's. Producers check it when they connect, so
// a newcomer who skipped `worker migrate` reads what to do instead of
// `relation "jobs" does not exist` at the first query.
var ErrNotMigrated = errors.New("database not migrated")

// migrateHint is what every ErrNotMigrated says to do.
const migrateHint = "run `worker migrate` (a worker also migrates when it starts)"

// CheckSchema returns an error wrapping ErrNotMigrated unless the database
// holds this build's schema or a newer one (a newer one is a rolling
// deploy: its migrations only add). One read of golang-migrate's
// schema_migrations table.
func (s *Store) CheckSchema(ctx context.Context) error {
	want, err := latestMigration()
	if err != nil {
		return err
	}
	var version int64
	var dirty bool
	err = s.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		return fmt.Errorf("%w: it has no carryover tables; %s", ErrNotMigrated, migrateHint)
	case err != nil:
		return fmt.Errorf("store: schema version: %w", err)
	case dirty:
		return fmt.Errorf("%w: migration %d failed midway (schema_migrations.dirty): fix the schema by hand and force the version with golang-migrate, then %s", ErrNotMigrated, version, migrateHint)
	case version < int64(want):
		return fmt.Errorf("%w: its schema is at version %d, this build needs %d; %s", ErrNotMigrated, version, want, migrateHint)
	}
	return nil
}

// latestMigration is the highest version among the embedded migrations,
// read as golang-migrate reads their names.
func latestMigration() (uint, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("store: migrations source: %w", err)
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("store: migrations source: %w", err)
	}
	for {
		next, err := src.Next(v)
		if errors.Is(err, os.ErrNotExist) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("store: migrations source: %w", err)
		}
		v = next
	}
}
