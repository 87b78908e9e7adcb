package resourcetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/usersclienttest"
)

// Mount is a service's server.Mount, given the configuration a harness
// builds (Config) in place of the service's own.
type Mount func(context.Context, Config, *service.Runtime) error

// Harness describes a resource service that keeps records of users and
// serves them with a search (volunteers, registrations, dealers) to its API
// tests: Start runs it with its production wiring.
type Harness[S any] struct {
	// Service names the server ("dealers"); Convention is the current one.
	Service, Convention string
	Migrations          migrations.Set
	// Mount is the service's server.Mount, the one serve runs.
	Mount func(context.Context, service.ResourceServe, *service.Runtime) error
	// NewStore opens the service's store on a pool.
	NewStore func(*pgxpool.Pool) S
	// SearchPath is the service's public search endpoint (Service.Search).
	SearchPath string
}

// Service is a running resource service (Env) and its store, opened on the
// test's pool.
type Service[S any] struct {
	*Env
	Store      S
	searchPath string
}

// Start runs the service (Start with h's migrations, name and convention,
// its Mount given the configuration built from Config) and opens its store.
func (h Harness[S]) Start(t testing.TB, o Options) *Service[S] {
	t.Helper()
	o.Service, o.Convention = h.Service, h.Convention
	e := Start(t, h.Migrations, o, func(ctx context.Context, c Config, rt *service.Runtime) error {
		return h.Mount(ctx, service.ResourceServe{Base: c.Base, Resource: c.Resource, UsersClient: c.Users}, rt)
	})
	return &Service[S]{Env: e, Store: h.NewStore(e.Pool), searchPath: h.SearchPath}
}

// Search POSTs body to the service's search endpoint with token.
func (s *Service[S]) Search(t testing.TB, token, body string) Response {
	t.Helper()
	return s.Post(t, s.searchPath, token, body)
}

// Import runs a service's fixture import (the function its `import` command
// runs) of doc for doc's convention into st, failing the test on an error,
// makes every user doc names (the records' users, the departments' leads)
// known to e's users double, and returns the import's result.
func Import[S, R any](t testing.TB, e *Env, imp func(context.Context, S, *fixture.Document, string) (string, R, error), st S, doc *fixture.Document) R {
	t.Helper()
	_, res, err := imp(context.Background(), st, doc, doc.ConventionID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, x := range doc.Volunteers {
		ids = append(ids, x.UserID)
	}
	for _, x := range doc.Departments {
		ids = append(ids, x.Leads...)
	}
	for _, x := range doc.Registrations {
		ids = append(ids, x.UserID)
	}
	for _, x := range doc.Dealers {
		ids = append(ids, x.UserID)
	}
	for _, id := range ids {
		e.Users.Add(usersclienttest.User(id))
	}
	return res
}
