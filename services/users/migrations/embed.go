// Package migrations holds the users database's versioned SQL migrations.
package migrations

import (
	"embed"

	libmigrations "github.com/eventreg/eventreg/libs/migrations"
)

//go:embed *.sql
var files embed.FS

// Set is the users service's migration set.
func Set() libmigrations.Set { return libmigrations.New(files, ".") }
