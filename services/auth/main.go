// Command auth is the OAuth 2.0 authorization server of the event registration service.
package main

import (
	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/auth/internal/cli"
)

func main() { service.Main(cli.Root()) }
