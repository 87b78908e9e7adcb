package registrationapi_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/server"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running registrations API (server.Mount, the production wiring)
// on a fresh database, with a users service double and a token issuer
// (resourcetest.Harness); e.Search posts to /api/v0/registration/search.
type env struct {
	*resourcetest.Service[*registrationdb.Store]
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

var registrations = resourcetest.Harness[*registrationdb.Store]{Service: "registrations", Convention: convention, Migrations: migrations.Set(),
	Mount: server.Mount, NewStore: registrationdb.New, SearchPath: "/api/v0/registration/search"}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	return &env{registrations.Start(t, o)}
}

// importRegs loads fixture registrations for conv through the import
// `registrations import` runs (registration.Import), and makes their users known.
func (e *env) importRegs(t testing.TB, conv string, recs ...fixture.Registration) registration.ImportResult {
	t.Helper()
	return resourcetest.Import[registration.ImportStore](t, e.Env, registration.Import, e.Store, &fixture.Document{ConventionID: conv, Registrations: recs})
}

// response is what a request got.
type response = resourcetest.Response

func ptr[T any](v T) *T { return &v }
