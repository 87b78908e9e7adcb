package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
	"github.com/eventreg/eventreg/services/users/internal/userimport/userimportdb"
)

func importCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Load the users and roles sections of a fixture file (idempotent, all-or-nothing)",
		Args:  cobra.ExactArgs(1),
	}
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		doc, err := fixture.Load(args[0])
		if err != nil {
			return err
		}
		return withAdmin(cmd, func(a *admin) error {
			// As after `roles revoke`: auth ends at once what users' lost
			// permissions allowed their apps.
			var notify role.Notifier
			if c := a.cfg.AuthClient(); c != nil {
				notify = c
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			st, err := userimport.Import(cmd.Context(), userimportdb.New(a.pool), doc, a.cfg.ConventionID, password.Default, notify, log)
			if err != nil {
				return err
			}
			if st.UsersNarrowed > 0 && notify == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: AUTH_INTERNAL_URL is not set: apps of the %d users whose permissions narrowed keep the access until their next token refresh\n", st.UsersNarrowed)
			}
			return out.Print(cmd.OutOrStdout(), st, fmt.Sprintf(
				"roles: %d new, %d updated, %d unchanged; users: %d new, %d updated, %d unchanged; memberships: %d added, %d removed; passwords hashed: %d; users whose permissions narrowed: %d; users signed out (password changed): %d",
				st.RolesInserted, st.RolesUpdated, st.RolesUnchanged, st.UsersInserted, st.UsersUpdated, st.UsersUnchanged,
				st.MembershipsAdded, st.MembershipsRemoved, st.PasswordsHashed, st.UsersNarrowed, st.UsersSignedOut))
		})
	}
	return cmd
}

func generateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate --users N --roles R [--seed S]",
		Short: "Load N synthetic users and R roles with memberships (benchmarks); prints progress on stderr",
		Args:  cobra.NoArgs,
	}
	var opts userimport.GenerateOptions
	var convention string
	cmd.Flags().IntVar(&opts.Users, "users", 0, "number of users to add")
	cmd.Flags().IntVar(&opts.Roles, "roles", 0, "number of roles to add")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed of the pseudo-random data (same seed, same data)")
	cmd.Flags().StringVar(&convention, "convention", "", "convention of the convention-scoped memberships (default CONVENTION_ID; none: all global)")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if opts.Users < 0 || opts.Roles < 0 || opts.Users > 100_000_000 || opts.Roles > 100_000 {
			return fmt.Errorf("--users must be 0 to 100000000 and --roles 0 to 100000")
		}
		return withAdmin(cmd, func(a *admin) error {
			opts.ConventionID = a.cfg.ConventionID
			if cmd.Flags().Changed("convention") {
				opts.ConventionID = convention
			}
			opts.Progress = cmd.ErrOrStderr()
			res, err := userimport.Generate(cmd.Context(), userimportdb.New(a.pool), opts)
			if err != nil {
				return err
			}
			return out.Print(cmd.OutOrStdout(), res, fmt.Sprintf("users %d-%d, roles %d-%d, %d memberships",
				res.FirstUserID, res.LastUserID, res.FirstRoleID, res.LastRoleID, res.Memberships))
		})
	}
	return cmd
}
