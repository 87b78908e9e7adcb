// Package server wires the users service: Mount is what `users serve` runs
// and what the tests' harness runs, so both serve the same app.
package server

import (
	"context"
	"runtime"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/volunteersapi"

	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/forward"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userapi"
)

// Mount builds the service on rt: token validation and cursors, the
// business layers over their stores, the forwarding of the sub-resources
// other services own, the routes and the outbox relay.
func Mount(ctx context.Context, cfg config.Serve, rt *service.Runtime) error {
	deps, err := service.StartResource(ctx, rt, cfg.Resource)
	if err != nil {
		return err
	}

	// Business layers. At most PASSWORD_CHECKS argon2id computations at once
	// (one per core by default: more would only add 19 MiB each, decision 0080).
	slots := cfg.PasswordChecks
	if slots == 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	passwords, err := password.NewHasher(password.Default, slots)
	if err != nil {
		return err
	}
	users := user.NewService(userdb.New(rt.Pool), cfg.ConventionID, passwords)
	roles := role.NewService(roledb.New(rt.Pool), cfg.ConventionID)
	if cfg.AuthInternalURL != "" {
		roles.NotifyRevocations(authapi.NewClient(cfg.AuthInternalURL, config.AuthTimeout, rt.Credentials), rt.Log)
	} else {
		rt.Log.Warn("AUTH_INTERNAL_URL is not set: apps keep what a revoked role allowed until their next token refresh")
	}

	// The sub-resources other services own, forwarded to their public listeners.
	owners := userapi.Owners{}
	if owners.Volunteer, err = forward.New("volunteers", cfg.VolunteersPublicURL, rt.Log,
		forward.Options{Timeout: config.ForwardTimeout}); err != nil {
		return err
	}
	if owners.Registration, err = forward.New("registrations", cfg.RegistrationsPublicURL, rt.Log,
		forward.Options{Timeout: config.ForwardTimeout}); err != nil {
		return err
	}

	// Routes.
	rt.Server.ExemptFromRequestTimeout(userapi.OwnerRoutes()...) // bound by ForwardTimeout instead
	userapi.New(userapi.Deps{
		Log:        rt.Log,
		Users:      users,
		Roles:      roles,
		Volunteers: volunteersapi.NewClient(cfg.VolunteersInternalURL, config.VolunteersTimeout, rt.Credentials),
		Cursor:     deps.Cursor,
		Protected:  deps.ProtectedAndLimited, // token, scope, then the per-client rate limit (RATE_LIMIT_*; fails open)
		Metrics:    userapi.NewMetrics(rt.Server.Metrics),
		Owners:     owners,
	}).Register(rt.Server.Public, rt.Server.Internal)

	// The outbox relay: committed user events, rendered as the read API renders them, to auth.
	return service.StartRelay(ctx, rt, cfg.AuthInternalURL, userapi.RenderEvents)
}
