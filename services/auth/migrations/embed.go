// Package migrations holds the auth database's versioned SQL migrations.
package migrations

import (
	"embed"

	libmigrations "github.com/eventreg/eventreg/libs/migrations"
)

//go:embed *.sql
var files embed.FS

// OldestSchema is the oldest schema version this release runs on: its
// readiness passes on that version and every newer one, and fails on an older
// one (libs/migrations: Status.Serves). It is 8: the clients'
// post-logout redirect URIs (0008) and ID token algorithm (0007), the format of a webhook
// subscription's tokens (0006), who disabled a webhook subscription (0005), the webhook tables (0004) and
// clients.require_pkce (0003) are read and written by this code. A release
// that adds a migration its code does not use yet keeps the previous value, so
// it stays ready on the schema it is rolled back to; one whose code needs the
// new migration raises it (docs/deployment.md, Upgrade).
const OldestSchema = 8

// Set is the auth service's migration set, declaring OldestSchema.
func Set() libmigrations.Set { return libmigrations.New(files, ".").RunsOn(OldestSchema) }
