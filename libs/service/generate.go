package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// GenerateCommand returns the `generate` of a service that keeps records of
// users: --<noun> synthetic records ("registrations") for benchmarks, one per
// user over --users-from..--users-to, in --convention (default
// CONVENTION_ID), written by generate (with COPY, its progress on stdout).
// A service adds its own flags to the command returned.
func GenerateCommand(noun, short string, generate func(context.Context, *pgxpool.Pool, bulkload.Users) (int64, error)) *cobra.Command {
	var o bulkload.Users
	cmd := &cobra.Command{
		Use:   "generate",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return WithDatabase(cmd.Context(), func(cfg AdminConfig, pool *pgxpool.Pool) error {
				var err error
				if o.ConventionID, err = cfg.Convention(o.ConventionID); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				if o.UsersTo == 0 {
					o.UsersTo = o.UsersFrom + o.Count - 1
				}
				o.Progress = cmd.OutOrStdout()
				start := time.Now()
				n, err := generate(cmd.Context(), pool, o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "generated %d %s of convention %s for users %d..%d in %s\n",
					n, noun, o.ConventionID, o.UsersFrom, o.UsersTo, time.Since(start).Round(time.Millisecond))
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&o.Count, noun, 1000, "how many "+noun+" to write")
	cmd.Flags().Int64Var(&o.UsersFrom, "users-from", 1, "lowest user id")
	cmd.Flags().Int64Var(&o.UsersTo, "users-to", 0, "highest user id (default: users-from + "+noun+" - 1)")
	cmd.Flags().StringVar(&o.ConventionID, "convention", "", "convention of the "+noun+" (default CONVENTION_ID)")
	return cmd
}
