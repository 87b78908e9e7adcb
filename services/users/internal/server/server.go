// Package server wires the users service: Mount is what `users serve` runs
// and what the tests' harness runs, so both serve the same app.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/volunteersclient"

	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/forward"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userapi"
)

// switchConvention records the configured convention in the background
// (role.Service.SwitchConvention), retrying while the database is
// unreachable: serve starts without it, as readiness waits for it. The
// function returned waits for it to stop.
func switchConvention(ctx context.Context, roles *role.Service, conventionID string, log *slog.Logger) func(context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wait := 250 * time.Millisecond; ; wait = min(2*wait, 30*time.Second) {
			lapsed, err := roles.SwitchConvention(ctx)
			if err == nil {
				if lapsed > 0 {
					log.InfoContext(ctx, "CONVENTION_ID changed: the memberships of the previous convention lapsed; auth is told through the outbox",
						"convention_id", conventionID, "users", lapsed)
				}
				return
			}
			if ctx.Err() != nil {
				return
			}
			log.WarnContext(ctx, "recording the current convention failed; retrying", "retry_in", wait.String(), "error", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return func(wait context.Context) error {
		select {
		case <-done:
			return nil
		case <-wait.Done():
			return fmt.Errorf("recording the current convention: %w", wait.Err())
		}
	}
}

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
	roles.JudgeSensitivityBy(apispec.Routes().SensitiveScope)
	var notifier role.Notifier
	if cfg.AuthInternalURL != "" {
		notifier = authapi.NewClient(cfg.AuthInternalURL, config.AuthTimeout, rt.Credentials)
		roles.NotifyRevocations(notifier, rt.Log)
	} else {
		rt.Log.Warn("AUTH_INTERNAL_URL is not set: apps keep what a revoked role allowed until their next token refresh")
	}
	// Memberships of a convention other than CONVENTION_ID lapse: their
	// users' notices wait in the outbox with the relay's other events.
	rt.OnClose(switchConvention(ctx, roles, cfg.ConventionID, rt.Log))

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
		Volunteers: volunteersclient.NewClient(cfg.VolunteersInternalURL, config.VolunteersTimeout, rt.Credentials),
		Cursor:     deps.Cursor,
		Protected:  deps.ProtectedAndLimited, // token, scope, then the per-client rate limit (RATE_LIMIT_*; fails open)
		Metrics:    userapi.NewMetrics(rt.Server.Metrics),
		Owners:     owners,
	}).Register(rt.Server.Public, rt.Server.Internal)

	// The outbox relay: committed user events, rendered as the read API
	// renders them, to auth; and the notices that users' permissions
	// narrowed, told to auth one by one (role.PublishNotices). The immediate
	// notification after a revocation (NotifyRevocations) is the fast path;
	// the notice is what survives auth being unreachable at that moment.
	return service.StartRelayWith(ctx, rt, cfg.AuthInternalURL, userapi.RenderEvents, func(p outbox.PublishFunc) outbox.PublishFunc {
		return role.PublishNotices(notifier, p)
	})
}
