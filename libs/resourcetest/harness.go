package resourcetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/service"
)

// Mount is a service's server.Mount, given the configuration a harness
// builds (Config) in place of the service's own.
type Mount func(context.Context, Config, *service.Runtime) error

// StartStore is Start for a service's test harness: it names the service
// and convention in o, and opens the service's store (newStore) on the
// test's pool.
func StartStore[S any](t testing.TB, name, convention string, set migrations.Set, o Options, mount Mount, newStore func(*pgxpool.Pool) S) (*Env, S) {
	t.Helper()
	o.Service, o.Convention = name, convention
	e := Start(t, set, o, mount)
	return e, newStore(e.Pool)
}

// Import runs a service's fixture import (the function its `import` command
// runs) of doc for convention into st, failing the test on an error, and
// returns the import's result.
func Import[S, R any](t testing.TB, imp func(context.Context, S, *fixture.Document, string) (string, R, error), st S, doc *fixture.Document, convention string) R {
	t.Helper()
	_, res, err := imp(context.Background(), st, doc, convention)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
