// Package migrations holds the auth database's versioned SQL migrations.
package migrations

import (
	"embed"

	libmigrations "github.com/eventreg/eventreg/libs/migrations"
)

//go:embed *.sql
var files embed.FS

// Set is the auth service's migration set.
func Set() libmigrations.Set { return libmigrations.New(files, ".") }
