package registrationapi_test

import (
	"context"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/registrations/internal/config"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/server"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running registrations API on a fresh database, with a users
// service double and a token issuer (libs/resourcetest).
type env struct {
	*resourcetest.Env
	Store *registrationdb.Store
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{}
	e.Env, e.Store = resourcetest.StartStore(t, "registrations", convention, migrations.Set(), o, mount, registrationdb.New)
	return e
}

// mount is the production wiring: serve runs the same server.Mount.
func mount(ctx context.Context, c resourcetest.Config, rt *service.Runtime) error {
	return server.Mount(ctx, config.Serve{Base: c.Base, Resource: c.Resource, UsersClient: c.Users}, rt)
}

// importRegs loads fixture registrations for conv through the import
// `registrations import` runs (registration.Import).
func (e *env) importRegs(t testing.TB, conv string, recs ...fixture.Registration) registration.ImportResult {
	t.Helper()
	res := resourcetest.Import[registration.ImportStore](t, registration.Import, e.Store, &fixture.Document{ConventionID: conv, Registrations: recs}, conv)
	for _, r := range recs {
		e.Users.Add(usersclienttest.User(r.UserID))
	}
	return res
}

// response is what a request got.
type response = resourcetest.Response

func (e *env) search(t testing.TB, token, body string) response {
	t.Helper()
	return e.Post(t, "/api/v0/registration/search", token, body)
}

func ptr[T any](v T) *T { return &v }
