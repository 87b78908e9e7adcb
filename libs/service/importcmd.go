package service

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/fixture"
)

// Imported is what an import wrote, as `import` prints it: JSON with -o json,
// else Text.
type Imported struct {
	JSON any
	Text string
}

// ImportCommand returns the `import FILE` of a service that keeps records of
// users (volunteers, registrations, dealers): it opens the database of
// AdminConfig, reads the fixture file (fixture.Load), runs load, the
// service's import of the document, and prints what it wrote (-o text|json).
func ImportCommand(short string, load func(ctx context.Context, cfg AdminConfig, pool *pgxpool.Pool, doc *fixture.Document) (Imported, error)) *cobra.Command {
	return printingCommand("import FILE", short, func(cmd *cobra.Command, args []string, output Output) error {
		return WithDatabase(cmd.Context(), func(cfg AdminConfig, pool *pgxpool.Pool) error {
			doc, err := fixture.Load(args[0])
			if err != nil {
				return err
			}
			imported, err := load(cmd.Context(), cfg, pool, doc)
			if err != nil {
				return err
			}
			return output.Print(cmd.OutOrStdout(), imported.JSON, imported.Text)
		})
	})
}
