// Package config is the users service's configuration, read from the environment.
package config

import (
	"errors"
	"net/url"
	"time"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/service"
)

// VolunteersTimeout bounds one call to the volunteers internal API, so the
// current-user view answers (or fails with 503) well within clients' 5 s.
const VolunteersTimeout = time.Second

// AuthTimeout bounds one call to the auth internal API.
const AuthTimeout = 2 * time.Second

// Serve is the configuration of `users serve`.
type Serve struct {
	service.Base
	service.Resource
	VolunteersInternalURL string `env:"VOLUNTEERS_INTERNAL_URL,required"`
	// AuthInternalURL is auth's internal listener, told when a role is taken
	// from a user so that apps lose what the role allowed at once.
	AuthInternalURL string `env:"AUTH_INTERNAL_URL"`
}

// Validate checks the rules the types cannot express.
func (s *Serve) Validate() error {
	errs := []error{s.Resource.Validate()}
	if u, err := url.Parse(s.VolunteersInternalURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("VOLUNTEERS_INTERNAL_URL must be a URL such as http://volunteers:9090"))
	}
	if err := checkAuthURL(s.AuthInternalURL); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Admin is what import, generate and the admin commands need: the database
// and, for convention-scoped memberships, the current convention.
type Admin struct {
	service.DatabaseConfig
	// ConventionID is optional here: a fixture names its own convention, and
	// only convention-scoped grants need it.
	ConventionID string `env:"CONVENTION_ID"`
	// AuthInternalURL, when set, is told about roles taken from users (as serve does).
	AuthInternalURL string `env:"AUTH_INTERNAL_URL"`
}

// Validate checks the rules the types cannot express.
func (a *Admin) Validate() error { return checkAuthURL(a.AuthInternalURL) }

func checkAuthURL(raw string) error {
	if raw == "" {
		return nil
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("AUTH_INTERNAL_URL must be a URL such as http://auth:9090")
	}
	return nil
}

// Load reads T from the environment.
func Load[T any]() (T, error) { return config.Load[T]() }
