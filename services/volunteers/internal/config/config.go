// Package config is the volunteers service's configuration, read from the environment.
package config

import "github.com/eventreg/eventreg/libs/service"

// Serve is the configuration of `volunteers serve`.
type Serve = service.ResourceServe

// Admin is what the database commands (import, generate, delete) need.
type Admin = service.AdminConfig
