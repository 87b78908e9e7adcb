// Package config is the registrations service's configuration, read from the environment.
package config

import "github.com/eventreg/eventreg/libs/service"

// Serve is the configuration of `registrations serve`.
type Serve = service.ResourceServe

// Admin is what the database commands (import, generate, set-status,
// record-payment) need.
type Admin = service.AdminConfig
