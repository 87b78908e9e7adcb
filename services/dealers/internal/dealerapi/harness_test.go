package dealerapi_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/server"
	"github.com/eventreg/eventreg/services/dealers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running dealers API (server.Mount, the production wiring) on a
// fresh database, with a users service double and a token issuer
// (resourcetest.Harness); e.Search posts to /api/v0/dealers/search.
type env struct {
	*resourcetest.Service[*dealerdb.Store]
}

// envOptions are the harness's options; Service and Convention are set by newEnv.
type envOptions = resourcetest.Options

var dealers = resourcetest.Harness[*dealerdb.Store]{Service: "dealers", Convention: convention, Migrations: migrations.Set(),
	Mount: server.Mount, NewStore: dealerdb.New, SearchPath: "/api/v0/dealers/search"}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	return &env{dealers.Start(t, o)}
}

// importDealers loads fixture dealers (applications for conv) through the
// import `dealers import` runs (dealer.Import), and makes their users known.
func (e *env) importDealers(t testing.TB, conv string, recs ...fixture.Dealer) dealer.ImportResult {
	t.Helper()
	return resourcetest.Import[dealer.ImportStore](t, e.Env, dealer.Import, e.Store, &fixture.Document{ConventionID: conv, Dealers: recs})
}

// response is what a request got.
type response = resourcetest.Response

func ptr[T any](v T) *T { return &v }
