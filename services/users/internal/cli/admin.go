package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// createdUser is what `users create -o json` prints (never the password).
type createdUser struct {
	ID            int64   `json:"id"`
	Username      string  `json:"username"`
	Email         string  `json:"email"`
	FirstName     string  `json:"firstName"`
	LastName      string  `json:"lastName"`
	PreferredName *string `json:"preferredName"`
	BornAt        string  `json:"bornAt"`
	Phone         *string `json:"phone"`
	HasPassword   bool    `json:"hasPassword"`
}

func optional(cmd *cobra.Command, name, value string) *string {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	return &value
}

func createCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --username U --email E --first-name F --last-name L --born-at YYYY-MM-DD [flags]",
		Short: "Create a user (with --password-stdin, the password is read from stdin)",
		Args:  cobra.NoArgs,
	}
	var (
		id                                                 int64
		username, email, first, last, preferred, born      string
		phone, picture                                     string
		newsletter, emailVerified, identityVerified, pwdIn bool
	)
	f := cmd.Flags()
	f.Int64Var(&id, "id", 0, "user id (default: one above the highest)")
	f.StringVar(&username, "username", "", "username (no @ or spaces; unique, case is ignored)")
	f.StringVar(&email, "email", "", "email address (unique, case is ignored)")
	f.StringVar(&first, "first-name", "", "legal first name")
	f.StringVar(&last, "last-name", "", "legal last name")
	f.StringVar(&preferred, "preferred-name", "", "preferred name")
	f.StringVar(&born, "born-at", "", "date of birth, YYYY-MM-DD")
	f.StringVar(&phone, "phone", "", "phone, E.164 (+15555550100)")
	f.StringVar(&picture, "profile-picture-url", "", "public URL of the profile picture")
	f.BoolVar(&newsletter, "newsletter", false, "opted in to the newsletter")
	f.BoolVar(&emailVerified, "email-verified", false, "the email address is verified")
	f.BoolVar(&identityVerified, "identity-verified", false, "the identity is verified")
	f.BoolVar(&pwdIn, "password-stdin", false, "read the password from stdin (without it the user cannot log in)")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		bornAt, err := user.ParseDate(born)
		if err != nil {
			return fmt.Errorf("--born-at %w", err)
		}
		if cmd.Flags().Changed("id") && id <= 0 {
			return errors.New("--id must be a positive integer")
		}
		nu := user.NewUser{User: user.User{ID: id, Username: username, Email: email, FirstName: first, LastName: last,
			PreferredName: optional(cmd, "preferred-name", preferred), BornAt: bornAt, Phone: optional(cmd, "phone", phone),
			ProfilePictureURL: optional(cmd, "profile-picture-url", picture), Newsletter: newsletter,
			EmailVerified: emailVerified, IdentityVerified: identityVerified}}
		if pwdIn {
			pw, err := readSecret(cmd.InOrStdin())
			if err != nil {
				return err
			}
			nu.Password = &pw
		}
		return withAdmin(cmd, func(a *admin) error {
			users, err := a.users()
			if err != nil {
				return err
			}
			u, err := users.Create(cmd.Context(), nu)
			if err != nil {
				return err
			}
			return out.Print(cmd.OutOrStdout(), createdUser{ID: u.ID, Username: u.Username, Email: u.Email, FirstName: u.FirstName,
				LastName: u.LastName, PreferredName: u.PreferredName, BornAt: born, Phone: u.Phone, HasPassword: nu.Password != nil},
				fmt.Sprintf("created user %d (%s)", u.ID, u.Username))
		})
	}
	return cmd
}

func setPasswordCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-password USER_ID",
		Short: "Set a user's password, read from stdin; the user is signed out everywhere",
	}
	return idsCommand(cmd, []string{"USER_ID"}, func(cmd *cobra.Command, ids []int64, out *service.Output) error {
		id := ids[0]
		pw, err := readSecret(cmd.InOrStdin())
		if err != nil {
			return err
		}
		if err := changeUser(cmd, id, func(ctx context.Context, users *user.Service) error { return users.SetPassword(ctx, id, pw) }); err != nil {
			return err
		}
		return out.Print(cmd.OutOrStdout(), map[string]any{"userId": id, "passwordSet": true, "signOutQueued": true},
			fmt.Sprintf("password of user %d set; the user will be signed out everywhere", id))
	})
}

func signOutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sign-out USER_ID",
		Short: "Sign a user out everywhere: auth ends every browser session and app authorization of the user",
		Long: `Sign a user out everywhere. The request is committed to the outbox and carried to
auth by the relay of a running users service (as every password change is):
auth then ends every browser session of the user, every authorization of every
app (refresh tokens), and the access tokens issued with them stop at the
resource services with the next poll of the revocation feed. The user's
password is unchanged: use set-password when it may be known to someone else.`,
	}
	return idsCommand(cmd, []string{"USER_ID"}, func(cmd *cobra.Command, ids []int64, out *service.Output) error {
		id := ids[0]
		if err := changeUser(cmd, id, func(ctx context.Context, users *user.Service) error { return users.SignOut(ctx, id) }); err != nil {
			return err
		}
		return out.Print(cmd.OutOrStdout(), map[string]any{"userId": id, "signOutQueued": true},
			fmt.Sprintf("user %d will be signed out everywhere as soon as auth hears of it (seconds, while users serve runs)", id))
	})
}

// parseArgIDs parses args[i] as the id names[i] for each name.
func parseArgIDs(args []string, names ...string) ([]int64, error) {
	ids := make([]int64, len(names))
	for i, name := range names {
		id, err := service.ParseID(name, args[i])
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

func rolesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "roles", Short: "List and create roles, grant and revoke them, mark which apps may grant"}
	cmd.AddCommand(roleListCommand(), roleCreateCommand(), roleGrantCommand(), roleRevokeCommand(),
		roleGrantableCommand(true), roleGrantableCommand(false))
	return cmd
}

type roleOut struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
	// Grantable is the operator's mark; AppsMayGrant is what the API applies.
	Grantable    bool `json:"grantable"`
	AppsMayGrant bool `json:"appsMayGrant"`
}

func roleOutOf(r role.Role) roleOut {
	return roleOut{ID: r.ID, Name: r.Name, Permissions: r.Permissions, Grantable: r.Grantable,
		AppsMayGrant: r.AppsMayGrant(apispec.Routes().SensitiveScope)}
}

func roleListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the roles with their permissions and whether apps may grant them",
		Args:  cobra.NoArgs,
	}
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd, func(a *admin) error {
			roles := a.roles()
			all := []roleOut{}
			var text strings.Builder
			for ks := (keyset.Seek{Limit: 500}); ; {
				page, err := roles.List(cmd.Context(), ks)
				if err != nil {
					return err
				}
				more := len(page) > ks.Limit
				if more {
					page = page[:ks.Limit]
				}
				for _, r := range page {
					all = append(all, roleOutOf(r))
					fmt.Fprintf(&text, "%d\t%s\tapps may grant: %v\t%s\n", r.ID, r.Name, r.AppsMayGrant(apispec.Routes().SensitiveScope), strings.Join(r.Permissions, " "))
					ks.After = r.ID
				}
				if !more {
					break
				}
			}
			return out.Print(cmd.OutOrStdout(), all, strings.TrimSuffix(text.String(), "\n"))
		})
	}
	return cmd
}

// roleGrantableCommand is mark-grantable (mark) or unmark-grantable.
func roleGrantableCommand(mark bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mark-grantable ROLE_ID",
		Short: "Let apps with user:roles:update grant and remove a role that carries sensitive permissions",
	}
	if !mark {
		cmd.Use = "unmark-grantable ROLE_ID"
		cmd.Short = "Keep apps from granting or removing a role that carries sensitive permissions (the default)"
	}
	return idsCommand(cmd, []string{"ROLE_ID"}, func(cmd *cobra.Command, ids []int64, out *service.Output) error {
		id := ids[0]
		return withAdmin(cmd, func(a *admin) error {
			if err := a.roles().SetGrantable(cmd.Context(), id, mark); err != nil {
				if errors.Is(err, role.ErrRoleNotFound) {
					return fmt.Errorf("no role %d", id)
				}
				return err
			}
			msg := fmt.Sprintf("apps may now grant and remove role %d", id)
			if !mark {
				msg = fmt.Sprintf("role %d is no longer marked grantable: apps may grant and remove it only if it carries no sensitive permission", id)
			}
			return out.Print(cmd.OutOrStdout(), map[string]any{"roleId": id, "grantable": mark}, msg)
		})
	})
}

func roleCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   `create --name N [--permissions "a b"] [--id ID]`,
		Short: "Create a role carrying permissions",
		Args:  cobra.NoArgs,
	}
	var (
		id          int64
		name, perms string
		grantable   bool
	)
	cmd.Flags().Int64Var(&id, "id", 0, "role id (default: one above the highest)")
	cmd.Flags().BoolVar(&grantable, "grantable", false, "let apps with user:roles:update grant and remove it even with sensitive permissions")
	cmd.Flags().StringVar(&name, "name", "", "unique role name")
	cmd.Flags().StringVar(&perms, "permissions", "", "permissions, separated by spaces or commas (e.g. \"user:read con:read\")")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("id") && id <= 0 {
			return errors.New("--id must be a positive integer")
		}
		return withAdmin(cmd, func(a *admin) error {
			roles := a.roles()
			r, err := roles.Create(cmd.Context(), role.Role{ID: id, Name: name, Grantable: grantable,
				Permissions: strings.FieldsFunc(perms, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })})
			switch {
			case errors.Is(err, role.ErrNameTaken):
				return fmt.Errorf("a role named %q exists", name)
			case errors.Is(err, role.ErrIDTaken):
				return fmt.Errorf("role %d exists", id)
			case err != nil:
				return err
			}
			return out.Print(cmd.OutOrStdout(), roleOutOf(r),
				fmt.Sprintf("created role %d (%s)", r.ID, r.Name))
		})
	}
	return cmd
}

// membershipError words a grant or revoke refusal for an operator.
func membershipError(err error, userID, roleID int64) error {
	switch {
	case errors.Is(err, role.ErrUserNotFound):
		return fmt.Errorf("no user %d", userID)
	case errors.Is(err, role.ErrRoleNotFound):
		return fmt.Errorf("no role %d", roleID)
	case errors.Is(err, role.ErrAlreadyHeld):
		return fmt.Errorf("user %d already has role %d", userID, roleID)
	case errors.Is(err, role.ErrNotHeld):
		return fmt.Errorf("user %d does not have role %d", userID, roleID)
	}
	return err
}

func roleGrantCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grant USER_ID ROLE_ID --scope global|convention",
		Short: "Give a user a role, across the organization or for the current convention (CONVENTION_ID)",
	}
	var scope string
	cmd.Flags().StringVar(&scope, "scope", "global", "global or convention")
	return idsCommand(cmd, []string{"USER_ID", "ROLE_ID"}, func(cmd *cobra.Command, ids []int64, out *service.Output) error {
		userID, roleID := ids[0], ids[1]
		sc, ok := role.ParseScope(scope)
		if !ok {
			return fmt.Errorf("--scope must be global or convention, not %q", scope)
		}
		return withAdmin(cmd, func(a *admin) error {
			if err := a.roles().Grant(cmd.Context(), userID, roleID, sc); err != nil {
				return membershipError(err, userID, roleID)
			}
			return out.Print(cmd.OutOrStdout(), map[string]any{"userId": userID, "roleId": roleID, "scope": sc},
				fmt.Sprintf("user %d now has role %d (%s)", userID, roleID, sc))
		})
	})
}

func roleRevokeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke USER_ID ROLE_ID",
		Short: "Take a role from a user (global and current-convention memberships)",
	}
	return idsCommand(cmd, []string{"USER_ID", "ROLE_ID"}, func(cmd *cobra.Command, ids []int64, out *service.Output) error {
		userID, roleID := ids[0], ids[1]
		return withAdmin(cmd, func(a *admin) error {
			roles := a.roles()
			if c := a.cfg.AuthClient(); c != nil {
				roles.NotifyRevocations(c, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: AUTH_INTERNAL_URL is not set: apps keep what the role allowed until their next token refresh")
			}
			if err := roles.Revoke(cmd.Context(), userID, roleID); err != nil {
				return membershipError(err, userID, roleID)
			}
			return out.Print(cmd.OutOrStdout(), map[string]any{"userId": userID, "roleId": roleID, "revoked": true},
				fmt.Sprintf("user %d no longer has role %d", userID, roleID))
		})
	})
}
