// Command dealers serves and administers the dealers (vendors) of an event organization and their applications.
package main

import (
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/dealers/internal/cli"
)

func main() { service.Main(cli.Root()) }
