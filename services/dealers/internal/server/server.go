// Package server wires the dealers service: Mount is what `dealers serve`
// runs and what the tests' harness runs, so both serve the same app.
package server

import (
	"context"

	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/dealers/internal/config"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/dealerapi"
)

// Mount builds the service on rt: token validation, the business layer over
// its store, the route (token, scope, then the per-client rate limit) and
// the outbox relay (committed dealer events, rendered as the search renders
// them, to auth).
func Mount(ctx context.Context, cfg config.Serve, rt *service.Runtime) error {
	deps, err := service.StartResource(ctx, rt, cfg.Resource)
	if err != nil {
		return err
	}
	users := cfg.UsersClient.Client(rt.Credentials)
	svc := dealer.NewService(dealerdb.New(rt.Pool), users, cfg.ConventionID)
	dealerapi.New(svc, deps.Paginator("dealers.search"), rt.Log, deps.ProtectedAndLimited).
		Register(rt.Server.Public, rt.Server.Internal)
	return service.StartRelay(ctx, rt, cfg.AuthInternalURL, dealerapi.RenderEvents(users))
}
