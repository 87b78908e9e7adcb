// Package server wires the registrations service: Mount is what
// `registrations serve` runs and what the tests' harness runs, so both serve
// the same app.
package server

import (
	"context"

	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/registrations/internal/config"
	"github.com/eventreg/eventreg/services/registrations/internal/convention"
	"github.com/eventreg/eventreg/services/registrations/internal/convention/conventiondb"
	"github.com/eventreg/eventreg/services/registrations/internal/conventionapi"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationapi"
)

// Mount builds the service on rt: token validation, the business layer over
// its store, the routes (token, scope, then the per-client rate limit), the
// public configuration (no token; the per-address rate limit) and
// the outbox relay (committed registration events, rendered as the read API
// renders them, to auth).
func Mount(ctx context.Context, cfg config.Serve, rt *service.Runtime) error {
	deps, err := service.StartResource(ctx, rt, cfg.Resource)
	if err != nil {
		return err
	}
	users := cfg.UsersClient.Client(rt.Credentials)
	svc := registration.NewService(registrationdb.New(rt.Pool), users, cfg.ConventionID)
	registrationapi.New(svc, deps.Paginator("registrations.search"), rt.Log, deps).
		Register(rt.Server.Public, rt.Server.Internal)
	conventionapi.New(convention.NewService(conventiondb.New(rt.Pool), convention.TTL), rt.Log, deps.Public()).
		Register(rt.Server.Public, rt.Server.Internal)
	return service.StartRelay(ctx, rt, cfg.AuthInternalURL, registrationapi.RenderEvents(users))
}
