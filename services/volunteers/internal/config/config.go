// Package config is the volunteers service's configuration, read from the environment.
package config

import (
	"errors"
	"net/url"
	"time"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/service"
)

// Serve is the configuration of `volunteers serve`.
type Serve struct {
	service.Base
	service.Resource
	UsersInternalURL string `env:"USERS_INTERNAL_URL,required"`
	// UsersTimeout bounds each call to the users service.
	UsersTimeout time.Duration `env:"USERS_TIMEOUT" envDefault:"3s"`
}

// Validate checks what the types cannot.
func (s *Serve) Validate() error {
	errs := []error{s.Resource.Validate()}
	if u, err := url.Parse(s.UsersInternalURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("USERS_INTERNAL_URL must be a URL such as http://users:9090"))
	}
	if s.UsersTimeout < 100*time.Millisecond || s.UsersTimeout > time.Minute {
		errs = append(errs, errors.New("USERS_TIMEOUT must be between 100ms and 1m"))
	}
	return errors.Join(errs...)
}

// Admin is what the database commands (import, generate) need.
type Admin struct {
	service.DatabaseConfig
	// ConventionID is the default convention of the commands; a fixture's
	// conventionId and a --convention flag override it.
	ConventionID string `env:"CONVENTION_ID"`
}

// Load reads T from the environment.
func Load[T any]() (T, error) { return config.Load[T]() }
