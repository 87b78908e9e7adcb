// Command registrations serves and administers the registrations of an event organization's current convention.
package main

import (
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/registrations/internal/cli"
)

func main() { service.Main(cli.Root()) }
