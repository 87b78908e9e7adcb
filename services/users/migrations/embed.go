// Package migrations holds the users database's versioned SQL migrations.
package migrations

import (
	"embed"

	libmigrations "github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/outbox"
)

//go:embed *.sql
var files embed.FS

// OldestSchema is the oldest schema version this release runs on: its
// readiness passes on that version and every newer one, and fails on an older
// one (libs/migrations: Status.Serves). It is 4: role changes write the outbox
// (0002) in their transaction, the API reads a role's grantable mark (0003)
// before an app changes a membership, and serve records the convention whose
// memberships count (0004). A release that adds a migration
// its code does not use yet keeps the previous value, so it stays ready on the
// schema it is rolled back to; one whose code needs the new migration raises
// it (docs/deployment.md, Upgrade).
const OldestSchema = 4

// Set is the users service's migration set: its own files and libs/outbox's
// tables as version 2, declaring OldestSchema.
func Set() libmigrations.Set { return outbox.MigrationSet(files, OldestSchema) }
