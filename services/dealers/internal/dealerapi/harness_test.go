package dealerapi_test

import (
	"context"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/dealers/internal/config"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/server"
	"github.com/eventreg/eventreg/services/dealers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running dealers API on a fresh database, with a users service
// double and a token issuer (libs/resourcetest).
type env struct {
	*resourcetest.Env
	Store *dealerdb.Store
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{}
	e.Env, e.Store = resourcetest.StartStore(t, "dealers", convention, migrations.Set(), o, mount, dealerdb.New)
	return e
}

// mount is the production wiring: serve runs the same server.Mount.
func mount(ctx context.Context, c resourcetest.Config, rt *service.Runtime) error {
	return server.Mount(ctx, config.Serve{Base: c.Base, Resource: c.Resource, UsersClient: c.Users}, rt)
}

// importDealers loads fixture dealers (applications for conv) through the
// import `dealers import` runs (dealer.Import), and makes their users known.
func (e *env) importDealers(t testing.TB, conv string, recs ...fixture.Dealer) dealer.ImportResult {
	t.Helper()
	res := resourcetest.Import[dealer.ImportStore](t, dealer.Import, e.Store, &fixture.Document{ConventionID: conv, Dealers: recs}, conv)
	for _, r := range recs {
		e.Users.Add(usersclienttest.User(r.UserID))
	}
	return res
}

// response is what a request got.
type response = resourcetest.Response

func (e *env) search(t testing.TB, token, body string) response {
	t.Helper()
	return e.Post(t, "/api/v0/dealers/search", token, body)
}

func ptr[T any](v T) *T { return &v }
