// Package server wires the volunteers service: Mount is what `volunteers
// serve` runs and what the tests' harness runs, so both serve the same app.
package server

import (
	"context"

	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/volunteers/internal/config"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerapi"
)

// Mount builds the service on rt: token validation, the business layer over
// its store, the routes (token, scope, then the per-client rate limit) and
// the outbox relay (committed volunteer events, rendered as the read API
// renders them, to auth).
func Mount(ctx context.Context, cfg config.Serve, rt *service.Runtime) error {
	deps, err := service.StartResource(ctx, rt, cfg.Resource)
	if err != nil {
		return err
	}
	users := cfg.UsersClient.Client(rt.Credentials)
	svc := volunteer.NewService(volunteerdb.New(rt.Pool), users, cfg.ConventionID)
	volunteerapi.New(svc, deps.Paginator("volunteers.search"), rt.Log, deps.ProtectedAndLimited).
		Register(rt.Server.Public, rt.Server.Internal)
	return service.StartRelay(ctx, rt, cfg.AuthInternalURL, volunteerapi.RenderEvents(users))
}
