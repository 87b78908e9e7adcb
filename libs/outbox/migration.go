package outbox

import (
	"embed"
	"io/fs"

	"github.com/eventreg/eventreg/libs/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the migration that creates the tables "outbox" and
// "outbox_dead": 0002_outbox.up.sql and 0002_outbox.down.sql. Every producing
// service's migration set takes it as its version 2 (MigrationSet), so the
// tables are defined once, here, and are the same in each service's database.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return sub
}

// MigrationSet returns the migration set of a producing service: its own
// migrations, the files at the root of files, with Migrations as version 2,
// declaring that the service runs on every schema from oldest on
// (migrations.Set.RunsOn).
func MigrationSet(files fs.FS, oldest uint) migrations.Set {
	return migrations.New(files, ".").With(Migrations()).RunsOn(oldest)
}
