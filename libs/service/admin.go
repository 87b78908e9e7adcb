package service

import (
	"errors"
	"net/url"
	"time"
)

// UsersClient is the configuration of a service that calls the users
// service's internal API (volunteers, registrations); embed it.
type UsersClient struct {
	UsersInternalURL string `env:"USERS_INTERNAL_URL,required"`
	// UsersTimeout bounds each call to the users service.
	UsersTimeout time.Duration `env:"USERS_TIMEOUT" envDefault:"3s"`
}

// Validate checks what the types cannot.
func (u *UsersClient) Validate() error {
	var errs []error
	if p, err := url.Parse(u.UsersInternalURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		errs = append(errs, errors.New("USERS_INTERNAL_URL must be a URL such as http://users:9090"))
	}
	if u.UsersTimeout < 100*time.Millisecond || u.UsersTimeout > time.Minute {
		errs = append(errs, errors.New("USERS_TIMEOUT must be between 100ms and 1m"))
	}
	return errors.Join(errs...)
}

// AdminConfig is what the database commands of a service (import, generate
// and the like) need.
type AdminConfig struct {
	DatabaseConfig
	// ConventionID is the default convention of the commands; a fixture's
	// conventionId and a --convention flag override it.
	ConventionID string `env:"CONVENTION_ID"`
}
