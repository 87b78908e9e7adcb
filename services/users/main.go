// Command users is the users service: users, roles and role membership of the
// event registration system (serve, migrate, import, admin commands and a
// data generator; see docs/users.md).
package main

import (
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/users/internal/cli"
)

func main() { service.Main(cli.Root()) }
