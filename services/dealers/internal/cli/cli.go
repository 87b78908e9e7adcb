// Package cli is the dealers command tree: serve, migrate, import and the operators' list, show, set-status and delete-application.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/dealers/internal/config"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/server"
	"github.com/eventreg/eventreg/services/dealers/migrations"
)

// Root returns the `dealers` command.
func Root() *cobra.Command {
	return service.NewResourceRoot("dealers", "Dealers (vendors) and their applications", migrations.Set(), server.Mount,
		importCommand(),
		listCommand(),
		showCommand(),
		setStatusCommand(),
		deleteApplicationCommand(),
	)
}

// withService runs f with the admin configuration, its store and the
// business service (with no users source: the commands show user ids).
func withService(cmd *cobra.Command, f func(cfg config.Admin, st *dealerdb.Store, svc *dealer.Service) error) error {
	return service.WithDatabase(cmd.Context(), func(cfg config.Admin, pool *pgxpool.Pool) error {
		st := dealerdb.New(pool)
		return f(cfg, st, dealer.NewService(st, nil, cfg.ConventionID))
	})
}

func importCommand() *cobra.Command {
	return service.ImportCommand("Load the dealers of a fixture file (idempotent, all or nothing)",
		func(ctx context.Context, cfg config.Admin, pool *pgxpool.Pool, doc *fixture.Document) (service.Imported, error) {
			convention, res, err := dealer.Import(ctx, dealerdb.New(pool), doc, cfg.ConventionID)
			return service.Imported{JSON: map[string]any{"conventionId": convention,
				"inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged},
				Text: fmt.Sprintf("dealers (applications of convention %s): %d inserted, %d updated, %d unchanged",
					convention, res.Inserted, res.Updated, res.Unchanged)}, err
		})
}

func listCommand() *cobra.Command {
	var convention string
	var output *service.Output
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every dealer with its applications of the convention",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withService(cmd, func(cfg config.Admin, _ *dealerdb.Store, svc *dealer.Service) error {
				conv, err := cfg.Convention(convention)
				if err != nil {
					return err
				}
				all := []dealer.Dealer{}
				for ks := (keyset.Seek{Limit: 100}); ; {
					rows, err := svc.List(cmd.Context(), conv, ks)
					if err != nil {
						return err
					}
					more := len(rows) > ks.Limit
					all = append(all, rows[:min(len(rows), ks.Limit)]...)
					if !more {
						break
					}
					ks.After = all[len(all)-1].ID
				}
				if output.JSON() {
					return service.PrintJSON(cmd.OutOrStdout(), all)
				}
				for _, d := range all {
					printDealer(cmd.OutOrStdout(), d)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&convention, "convention", "", "convention of the applications (default CONVENTION_ID)")
	output = service.AddOutputFlag(cmd)
	return cmd
}

func showCommand() *cobra.Command {
	return service.RecordCommand("show DEALER_ID", "Show a dealer with its applications of the convention", "applications",
		func(cmd *cobra.Command, _ []string, r service.Record) error {
			return withService(cmd, func(cfg config.Admin, _ *dealerdb.Store, svc *dealer.Service) error {
				conv, err := cfg.Convention(r.Convention)
				if err != nil {
					return err
				}
				d, err := svc.Get(cmd.Context(), conv, r.ID)
				if errors.Is(err, dealer.ErrNotFound) {
					return fmt.Errorf("there is no dealer %d", r.ID)
				}
				if err != nil {
					return err
				}
				if r.Output.JSON() {
					return service.PrintJSON(cmd.OutOrStdout(), d)
				}
				printDealer(cmd.OutOrStdout(), d)
				return nil
			})
		})
}

func setStatusCommand() *cobra.Command {
	cmd := service.RecordCommand("set-status APPLICATION_ID "+strings.Join(dealer.Statuses, "|"),
		"Change an application's status, as the state machine allows (docs/dealers.md)", "",
		func(cmd *cobra.Command, args []string, r service.Record) error {
			return withService(cmd, func(_ config.Admin, _ *dealerdb.Store, svc *dealer.Service) error {
				d, changed, err := svc.SetStatus(cmd.Context(), r.ID, args[1])
				if err != nil {
					return describe(r.ID, err)
				}
				what := "unchanged"
				if changed {
					what = "changed"
				}
				return r.Output.Print(cmd.OutOrStdout(), map[string]any{"applicationId": r.ID, "dealerId": d.ID,
					"status": args[1], "changed": changed},
					fmt.Sprintf("application %d of dealer %d: status %s (%s)", r.ID, d.ID, args[1], what))
			})
		})
	cmd.Args = cobra.ExactArgs(2)
	return cmd
}

func deleteApplicationCommand() *cobra.Command {
	return service.RecordCommand("delete-application APPLICATION_ID", "Delete an application that is not approved", "",
		func(cmd *cobra.Command, _ []string, r service.Record) error {
			return withService(cmd, func(_ config.Admin, _ *dealerdb.Store, svc *dealer.Service) error {
				d, err := svc.DeleteApplication(cmd.Context(), r.ID)
				if err != nil {
					return describe(r.ID, err)
				}
				return r.Output.Print(cmd.OutOrStdout(), map[string]any{"applicationId": r.ID, "dealerId": d.ID, "deleted": true},
					fmt.Sprintf("application %d of dealer %d: deleted", r.ID, d.ID))
			})
		})
}

// describe names the logic error code of a refused change, as the API's
// logic errors carry it.
func describe(id int64, err error) error {
	switch {
	case errors.Is(err, dealer.ErrNotFound):
		return fmt.Errorf("there is no application %d", id)
	case errors.Is(err, dealer.ErrCannotChangeStatus):
		return fmt.Errorf("logic error %d: %w", apierror.CodeCannotChangeDealerStatus, err)
	case errors.Is(err, dealer.ErrCannotDelete):
		return fmt.Errorf("logic error %d: %w", apierror.CodeCannotDeleteApplication, err)
	}
	return err
}

func printDealer(w io.Writer, d dealer.Dealer) {
	fmt.Fprintf(w, "dealer %d %q (user %d), %d application(s) in convention %s\n", d.ID, d.Name, d.UserID, len(d.Applications), d.ConventionID)
	for _, a := range d.Applications {
		table := "no table"
		if a.TableNumber != nil {
			table = "table " + *a.TableNumber
		}
		fmt.Fprintf(w, "  application %d: %s, %s, %s\n", a.ID, a.Status, a.AreaName, table)
	}
}
