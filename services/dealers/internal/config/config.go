// Package config is the dealers service's configuration, read from the environment.
package config

import "github.com/eventreg/eventreg/libs/service"

// Serve is the configuration of `dealers serve`.
type Serve = service.ResourceServe

// Admin is what the database commands (import, list, show, set-status and
// delete-application) need.
type Admin = service.AdminConfig
