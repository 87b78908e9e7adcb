// Package migrations applies a service's embedded, versioned up/down SQL
// migrations with golang-migrate, and tells readiness whether they are applied.
// A service's set may take migrations a library provides beside its own
// (Set.With: libs/outbox's tables).
package migrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	pgx5 "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Set is one service's migrations: files NNNN_name.up.sql / .down.sql in dir of fsys.
type Set struct {
	fsys fs.FS
	dir  string
	// oldest is the oldest schema the binary runs on (0: its newest migration).
	oldest uint
}

// New returns the migration set found in dir of fsys (usually an embed.FS).
func New(fsys fs.FS, dir string) Set { return Set{fsys: fsys, dir: dir} }

// With returns the set with the migrations at the root of library added to
// its own: a library's tables (libs/outbox.Migrations), which each service
// using the library takes at the version its files name. Two files of the
// same name are an error when the set is read, two of the same version as
// golang-migrate reports them.
func (s Set) With(library fs.FS) Set {
	s.fsys = union{{s.fsys, s.dir}, {library, "."}}
	s.dir = "."
	return s
}

// union is the files of several folders as one: Open finds a name in the
// first folder that has it, ReadDir lists every folder's entries.
type union []struct {
	fsys fs.FS
	dir  string
}

func (u union) Open(name string) (fs.File, error) {
	for _, f := range u {
		file, err := f.fsys.Open(path.Join(f.dir, name))
		if !errors.Is(err, fs.ErrNotExist) {
			return file, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (u union) ReadDir(name string) ([]fs.DirEntry, error) {
	var all []fs.DirEntry
	for _, f := range u {
		entries, err := fs.ReadDir(f.fsys, path.Join(f.dir, name))
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for i := 1; i < len(all); i++ {
		if all[i].Name() == all[i-1].Name() {
			return nil, fmt.Errorf("migration %s is both a service's and a library's", all[i].Name())
		}
	}
	return all, nil
}

// RunsOn returns the set declaring that the binary runs on every schema from
// version oldest on (its newest migration by default): a release whose newest
// migration only adds what the code does not use yet can say so, and stays
// ready while the schema is rolled back to oldest.
func (s Set) RunsOn(oldest uint) Set { s.oldest = oldest; return s }

// Declared returns the oldest version the set declares with RunsOn (0: none
// declared, the newest migration counts).
func (s Set) Declared() uint { return s.oldest }

// Status is where a database stands.
type Status struct {
	Version uint // applied version, 0 when none
	Dirty   bool // a migration failed half-way
	Latest  uint // newest embedded version
	Oldest  uint // oldest version the binary runs on
}

// Current reports whether every embedded migration is applied cleanly.
func (s Status) Current() bool { return !s.Dirty && s.Version == s.Latest }

// Serves reports whether the binary can serve on this schema: clean and not
// older than it needs. A schema ahead of the binary is fine: migrations keep
// the previous release working (expand, then contract a release later), so
// during an upgrade the running replicas stay ready once the new release's
// migrations are applied.
//
// A dirty schema (a migration running, or failed half-way) stops the binary
// only when the dirty version is one of its own: a newer release's migration
// in progress does not take the running release out of service.
func (s Status) Serves() bool { return s.Version >= s.Oldest && (!s.Dirty || s.Ahead()) }

// Ahead reports whether the schema is newer than the binary's migrations.
func (s Status) Ahead() bool { return s.Version > s.Latest }

// open connects golang-migrate through a connection pgx configured from
// dsn, so that every form the services' pools take works here too: the URL
// and the keyword form, several hosts with target_session_attrs (the
// primary of a primary and its standbys). golang-migrate's own pgx5:// URL
// takes neither the keyword form nor pool settings.
func (s Set) open(dsn string) (*migrate.Migrate, error) {
	// pgxpool's parser, as the services' pools use: it also takes (and
	// drops) pool_* settings.
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("parsing DATABASE_URL: invalid connection string (value not shown)")
	}
	src, err := iofs.New(s.fsys, s.dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations: %w", err)
	}
	db := stdlib.OpenDB(*cfg.ConnConfig)
	// The database name as golang-migrate's URL form gave it (the URL's
	// path): it keys the advisory lock that serializes concurrent runs, so
	// it must match what earlier releases' migrate took.
	driver, err := pgx5.WithInstance(db, &pgx5.Config{DatabaseName: "/" + cfg.ConnConfig.Database})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting for migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		driver.Close()
		return nil, fmt.Errorf("connecting for migrations: %w", err)
	}
	return m, nil
}

// run runs f on the database at dsn, what it does named in its error.
// ErrNoChange, nothing to do (Up and UpTo at the version already), is no error.
func (s Set) run(dsn, what string, f func(*migrate.Migrate) error) error {
	m, err := s.open(dsn)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := f(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Up applies every pending migration. Concurrent runs are serialized by an
// advisory lock in the database.
func (s Set) Up(dsn string) error { return s.run(dsn, "applying migrations", (*migrate.Migrate).Up) }

// UpTo applies the pending migrations up to version and none after it (or
// rolls back to it when the schema is newer).
func (s Set) UpTo(dsn string, version uint) error {
	return s.run(dsn, fmt.Sprintf("migrating to version %d", version), func(m *migrate.Migrate) error { return m.Migrate(version) })
}

// Down rolls back the newest applied migration.
func (s Set) Down(dsn string) error {
	return s.run(dsn, "rolling back a migration", func(m *migrate.Migrate) error { return m.Steps(-1) })
}

// Latest returns the newest embedded version.
func (s Set) Latest() (uint, error) {
	names, err := s.Names()
	if err != nil {
		return 0, err
	}
	var latest uint
	for v := range names {
		latest = max(latest, v)
	}
	return latest, nil
}

// Names returns the name of each embedded migration by version: "outbox" for
// 0002_outbox.up.sql.
func (s Set) Names() (map[uint]string, error) {
	entries, err := fs.ReadDir(s.fsys, s.dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations: %w", err)
	}
	names := map[uint]string{}
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && strings.HasSuffix(e.Name(), ".up.sql") {
			_, name, _ := strings.Cut(strings.TrimSuffix(e.Name(), ".up.sql"), "_")
			names[v] = name
		}
	}
	return names, nil
}

// Status reads the applied version through the service's own pool.
func (s Set) Status(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	latest, err := s.Latest()
	if err != nil {
		return Status{}, err
	}
	st := Status{Latest: latest, Oldest: latest}
	if s.oldest > 0 && s.oldest < latest {
		st.Oldest = s.oldest
	}
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

// Check is a readiness check: the database answers and its schema is one
// the binary serves on (see Status.Serves).
func (s Set) Check(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error {
		st, err := s.Status(ctx, pool)
		if err != nil {
			return err
		}
		switch {
		case st.Dirty && !st.Ahead():
			return fmt.Errorf("migration %d failed half-way (dirty): repair it, then `migrate force`", st.Version)
		case !st.Serves():
			return fmt.Errorf("schema at version %d, older than this binary needs (%d): run `migrate up`", st.Version, st.Oldest)
		}
		return nil
	}
}

// Force records version as applied and clean without running anything: the
// way out of a migration that failed half-way, once its effects were
// repaired or undone by hand.
func (s Set) Force(dsn string, version int) error {
	return s.run(dsn, fmt.Sprintf("forcing version %d", version), func(m *migrate.Migrate) error { return m.Force(version) })
}
