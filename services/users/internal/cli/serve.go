package cli

import (
	"runtime"

	"github.com/spf13/cobra"

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
	"github.com/eventreg/eventreg/services/users/migrations"
)

func serveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the public and internal HTTP listeners until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()

			// Configuration.
			cfg, err := config.Load[config.Serve]()
			if err != nil {
				return err
			}

			// Logger, telemetry, database, servers; then token validation and cursors.
			rt, err := service.Start(ctx, "users", cfg.Base, migrations.Set())
			if err != nil {
				return err
			}
			deps, err := service.StartResource(ctx, rt, cfg.Resource)
			if err != nil {
				return err
			}

			// Business layers.
			// One argon2id computation per core at a time: more would only
			// add 19 MiB each (decision 0080).
			passwords, err := password.NewHasher(password.Default, runtime.GOMAXPROCS(0))
			if err != nil {
				return err
			}
			users := user.NewService(userdb.New(rt.Pool), cfg.ConventionID, passwords)
			roles := role.NewService(roledb.New(rt.Pool), cfg.ConventionID)
			if cfg.AuthInternalURL != "" {
				roles.NotifyRevocations(authapi.NewClient(cfg.AuthInternalURL, config.AuthTimeout), rt.Log)
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

			// Routes, then serve until the context ends.
			rt.Server.ExemptFromRequestTimeout(userapi.OwnerRoutes()...) // bound by ForwardTimeout instead
			userapi.Register(rt.Server.Public, rt.Server.Internal, userapi.Deps{
				Log:        rt.Log,
				Users:      users,
				Roles:      roles,
				Volunteers: volunteersapi.NewClient(cfg.VolunteersInternalURL, config.VolunteersTimeout),
				Cursor:     deps.Cursor,
				Protected:  deps.ProtectedAndLimited, // token, scope, then the per-client rate limit (RATE_LIMIT_*; fails open)
				Metrics:    userapi.NewMetrics(rt.Server.Metrics),
				Owners:     owners,
			})

			// The outbox relay: committed user events, rendered as the read API renders them, to auth.
			if err := service.StartRelay(ctx, rt, cfg.AuthInternalURL, userapi.RenderEvents); err != nil {
				return err
			}
			return rt.Serve(ctx)
		},
	}
}
