// Package cli is the volunteers command tree: serve, migrate, import, generate and delete.
package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/bulkload"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/volunteers/internal/config"
	"github.com/eventreg/eventreg/services/volunteers/internal/server"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

// Root returns the `volunteers` command.
func Root() *cobra.Command {
	return service.NewResourceRoot("volunteers", "Volunteers and volunteer departments of the current convention", migrations.Set(), server.Mount,
		importCommand(),
		generateCommand(),
		deleteCommand(),
	)
}

// withStore runs f with the admin configuration and the store of its database.
func withStore(ctx context.Context, f func(cfg config.Admin, st *volunteerdb.Store) error) error {
	return service.WithDatabase(ctx, func(cfg config.Admin, pool *pgxpool.Pool) error { return f(cfg, volunteerdb.New(pool)) })
}

func importCommand() *cobra.Command {
	return service.ImportCommand("Load the departments and volunteers of a fixture file (idempotent, all or nothing)",
		func(ctx context.Context, cfg config.Admin, pool *pgxpool.Pool, doc *fixture.Document) (service.Imported, error) {
			convention, res, err := volunteer.Import(ctx, volunteerdb.New(pool), doc, cfg.ConventionID)
			return service.Imported{JSON: map[string]any{"conventionId": convention,
				"departments": map[string]int64{"inserted": res.DepartmentsInserted, "updated": res.DepartmentsUpdated, "unchanged": res.DepartmentsUnchanged},
				"volunteers":  map[string]int64{"inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged}},
				Text: fmt.Sprintf("departments: %d inserted, %d updated, %d unchanged\nvolunteers of convention %s: %d inserted, %d updated, %d unchanged",
					res.DepartmentsInserted, res.DepartmentsUpdated, res.DepartmentsUnchanged, convention, res.Inserted, res.Updated, res.Unchanged)}, err
		})
}

func generateCommand() *cobra.Command {
	var departments int64
	cmd := service.GenerateCommand("volunteers", "Write synthetic volunteers (and departments) for benchmarks (COPY, with progress)",
		func(ctx context.Context, pool *pgxpool.Pool, o bulkload.Users) (int64, error) {
			return volunteerdb.New(pool).Generate(ctx, volunteerdb.GenerateOptions{Users: o, Departments: departments})
		})
	cmd.Flags().Int64Var(&departments, "departments", 20, "departments 1..N to create when missing (leads: the first N users)")
	return cmd
}

func deleteCommand() *cobra.Command {
	return service.RecordCommand("delete USER_ID", "Delete a user's volunteer record (and tell webhook subscribers: volunteer-deleted)", "record",
		func(cmd *cobra.Command, _ []string, r service.Record) error {
			return withStore(cmd.Context(), func(cfg config.Admin, st *volunteerdb.Store) error {
				conv, err := cfg.Convention(r.Convention)
				if err != nil {
					return err
				}
				_, err = st.Delete(cmd.Context(), conv, r.ID)
				if errors.Is(err, volunteer.ErrNotFound) {
					return fmt.Errorf("user %d has no volunteer record in convention %s", r.ID, conv)
				}
				if err != nil {
					return err
				}
				return r.Output.Print(cmd.OutOrStdout(), map[string]any{"conventionId": conv, "userId": r.ID, "deleted": true},
					fmt.Sprintf("deleted the volunteer record of user %d in convention %s", r.ID, conv))
			})
		})
}
