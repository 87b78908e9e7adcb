// Package usertest holds the users service's test data: a migrated throwaway
// database, the demo fixture loaded into it, and synthetic users.
package usertest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
	"github.com/eventreg/eventreg/services/users/internal/userimport/userimportdb"
	"github.com/eventreg/eventreg/services/users/migrations"
)

// ConventionID is the current convention of the tests (the demo file's).
const ConventionID = "2026"

// Fast are cheap argon2id parameters so that tests hashing many passwords
// stay quick; the production parameters are tested in package password.
var Fast = password.Params{MemoryKiB: 64, Time: 1, Threads: 1}

// NewPool returns a pool on a new database migrated by the users service's
// migrations, dropped when t ends, and its DSN (resourcetest.NewPool). It
// skips the test under -short.
func NewPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dsn, pool := resourcetest.NewPool(t, migrations.Set())
	return pool, dsn
}

// DemoPath is the path of deploy/fixtures/demo.json.
func DemoPath(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "deploy", "fixtures", "demo.json")
}

// Demo reads the demo fixture.
func Demo(t testing.TB) *fixture.Document {
	t.Helper()
	doc, err := fixture.Load(DemoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// LoadDemo imports the demo fixture (production password parameters, so
// that credentials verify as in production).
func LoadDemo(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := userimport.Import(context.Background(), userimportdb.New(pool), Demo(t), ConventionID, password.Default, nil, nil); err != nil {
		t.Fatalf("importing the demo fixture: %v", err)
	}
}

// Generate adds synthetic users and roles.
func Generate(t testing.TB, pool *pgxpool.Pool, users, roles int) userimport.Generated {
	t.Helper()
	res, err := userimport.Generate(context.Background(), userimportdb.New(pool), userimport.GenerateOptions{
		Users: users, Roles: roles, Seed: 7, ConventionID: ConventionID})
	if err != nil {
		t.Fatalf("generating: %v", err)
	}
	return res
}
