// Package config is the auth service's configuration, read from the environment.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/service"
)

// MinClientSecretKeyLength is the shortest CLIENT_SECRET_KEY accepted.
const MinClientSecretKeyLength = 32

// MaxAuthCodeTTL is the longest an authorization code may live (RFC 6749 §4.1.2 says 10 minutes at most).
const MaxAuthCodeTTL = 10 * time.Minute

// Keys are the secrets and key-rotation settings shared by serve and the admin commands.
type Keys struct {
	KeyEncryptionKey  string        `env:"KEY_ENCRYPTION_KEY,required,unset"`
	ClientSecretKey   string        `env:"CLIENT_SECRET_KEY,required,unset"`
	AccessTokenTTL    time.Duration `env:"ACCESS_TOKEN_TTL" envDefault:"1h"`
	KeyRotationPeriod time.Duration `env:"KEY_ROTATION_PERIOD" envDefault:"720h"`
	// KeyActivationDelay is how long a new key is published before it signs:
	// longer than KeyRefreshInterval, so every replica publishes it first, and
	// than the resource services' periodic JWKS refresh (5m), so they know it.
	KeyActivationDelay time.Duration `env:"KEY_ACTIVATION_DELAY" envDefault:"10m"`
	// KeyRefreshInterval is how often a replica re-reads the keys.
	KeyRefreshInterval time.Duration `env:"KEY_REFRESH_INTERVAL" envDefault:"30s"`
}

// Validate checks the rules the types cannot express.
func (k *Keys) Validate() error {
	var errs []error
	if _, err := DecodeKEK(k.KeyEncryptionKey); err != nil {
		errs = append(errs, err)
	}
	if err := config.MinLength("CLIENT_SECRET_KEY", k.ClientSecretKey, MinClientSecretKeyLength); err != nil {
		errs = append(errs, err)
	}
	if k.AccessTokenTTL < time.Minute || k.AccessTokenTTL > 24*time.Hour {
		errs = append(errs, errors.New("ACCESS_TOKEN_TTL must be between 1m and 24h"))
	}
	if k.KeyRefreshInterval < 100*time.Millisecond {
		errs = append(errs, errors.New("KEY_REFRESH_INTERVAL must be at least 100ms"))
	}
	if k.KeyActivationDelay < 2*k.KeyRefreshInterval {
		errs = append(errs, errors.New("KEY_ACTIVATION_DELAY must be at least twice KEY_REFRESH_INTERVAL (every replica must publish a key before it signs)"))
	}
	if k.KeyRotationPeriod <= k.KeyActivationDelay {
		errs = append(errs, errors.New("KEY_ROTATION_PERIOD must be longer than KEY_ACTIVATION_DELAY"))
	}
	return errors.Join(errs...)
}

// KEK returns the decoded key-encryption key (valid after Validate).
func (k *Keys) KEK() []byte {
	b, _ := DecodeKEK(k.KeyEncryptionKey)
	return b
}

