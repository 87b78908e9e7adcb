// Package cli is the volunteers command tree: serve, migrate, import, generate and delete.
package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/services/volunteers/internal/config"
	"github.com/eventreg/eventreg/services/volunteers/internal/server"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

// Root returns the `volunteers` command.
func Root() *cobra.Command {
	root := service.NewRoot("volunteers", "Volunteers and volunteer departments of the current convention")
	root.AddCommand(
		service.ServeCommand("volunteers", migrations.Set(), server.Mount),
		service.MigrateCommand(migrations.Set(), service.LoadAdminDatabase),
		service.HealthcheckCommand(),
		importCommand(),
		generateCommand(),
		deleteCommand(),
	)
	return root
}

// withStore runs f with the admin configuration and the store of its database.
func withStore(ctx context.Context, f func(cfg config.Admin, st *volunteerdb.Store) error) error {
	return service.WithDatabase(ctx, func(cfg config.Admin, pool *pgxpool.Pool) error { return f(cfg, volunteerdb.New(pool)) })
}

func importCommand() *cobra.Command {
	var output *service.Output
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Load the departments and volunteers of a fixture file (idempotent, all or nothing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), func(cfg config.Admin, st *volunteerdb.Store) error {
				doc, err := fixture.Load(args[0])
				if err != nil {
					return err
				}
				convention, res, err := volunteer.Import(cmd.Context(), st, doc, cfg.ConventionID)
				if err != nil {
					return err
				}
				if output.JSON() {
					return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"conventionId": convention,
						"departments": map[string]int64{"inserted": res.DepartmentsInserted, "updated": res.DepartmentsUpdated, "unchanged": res.DepartmentsUnchanged},
						"volunteers":  map[string]int64{"inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged}})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "departments: %d inserted, %d updated, %d unchanged\n",
					res.DepartmentsInserted, res.DepartmentsUpdated, res.DepartmentsUnchanged)
				fmt.Fprintf(cmd.OutOrStdout(), "volunteers of convention %s: %d inserted, %d updated, %d unchanged\n",
					convention, res.Inserted, res.Updated, res.Unchanged)
				return nil
			})
		},
	}
	output = service.AddOutputFlag(cmd)
	return cmd
}

func generateCommand() *cobra.Command {
	var o volunteerdb.GenerateOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write synthetic volunteers (and departments) for benchmarks (COPY, with progress)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), func(cfg config.Admin, st *volunteerdb.Store) error {
				if o.ConventionID == "" {
					o.ConventionID = cfg.ConventionID
				}
				if o.ConventionID == "" {
					return fmt.Errorf("generate: give --convention or set CONVENTION_ID")
				}
				if o.UsersTo == 0 {
					o.UsersTo = o.UsersFrom + o.Count - 1
				}
				o.Progress = cmd.OutOrStdout()
				start := time.Now()
				n, err := st.Generate(cmd.Context(), o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "generated %d volunteers of convention %s for users %d..%d in %s\n",
					n, o.ConventionID, o.UsersFrom, o.UsersTo, time.Since(start).Round(time.Millisecond))
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&o.Count, "volunteers", 1000, "how many volunteers to write")
	cmd.Flags().Int64Var(&o.UsersFrom, "users-from", 1, "lowest user id")
	cmd.Flags().Int64Var(&o.UsersTo, "users-to", 0, "highest user id (default: users-from + volunteers - 1)")
	cmd.Flags().Int64Var(&o.Departments, "departments", 20, "departments 1..N to create when missing (leads: the first N users)")
	cmd.Flags().StringVar(&o.ConventionID, "convention", "", "convention of the volunteers (default CONVENTION_ID)")
	return cmd
}

func deleteCommand() *cobra.Command {
	var convention string
	var output *service.Output
	cmd := &cobra.Command{
		Use:   "delete USER_ID",
		Short: "Delete a user's volunteer record (and tell webhook subscribers: volunteer-deleted)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, ok := userid.Parse(args[0])
			if !ok {
				return fmt.Errorf("USER_ID must be a positive whole number (got %q)", args[0])
			}
			return withStore(cmd.Context(), func(cfg config.Admin, st *volunteerdb.Store) error {
				if convention == "" {
					convention = cfg.ConventionID
				}
				if convention == "" {
					return fmt.Errorf("give --convention or set CONVENTION_ID")
				}
				_, err := st.Delete(cmd.Context(), convention, id)
				if errors.Is(err, volunteer.ErrNotFound) {
					return fmt.Errorf("user %d has no volunteer record in convention %s", id, convention)
				}
				if err != nil {
					return err
				}
				if output.JSON() {
					return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"conventionId": convention, "userId": id, "deleted": true})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted the volunteer record of user %d in convention %s\n", id, convention)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&convention, "convention", "", "convention of the record (default CONVENTION_ID)")
	output = service.AddOutputFlag(cmd)
	return cmd
}
