// Package migrations applies a service's embedded, versioned up/down SQL
// migrations with golang-migrate, and tells readiness whether they are applied.
package migrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Set is one service's migrations: files NNNN_name.up.sql / .down.sql in dir of fsys.
type Set struct {
	fsys fs.FS
	dir  string
}

// New returns the migration set found in dir of fsys (usually an embed.FS).
func New(fsys fs.FS, dir string) Set { return Set{fsys: fsys, dir: dir} }

// Status is where a database stands.
type Status struct {
	Version uint // applied version, 0 when none
	Dirty   bool // a migration failed half-way
	Latest  uint // newest embedded version
}

// Current reports whether every embedded migration is applied cleanly.
func (s Status) Current() bool { return !s.Dirty && s.Version == s.Latest }

func (s Set) open(dsn string) (*migrate.Migrate, error) {
	src, err := iofs.New(s.fsys, s.dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, toMigrateURL(dsn))
	if err != nil {
		return nil, fmt.Errorf("connecting for migrations: %w", err)
	}
	return m, nil
}

// Up applies every pending migration. Concurrent runs are serialized by an
// advisory lock in the database.
func (s Set) Up(dsn string) error {
	m, err := s.open(dsn)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("applying migrations: %w", err)
	}
	return nil
}

// Down rolls back the newest applied migration.
func (s Set) Down(dsn string) error {
	m, err := s.open(dsn)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Steps(-1); err != nil {
		return fmt.Errorf("rolling back a migration: %w", err)
	}
	return nil
}

// Latest returns the newest embedded version.
func (s Set) Latest() (uint, error) {
	entries, err := fs.ReadDir(s.fsys, s.dir)
	if err != nil {
		return 0, fmt.Errorf("reading embedded migrations: %w", err)
	}
	var latest uint
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && strings.HasSuffix(e.Name(), ".up.sql") && v > latest {
			latest = v
		}
	}
	return latest, nil
}

// Status reads the applied version through the service's own pool.
func (s Set) Status(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	latest, err := s.Latest()
	if err != nil {
		return Status{}, err
	}
	st := Status{Latest: latest}
	var version int64
	err = pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &st.Dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil && strings.Contains(err.Error(), "does not exist"):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("reading migration version: %w", err)
	}
	st.Version = uint(version)
	return st, nil
}

// Check is a readiness check: the database answers and is migrated.
func (s Set) Check(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error {
		st, err := s.Status(ctx, pool)
		if err != nil {
			return err
		}
		if !st.Current() {
			return fmt.Errorf("migrations not applied: database at version %d (dirty=%v), binary needs %d", st.Version, st.Dirty, st.Latest)
		}
		return nil
	}
}

// toMigrateURL turns a postgres:// DSN into golang-migrate's pgx5:// form.
func toMigrateURL(dsn string) string {
	for _, p := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(dsn, p) {
			return "pgx5://" + strings.TrimPrefix(dsn, p)
		}
	}
	return dsn
}
