package cli

import (
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/server"
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

			// Logger, telemetry, database, servers; then the app on them.
			rt, err := service.Start(ctx, "users", cfg.Base, migrations.Set())
			if err != nil {
				return err
			}
			if err := server.Mount(ctx, cfg, rt); err != nil {
				return err
			}
			return rt.Serve(ctx)
		},
	}
}
