// Package config is the users service's configuration, read from the environment.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/servicetoken"
)

// VolunteersTimeout bounds one call to the volunteers internal API, so the
// current-user view answers (or fails with 503) well within clients' 5 s.
const VolunteersTimeout = time.Second

// ForwardTimeout bounds one request forwarded to the service that owns it,
// its answer's body included: past it the client gets a 503, within the 5 s
// real clients wait. The owners bound their own work to 3 s.
const ForwardTimeout = 5 * time.Second

// AuthTimeout bounds one call to the auth internal API.
const AuthTimeout = 2 * time.Second

// Serve is the configuration of `users serve`.
type Serve struct {
	service.Base
	service.Resource
	VolunteersInternalURL string `env:"VOLUNTEERS_INTERNAL_URL,required"`
	// VolunteersPublicURL and RegistrationsPublicURL are the owners' public
	// listeners: the gateway routes all of /api/v0/users here, and users
	// forwards the two sub-resources they own to them (decision 0085).
	VolunteersPublicURL    string `env:"VOLUNTEERS_PUBLIC_URL,required"`
	RegistrationsPublicURL string `env:"REGISTRATIONS_PUBLIC_URL,required"`
	// AUTH_INTERNAL_URL: auth's internal listener, told when a role is taken
	// from a user so that apps lose what the role allowed at once, and where
	// the outbox relay hands the user events (empty: they wait in the outbox).
	service.AuthEvents
	// PasswordChecks is how many argon2id computations run at once; 0 means
	// one per core (GOMAXPROCS): more would only add memory (decision 0080).
	PasswordChecks int `env:"PASSWORD_CHECKS" envDefault:"0"`
}

// Validate checks the rules the types cannot express.
func (s *Serve) Validate() error {
	errs := []error{s.Resource.Validate()}
	if s.PasswordChecks < 0 {
		errs = append(errs, errors.New("PASSWORD_CHECKS must be 0 (one per core) or more"))
	}
	if u, err := url.Parse(s.VolunteersInternalURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("VOLUNTEERS_INTERNAL_URL must be a URL such as http://volunteers:9090"))
	}
	if err := s.AuthEvents.Validate(); err != nil {
		errs = append(errs, err)
	}
	for name, raw := range map[string]string{"VOLUNTEERS_PUBLIC_URL": s.VolunteersPublicURL, "REGISTRATIONS_PUBLIC_URL": s.RegistrationsPublicURL} {
		if !isOrigin(raw) {
			errs = append(errs, fmt.Errorf("%s must be an origin such as http://%s:8080", name, strings.ToLower(strings.TrimSuffix(name, "_PUBLIC_URL"))))
		}
	}
	return errors.Join(errs...)
}

// isOrigin tells a URL of scheme and host only (a trailing slash allowed).
func isOrigin(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// Admin is what import, generate and the admin commands need: the database
// and, for convention-scoped memberships, the current convention (optional
// here: a fixture names its own convention, and only convention-scoped
// grants need it), as the other services' admin commands, plus auth.
type Admin struct {
	service.AdminConfig
	// AUTH_INTERNAL_URL, when set, is told about roles taken from users (as
	// serve does), and the admin commands' events wait for serve's relay.
	service.AuthEvents
	// InternalAuth signs those calls, as serve's (needed with AUTH_INTERNAL_URL).
	InternalAuth servicetoken.Config
}

// Validate checks the rules the types cannot express.
func (a *Admin) Validate() error {
	if err := a.AuthEvents.Validate(); err != nil || a.AuthInternalURL == "" {
		return err
	}
	return a.InternalAuth.Validate()
}

// AuthClient is the client of auth's internal API the admin commands tell
// about narrowed permissions, or nil without AUTH_INTERNAL_URL.
func (a *Admin) AuthClient() *authapi.Client {
	if a.AuthInternalURL == "" {
		return nil
	}
	return authapi.NewClient(a.AuthInternalURL, AuthTimeout, servicetoken.NewSigner(a.InternalAuth, "users"))
}

// Load reads T from the environment.
func Load[T any]() (T, error) { return config.Load[T]() }
