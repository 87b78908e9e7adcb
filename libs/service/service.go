// Package service is the skeleton every service binary shares: the command
// tree (serve, migrate, import, healthcheck, admin commands), signal handling, and the
// start-up order config → logger → telemetry → database → HTTP servers.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/IBM/pgxpoolprometheus"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/logging"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/telemetry"
)

// Version is set at build time with -ldflags "-X .../service.Version=...".
var Version = "dev"

// Base is the configuration every service has; embed it.
type Base struct {
	httpserver.Config
	DatabaseURL string `env:"DATABASE_URL,required"`
	LogLevel    string `env:"LOG_LEVEL" envDefault:"info"`
	// InternalAuth is the key of the service tokens: what the internal
	// listener requires of every call and what this service's calls to the
	// others carry.
	InternalAuth servicetoken.Config
}

// DatabaseConfig is what database-only commands (migrate, import) need.
type DatabaseConfig struct {
	DatabaseURL string `env:"DATABASE_URL,required"`
	LogLevel    string `env:"LOG_LEVEL" envDefault:"info"`
}

// Main runs root with a context cancelled by SIGINT or SIGTERM and exits 1
// with the error on stderr when it fails.
func Main(root *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", root.Name(), err)
		os.Exit(1)
	}
}

// NewRoot returns the root command of a service binary.
func NewRoot(name, short string) *cobra.Command {
	root := &cobra.Command{
		Use:           name,
		Short:         short,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary (as --version does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s version %s\n", name, Version)
			return err
		},
	})
	return root
}

// Runtime is what Start built for `serve`.
type Runtime struct {
	// Name is the service's name (the one given to Start).
	Name   string
	Log    *slog.Logger
	Pool   *pgxpool.Pool
	Server *httpserver.Server
	// Credentials sign this service's calls to the others' internal
	// listeners: give them to the API clients (usersclient.NewClient, ...).
	Credentials *servicetoken.Signer
	close       []func(context.Context) error
}

// OnClose registers cleanup run (in reverse order) after the servers stop.
func (r *Runtime) OnClose(f func(context.Context) error) { r.close = append(r.close, f) }

// Start builds the logger (JSON lines on stderr), telemetry, the database
// pool (with readiness checks for it and its migrations), the HTTP server
// (its internal listener refusing calls without a service token for name)
// and the credentials of this service's own calls. Call Serve after adding
// routes.
func Start(ctx context.Context, name string, base Base, set migrations.Set) (*Runtime, error) {
	return StartLogging(ctx, name, base, set, os.Stderr)
}

// StartLogging is Start with the log written to logs (test harnesses read
// it).
func StartLogging(ctx context.Context, name string, base Base, set migrations.Set, logs io.Writer) (*Runtime, error) {
	level, err := logging.ParseLevel(base.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if err := base.CheckTrustedProxies(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if err := base.InternalAuth.Validate(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	log := logging.New(logs, level, name)
	tuneGC(os.Getenv)
	shutdownTelemetry, err := telemetry.Setup(ctx, name, Version)
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, base.DatabaseURL)
	if err != nil {
		return nil, err
	}
	base.Config.Tracing = telemetry.TracesEnabled(os.Getenv)
	srv := httpserver.New(base.Config, log, name)
	// Before any route: gin gives a route the middleware added until then.
	srv.Internal.Use(servicetoken.NewVerifier(base.InternalAuth, name).Middleware())
	srv.AddReadinessCheck("postgresql", set.Check(pool))
	srv.Metrics.MustRegister(pgxpoolprometheus.NewCollector(pool, map[string]string{"db_name": name}))
	rt := &Runtime{Name: name, Log: log, Pool: pool, Server: srv, Credentials: servicetoken.NewSigner(base.InternalAuth, name)}
	rt.OnClose(shutdownTelemetry)
	rt.OnClose(func(context.Context) error { pool.Close(); return nil })
	return rt, nil
}

// Serve runs the servers until ctx ends, then closes what Start opened.
func (r *Runtime) Serve(ctx context.Context) error {
	err := r.Server.Run(ctx)
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := len(r.close) - 1; i >= 0; i-- {
		if cerr := r.close[i](cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// MigrateCommand returns `migrate up|down|status` for the service's set.
func MigrateCommand(set migrations.Set, load func() (DatabaseConfig, error)) *cobra.Command {
	// onDatabase is the RunE of a subcommand that runs f on the configured database.
	onDatabase := func(f func(cmd *cobra.Command, dsn string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			return f(cmd, cfg.DatabaseURL)
		}
	}
	cmd := &cobra.Command{Use: "migrate", Short: "Apply, roll back or show the database migrations"}
	cmd.AddCommand(&cobra.Command{
		Use: "up", Short: "Apply every pending migration",
		RunE: onDatabase(func(cmd *cobra.Command, dsn string) error {
			if err := set.Up(dsn); err != nil {
				return err
			}
			latest, _ := set.Latest()
			fmt.Fprintf(cmd.OutOrStdout(), "migrations applied; database at version %d\n", latest)
			return nil
		}),
	}, &cobra.Command{
		Use: "down", Short: "Roll back the newest migration",
		RunE: onDatabase(func(cmd *cobra.Command, dsn string) error {
			if err := set.Down(dsn); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "rolled back one migration")
			return nil
		}),
	}, &cobra.Command{
		Use: "status", Short: "Show the applied and the newest migration",
		RunE: onDatabase(func(cmd *cobra.Command, dsn string) error {
			pool, err := pgdb.Open(cmd.Context(), dsn)
			if err != nil {
				return err
			}
			defer pool.Close()
			st, err := set.Status(cmd.Context(), pool)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), describeStatus(st))
			return nil
		}),
	}, &cobra.Command{
		Use:   "force VERSION",
		Short: "Record VERSION as applied and clean, running nothing (after repairing a failed migration by hand)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := strconv.Atoi(args[0])
			latest, _ := set.Latest()
			if err != nil || v < 0 || uint(v) > latest {
				return fmt.Errorf("VERSION must be a migration version from 0 to %d, got %q", latest, args[0])
			}
			return onDatabase(func(cmd *cobra.Command, dsn string) error {
				if err := set.Force(dsn, v); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "database recorded at version %d, clean; nothing was run\n", v)
				return nil
			})(cmd, args)
		},
	})
	return cmd
}

// describeStatus is `migrate status`'s line.
func describeStatus(st migrations.Status) string {
	line := fmt.Sprintf("version %d of %d, dirty=%v, current=%v; this binary runs on version %d and newer", st.Version, st.Latest, st.Dirty, st.Current(), st.Oldest)
	switch {
	case st.Dirty:
		return line + fmt.Sprintf("\nmigration %d failed half-way: repair or undo its effects by hand, then run `migrate force %d` (if it was undone, force the version before it)", st.Version, st.Version)
	case st.Ahead():
		return line + "\nthe schema is ahead of this binary (a newer release migrated it); it still serves"
	case !st.Serves():
		return line + "\nthe schema is older than this binary needs: run `migrate up`"
	}
	return line
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
