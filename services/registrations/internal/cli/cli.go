// Package cli is the registrations command tree: serve, migrate, import, generate and the operators' set-status and record-payment.
package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/bulkload"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/registrations/internal/config"
	"github.com/eventreg/eventreg/services/registrations/internal/convention"
	"github.com/eventreg/eventreg/services/registrations/internal/convention/conventiondb"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/server"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

// Root returns the `registrations` command.
func Root() *cobra.Command {
	return service.NewResourceRoot("registrations", "Registrations of the current convention", migrations.Set(), server.Mount,
		importCommand(),
		service.GenerateCommand("registrations", "Write synthetic registrations for benchmarks (COPY, with progress)",
			func(ctx context.Context, pool *pgxpool.Pool, o bulkload.Users) (int64, error) {
				return registrationdb.New(pool).Generate(ctx, o)
			}),
		setStatusCommand(),
		recordPaymentCommand(),
	)
}

// withStore runs f with the admin configuration, its database and the store.
func withStore(ctx context.Context, f func(cfg config.Admin, pool *pgxpool.Pool, st *registrationdb.Store) error) error {
	return service.WithDatabase(ctx, func(cfg config.Admin, pool *pgxpool.Pool) error { return f(cfg, pool, registrationdb.New(pool)) })
}

func importCommand() *cobra.Command {
	return service.ImportCommand("Load the registrations, organization and conventions of a fixture file (idempotent)",
		func(ctx context.Context, cfg config.Admin, pool *pgxpool.Pool, doc *fixture.Document) (service.Imported, error) {
			// The public configuration is checked first: a file refused
			// for it stores nothing.
			if _, _, err := convention.FromFixture(doc.Organization, doc.Conventions); err != nil {
				return service.Imported{}, err
			}
			conv, res, err := registration.Import(ctx, registrationdb.New(pool), doc, cfg.ConventionID)
			if err != nil {
				return service.Imported{}, err
			}
			pub, err := convention.Import(ctx, conventiondb.New(pool), doc)
			text := fmt.Sprintf("registrations of convention %s: %d inserted, %d updated, %d unchanged", conv, res.Inserted, res.Updated, res.Unchanged)
			if pub.Organization {
				text += "\norganization stored"
			}
			if pub.Conventions >= 0 {
				text += fmt.Sprintf("\nconventions: %d stored (the list is now the file's)", pub.Conventions)
			}
			return service.Imported{JSON: map[string]any{"conventionId": conv,
				"inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged,
				"organization": pub.Organization, "conventions": pub.Conventions}, Text: text}, err
		})
}

func setStatusCommand() *cobra.Command {
	cmd := service.RecordCommand("set-status USER_ID paid|unpaid", "Set the status of a user's registration", "registration",
		func(cmd *cobra.Command, args []string, r service.Record) error {
			return change(cmd, r, func(svc *registration.Service, conv string) (registration.Registration, error) {
				return svc.SetStatus(cmd.Context(), conv, r.ID, args[1])
			})
		})
	cmd.Args = cobra.ExactArgs(2)
	return cmd
}

func recordPaymentCommand() *cobra.Command {
	var orderID string
	cmd := service.RecordCommand("record-payment USER_ID --order-id ORDER",
		"Record that an order paid a user's registration (status becomes paid, order set)", "registration",
		func(cmd *cobra.Command, _ []string, r service.Record) error {
			return change(cmd, r, func(svc *registration.Service, conv string) (registration.Registration, error) {
				return svc.RecordPayment(cmd.Context(), conv, r.ID, orderID)
			})
		})
	cmd.Flags().StringVar(&orderID, "order-id", "", "the order that paid (required)")
	_ = cmd.MarkFlagRequired("order-id")
	return cmd
}

// change runs do, an operator's change of the registration of rec in its
// convention (the flag, else CONVENTION_ID), and prints the registration as
// changed.
func change(cmd *cobra.Command, rec service.Record, do func(svc *registration.Service, convention string) (registration.Registration, error)) error {
	return withStore(cmd.Context(), func(cfg config.Admin, _ *pgxpool.Pool, st *registrationdb.Store) error {
		conv, err := cfg.Convention(rec.Convention)
		if err != nil {
			return err
		}
		r, err := do(registration.NewService(st, nil, cfg.ConventionID), conv)
		if err != nil {
			return err
		}
		updated := r.UpdatedAt.UTC().Format(apireply.TimeFormat)
		order := "none"
		if r.OrderID != nil {
			order = *r.OrderID
		}
		return rec.Output.Print(cmd.OutOrStdout(), map[string]any{"conventionId": r.ConventionID, "userId": r.UserID,
			"status": r.Status, "orderId": r.OrderID, "updatedAt": updated},
			fmt.Sprintf("registration of user %d in convention %s: status %s, order %s, updated at %s",
				r.UserID, r.ConventionID, r.Status, order, updated))
	})
}
