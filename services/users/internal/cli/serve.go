package cli

import (
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/server"
	"github.com/eventreg/eventreg/services/users/migrations"
)

func serveCommand() *cobra.Command {
	return service.ServeCommand("users", migrations.Set(), server.Mount)
}
