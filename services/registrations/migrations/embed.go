// Package migrations embeds the registrations database's versioned SQL migrations.
package migrations

import (
	"embed"

	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/outbox"
)

//go:embed *.sql
var files embed.FS

// OldestSchema is the oldest schema version this release runs on: its
// readiness passes on that version and every newer one, and fails on an older
// one (libs/migrations: Status.Serves). It is 3: serve reads the public
// configuration's tables (0003), and import and delete write the outbox (0002), which
// serve relays. A release that adds a migration its code
// does not use yet keeps the previous value, so it stays ready on the schema
// it is rolled back to; one whose code needs the new migration raises it
// (docs/deployment.md, Upgrade).
const OldestSchema = 3

// Set is the registrations service's migration set: its own files and libs/outbox's
// tables as version 2, declaring OldestSchema.
func Set() migrations.Set { return outbox.MigrationSet(files, OldestSchema) }
