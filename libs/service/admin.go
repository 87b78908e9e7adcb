package service

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// UsersClient is the configuration of a service that calls the users
// service's internal API (volunteers, registrations); embed it.
type UsersClient struct {
	UsersInternalURL string `env:"USERS_INTERNAL_URL,required"`
	// UsersTimeout bounds each call to the users service.
	UsersTimeout time.Duration `env:"USERS_TIMEOUT" envDefault:"3s"`
}

// Validate checks what the types cannot.
func (u *UsersClient) Validate() error {
	var errs []error
	if p, err := url.Parse(u.UsersInternalURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		errs = append(errs, errors.New("USERS_INTERNAL_URL must be a URL such as http://users:9090"))
	}
	if u.UsersTimeout < 100*time.Millisecond || u.UsersTimeout > time.Minute {
		errs = append(errs, errors.New("USERS_TIMEOUT must be between 100ms and 1m"))
	}
	return errors.Join(errs...)
}

// Client returns the client of the users service's internal API this
// configuration names, its calls signed with creds (Runtime.Credentials).
func (u UsersClient) Client(creds svcclient.Credentials) *usersclient.Client {
	return usersclient.NewClient(u.UsersInternalURL, u.UsersTimeout, creds)
}

// AdminConfig is what the database commands of a service (import, generate
// and the like) need.
type AdminConfig struct {
	DatabaseConfig
	// ConventionID is the default convention of the commands; a fixture's
	// conventionId and a --convention flag override it.
	ConventionID string `env:"CONVENTION_ID"`
}

// Convention is the convention a command works on: flag (its --convention)
// when given, else CONVENTION_ID; an error when there is neither.
func (c AdminConfig) Convention(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if c.ConventionID == "" {
		return "", errors.New("give --convention or set CONVENTION_ID")
	}
	return c.ConventionID, nil
}

// ParseID reads the argument arg of a command that names a record by id
// (USER_ID, APPLICATION_ID): a positive whole number; the error names the
// argument.
func ParseID(name, arg string) (int64, error) {
	id, ok := userid.Parse(arg)
	if !ok {
		return 0, fmt.Errorf("%s must be a positive whole number (got %q)", name, arg)
	}
	return id, nil
}

// LoadAdminDatabase reads the DatabaseConfig of AdminConfig from the
// environment: what `migrate` of a service whose admin commands take
// AdminConfig loads.
func LoadAdminDatabase() (DatabaseConfig, error) {
	cfg, err := config.Load[AdminConfig]()
	return cfg.DatabaseConfig, err
}

// Database is a configuration that names a database: DatabaseConfig and
// every configuration that embeds it.
type Database interface{ Database() DatabaseConfig }

// Database returns c.
func (c DatabaseConfig) Database() DatabaseConfig { return c }

// WithDatabase reads C from the environment, opens the database it names
// and runs f with both; the pool is closed when f returns. It is how the
// admin commands (import, generate, clients, keys and the like) start.
func WithDatabase[C Database](ctx context.Context, f func(cfg C, pool *pgxpool.Pool) error) error {
	cfg, err := config.Load[C]()
	if err != nil {
		return err
	}
	pool, err := pgdb.Open(ctx, cfg.Database().DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	return f(cfg, pool)
}

// Record is what an operator's command on one record runs with
// (RecordCommand).
type Record struct {
	// ID is the record's id, the command's first argument.
	ID int64
	// Convention is --convention as given: AdminConfig.Convention reads it.
	Convention string
	// Output is the -o format.
	Output Output
}

// RecordCommand returns an operator's command on one record (show, delete,
// set-status): use names the record's id as its first argument ("show
// DEALER_ID"; read with ParseID, the error naming it), its only argument
// unless the caller sets Args. It prints its result with -o text|json and,
// with conventionOf set, takes --convention ("convention of the
// <conventionOf> (default CONVENTION_ID)"). run runs once the id is read.
func RecordCommand(use, short, conventionOf string, run func(cmd *cobra.Command, args []string, r Record) error) *cobra.Command {
	var convention string
	cmd := printingCommand(use, short, func(cmd *cobra.Command, args []string, output Output) error {
		id, err := ParseID(strings.Fields(use)[1], args[0])
		if err != nil {
			return err
		}
		return run(cmd, args, Record{ID: id, Convention: convention, Output: output})
	})
	if conventionOf != "" {
		cmd.Flags().StringVar(&convention, "convention", "", "convention of the "+conventionOf+" (default CONVENTION_ID)")
	}
	return cmd
}

// printingCommand returns a command of one argument (unless the caller sets
// Args) that prints its result with -o text|json: run runs with the format.
func printingCommand(use, short string, run func(cmd *cobra.Command, args []string, output Output) error) *cobra.Command {
	var output *Output
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return run(cmd, args, *output) }}
	output = AddOutputFlag(cmd)
	return cmd
}
