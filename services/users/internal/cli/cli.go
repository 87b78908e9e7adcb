// Package cli is the command tree of the users binary: serve, migrate,
// import, the admin commands and the data generator.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/migrations"
)

// Root returns the `users` command with every subcommand.
func Root() *cobra.Command {
	root := service.NewRoot("users", "Users, roles and role membership of the event registration system")
	root.AddCommand(
		serveCommand(),
		service.MigrateCommand(migrations.Set(), config.Load[service.DatabaseConfig]),
		service.HealthcheckCommand(),
		importCommand(),
		createCommand(),
		setPasswordCommand(),
		signOutCommand(),
		rolesCommand(),
		generateCommand(),
	)
	return root
}

// admin is what an admin command works with.
type admin struct {
	cfg  config.Admin
	pool *pgxpool.Pool
}

// openAdmin loads the admin configuration and opens the database, refusing
// one whose migrations are not applied.
func openAdmin(ctx context.Context) (*admin, error) {
	cfg, err := config.Load[config.Admin]()
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	st, err := migrations.Set().Status(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("reading the database's migration state: %w", err)
	}
	if !st.Current() {
		pool.Close()
		return nil, fmt.Errorf("the database is at migration %d of %d (dirty=%v): run `users migrate up` first", st.Version, st.Latest, st.Dirty)
	}
	return &admin{cfg: cfg, pool: pool}, nil
}

func (a *admin) Close() { a.pool.Close() }

// withAdmin runs f on the admin database (openAdmin), closed when f returns.
func withAdmin(cmd *cobra.Command, f func(a *admin) error) error {
	a, err := openAdmin(cmd.Context())
	if err != nil {
		return err
	}
	defer a.Close()
	return f(a)
}

// users is the users business layer on the admin database, hashing one
// password at a time.
func (a *admin) users() (*user.Service, error) {
	passwords, err := password.NewHasher(password.Default, 1)
	if err != nil {
		return nil, err
	}
	return user.NewService(userdb.New(a.pool), a.cfg.ConventionID, passwords), nil
}

// roles is the roles business layer on the admin database.
func (a *admin) roles() *role.Service { return role.NewService(roledb.New(a.pool), a.cfg.ConventionID) }

// readSecret reads one line (a password) from r, without its line ending.
func readSecret(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	s := string(b)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "", fmt.Errorf("no password on stdin (pipe it in, e.g. `printf '%%s' \"$PW\" | users set-password 1001`)")
	}
	return s, nil
}
