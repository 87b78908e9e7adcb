package service

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/migrations"
)

// Served is a service's serve configuration: Base (embedded, which
// provides BaseConfig) and what its Mount reads.
type Served interface{ BaseConfig() Base }

// BaseConfig returns b.
func (b Base) BaseConfig() Base { return b }

// ServeCommand is every service's `serve`: it reads C from the environment,
// starts the runtime (logger, telemetry, database, the two listeners) of
// name with set's readiness, runs mount (the service's server.Mount, which
// tests' harnesses run too) and serves until SIGTERM.
func ServeCommand[C Served](name string, set migrations.Set, mount func(context.Context, C, *Runtime) error) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the public and internal listeners until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load[C]()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			rt, err := Start(ctx, name, cfg.BaseConfig(), set)
			if err != nil {
				return err
			}
			if err := mount(ctx, cfg, rt); err != nil {
				return err
			}
			return rt.Serve(ctx)
		},
	}
}

// NewResourceRoot is the root command of a service whose admin commands take
// AdminConfig (volunteers, registrations, dealers): version, serve (mount's
// ServeCommand), migrate, healthcheck, and the service's own commands.
func NewResourceRoot[C Served](name, short string, set migrations.Set, mount func(context.Context, C, *Runtime) error, commands ...*cobra.Command) *cobra.Command {
	root := NewRoot(name, short)
	root.AddCommand(ServeCommand(name, set, mount), MigrateCommand(set, LoadAdminDatabase), HealthcheckCommand())
	root.AddCommand(commands...)
	return root
}
