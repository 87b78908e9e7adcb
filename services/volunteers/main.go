// Command volunteers serves and administers the volunteers and departments of an event organization's current convention.
package main

import (
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/services/volunteers/internal/cli"
)

func main() { service.Main(cli.Root()) }
