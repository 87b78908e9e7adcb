// Package config is the dealers service's configuration, read from the environment.
package config

import (
	"errors"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/service"
)

// Serve is the configuration of `dealers serve`.
type Serve struct {
	service.Base
	service.Resource
	service.UsersClient
	// AuthEvents is where the outbox relay hands the dealer events.
	service.AuthEvents
}

// Validate checks what the types cannot.
func (s *Serve) Validate() error {
	return errors.Join(s.Resource.Validate(), s.UsersClient.Validate(), s.AuthEvents.Validate())
}

// Admin is what the database commands (import, list, show, set-status and
// delete-application) need.
type Admin = service.AdminConfig

// Load reads T from the environment.
func Load[T any]() (T, error) { return config.Load[T]() }
