package volunteerapi_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/volunteers/internal/server"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running volunteers API (server.Mount, the production wiring) on a
// fresh database, with a users service double and a token issuer
// (resourcetest.Harness); e.Search posts to /api/v0/volunteers/search.
type env struct {
	*resourcetest.Service[*volunteerdb.Store]
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

var volunteers = resourcetest.Harness[*volunteerdb.Store]{Service: "volunteers", Convention: convention, Migrations: migrations.Set(),
	Mount: server.Mount, NewStore: volunteerdb.New, SearchPath: "/api/v0/volunteers/search"}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	return &env{volunteers.Start(t, o)}
}

// load stores departments and volunteers for conv through the import
// `volunteers import` runs (volunteer.Import), and makes their users and
// the departments' leads known.
func (e *env) load(t testing.TB, conv string, deps []fixture.Department, vols ...fixture.Volunteer) volunteer.ImportResult {
	t.Helper()
	return resourcetest.Import[volunteer.ImportStore](t, e.Env, volunteer.Import, e.Store, &fixture.Document{ConventionID: conv, Departments: deps, Volunteers: vols})
}

// response is what a request got.
type response = resourcetest.Response
