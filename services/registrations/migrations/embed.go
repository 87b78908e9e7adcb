// Package migrations embeds the registrations database's versioned SQL migrations.
package migrations

import (
	"embed"

	"github.com/eventreg/eventreg/libs/migrations"
)

//go:embed *.sql
var files embed.FS

// Set is the registrations service's migration set.
func Set() migrations.Set { return migrations.New(files, ".") }
