package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// idsCommand makes cmd take one id argument for each of names ("USER_ID")
// and the -o flag, and run with the ids parsed.
func idsCommand(cmd *cobra.Command, names []string, run func(cmd *cobra.Command, ids []int64, out *service.Output) error) *cobra.Command {
	cmd.Args = cobra.ExactArgs(len(names))
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ids, err := parseArgIDs(args, names...)
		if err != nil {
			return err
		}
		return run(cmd, ids, out)
	}
	return cmd
}

// changeUser runs change on the users of the admin database (withAdmin),
// saying "no user N" when user id is not there.
func changeUser(cmd *cobra.Command, id int64, change func(ctx context.Context, users *user.Service) error) error {
	return withAdmin(cmd, func(a *admin) error {
		users, err := a.users()
		if err != nil {
			return err
		}
		if err := change(cmd.Context(), users); err != nil {
			if errors.Is(err, user.ErrNotFound) {
				return fmt.Errorf("no user %d", id)
			}
			return err
		}
		return nil
	})
}
