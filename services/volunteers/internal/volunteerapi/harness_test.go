package volunteerapi_test

import (
	"context"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/volunteers/internal/config"
	"github.com/eventreg/eventreg/services/volunteers/internal/server"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running volunteers API on a fresh database, with a users
// service double and a token issuer (libs/resourcetest).
type env struct {
	*resourcetest.Env
	Store *volunteerdb.Store
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{}
	e.Env, e.Store = resourcetest.StartStore(t, "volunteers", convention, migrations.Set(), o, mount, volunteerdb.New)
	return e
}

// mount is the production wiring: serve runs the same server.Mount.
func mount(ctx context.Context, c resourcetest.Config, rt *service.Runtime) error {
	return server.Mount(ctx, config.Serve{Base: c.Base, Resource: c.Resource, UsersClient: c.Users}, rt)
}

// load stores departments and volunteers for conv through the import
// `volunteers import` runs (volunteer.Import).
func (e *env) load(t testing.TB, conv string, deps []fixture.Department, vols ...fixture.Volunteer) volunteer.ImportResult {
	t.Helper()
	res := resourcetest.Import[volunteer.ImportStore](t, volunteer.Import, e.Store, &fixture.Document{ConventionID: conv, Departments: deps, Volunteers: vols}, conv)
	for _, x := range vols {
		e.Users.Add(usersclienttest.User(x.UserID))
	}
	for _, x := range deps {
		for _, id := range x.Leads {
			e.Users.Add(usersclienttest.User(id))
		}
	}
	return res
}

// response is what a request got.
type response = resourcetest.Response

func (e *env) search(t testing.TB, token, body string) response {
	t.Helper()
	return e.Post(t, "/api/v0/volunteers/search", token, body)
}