// DecodeKEK decodes KEY_ENCRYPTION_KEY: base64 (standard or URL alphabet) of exactly 32 bytes.
func DecodeKEK(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("KEY_ENCRYPTION_KEY must be base64 of 32 bytes (got %d bytes)", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("KEY_ENCRYPTION_KEY must be base64 of 32 bytes (it is not valid base64)")
}

// Serve is the configuration of `auth serve`.
type Serve struct {
	service.Base
	Keys
	Webhooks
	Issuer           string `env:"AUTH_ISSUER,required"`
	TokenAudience    string `env:"TOKEN_AUDIENCE" envDefault:"eventreg-api"`
	UsersInternalURL string `env:"USERS_INTERNAL_URL,required"`
	RedisURL         string `env:"REDIS_URL,required,unset"`
	// RedisCluster reads REDIS_URL as a Redis Cluster's seed nodes.
	RedisCluster   bool          `env:"REDIS_CLUSTER"`
	AuthCodeTTL    time.Duration `env:"AUTH_CODE_TTL" envDefault:"60s"`
	SessionIdleTTL time.Duration `env:"SESSION_IDLE_TTL" envDefault:"30m"`
	SessionAbsTTL  time.Duration `env:"SESSION_ABSOLUTE_TTL" envDefault:"12h"`
	ClientCacheTTL time.Duration `env:"CLIENT_CACHE_TTL" envDefault:"5s"`
	OrgName        string        `env:"ORG_NAME" envDefault:"Event Registration"`
	// OrgLogoURL is a same-origin path or a data: URL (pages load nothing from other origins).
	OrgLogoURL string `env:"ORG_LOGO_URL" envDefault:"/oauth/static/logo.svg"`
	// Login throttling: failures allowed per account and per client address per LoginFailureWindow.
	LoginFailuresPerAccount int           `env:"LOGIN_FAILURES_PER_ACCOUNT" envDefault:"5"`
	LoginFailuresPerAddress int           `env:"LOGIN_FAILURES_PER_ADDRESS" envDefault:"20"`
	LoginFailureWindow      time.Duration `env:"LOGIN_FAILURE_WINDOW" envDefault:"15m"`
	// LoginKnownAddressTTL is how long an address an account signed in from
	// stays exempt from the account's limit across addresses (decision 0091).
	LoginKnownAddressTTL time.Duration `env:"LOGIN_KNOWN_ADDRESS_TTL" envDefault:"720h"`
	// LoginFailureDelay slows failed logins once half the allowance is used.
	LoginFailureDelay time.Duration `env:"LOGIN_FAILURE_DELAY" envDefault:"1s"`
	// Client-authentication failures allowed per client per ClientFailureWindow.
	ClientAuthFailures  int           `env:"CLIENT_AUTH_FAILURES" envDefault:"10"`
	ClientFailureWindow time.Duration `env:"CLIENT_AUTH_FAILURE_WINDOW" envDefault:"1m"`
	// Requests each client may make per ClientRateWindow: token requests
	// (every grant) and revocations; past them it is answered 429.
	ClientTokenRequests int           `env:"CLIENT_TOKEN_REQUESTS" envDefault:"3000"`
	ClientRevocations   int           `env:"CLIENT_REVOCATIONS" envDefault:"600"`
	ClientRateWindow    time.Duration `env:"CLIENT_RATE_WINDOW" envDefault:"1m"`
	UsersTimeout        time.Duration `env:"USERS_TIMEOUT" envDefault:"3s"`
	// A refresh-token family ends RefreshIdleTTL after its last use, and
	// RefreshAbsoluteTTL after the user authorized the app, whichever is first.
	RefreshIdleTTL     time.Duration `env:"REFRESH_TOKEN_IDLE_TTL" envDefault:"720h"`
	RefreshAbsoluteTTL time.Duration `env:"REFRESH_TOKEN_ABSOLUTE_TTL" envDefault:"2160h"`
}

// Validate checks the rules the types cannot express.
func (s *Serve) Validate() error {
	errs := []error{s.Keys.Validate(), s.Webhooks.Validate()}
	if u, err := url.Parse(s.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, errors.New("AUTH_ISSUER must be an http(s) URL without query or fragment"))
	}
	if u, err := url.Parse(s.UsersInternalURL); err != nil || u.Scheme == "" || u.Host == "" {
		errs = append(errs, errors.New("USERS_INTERNAL_URL must be a URL such as http://users:9090"))
	}
	if s.AuthCodeTTL < time.Second || s.AuthCodeTTL > MaxAuthCodeTTL {
		errs = append(errs, errors.New("AUTH_CODE_TTL must be between 1s and 10m"))
	}
	if s.SessionIdleTTL < time.Minute || s.SessionAbsTTL < s.SessionIdleTTL {
		errs = append(errs, errors.New("SESSION_IDLE_TTL must be at least 1m and SESSION_ABSOLUTE_TTL at least SESSION_IDLE_TTL"))
	}
	if s.ClientCacheTTL < 0 || s.ClientCacheTTL > time.Minute {
		errs = append(errs, errors.New("CLIENT_CACHE_TTL must be between 0 and 1m"))
	}
	if !strings.HasPrefix(s.OrgLogoURL, "data:image/") && (!strings.HasPrefix(s.OrgLogoURL, "/") || strings.HasPrefix(s.OrgLogoURL, "//")) {
		errs = append(errs, errors.New("ORG_LOGO_URL must be a path on this origin (e.g. /oauth/static/logo.svg) or a data:image/ URL"))
	}
	if s.LoginFailuresPerAccount < 1 || s.LoginFailuresPerAddress < 1 || s.ClientAuthFailures < 1 || s.LoginFailureWindow < time.Second || s.ClientFailureWindow < time.Second || s.LoginKnownAddressTTL < time.Second {
		errs = append(errs, errors.New("LOGIN_FAILURES_*, CLIENT_AUTH_FAILURES must be at least 1, their windows and LOGIN_KNOWN_ADDRESS_TTL at least 1s"))
	}
	if s.ClientTokenRequests < 1 || s.ClientRevocations < 1 || s.ClientRateWindow < time.Second {
		errs = append(errs, errors.New("CLIENT_TOKEN_REQUESTS and CLIENT_REVOCATIONS must be at least 1 and CLIENT_RATE_WINDOW at least 1s"))
	}
	if s.RefreshIdleTTL < time.Second || s.RefreshAbsoluteTTL < s.RefreshIdleTTL {
		errs = append(errs, errors.New("REFRESH_TOKEN_IDLE_TTL must be at least 1s and REFRESH_TOKEN_ABSOLUTE_TTL at least REFRESH_TOKEN_IDLE_TTL"))
	}
	return errors.Join(errs...)
}

// Load reads T from the environment.
func Load[T any]() (T, error) { return config.Load[T]() }

// LoadFrom reads T from environ instead of the process environment (tests).
func LoadFrom[T any](environ map[string]string) (T, error) { return config.LoadFrom[T](environ) }
