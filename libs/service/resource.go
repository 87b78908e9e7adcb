package service

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// Resource is the configuration the resource services (users, volunteers,
// registrations) share on top of Base; embed both.
type Resource struct {
	AuthIssuer    string        `env:"AUTH_ISSUER,required"`
	AuthJWKSURL   string        `env:"AUTH_JWKS_URL,required"`
	TokenAudience string        `env:"TOKEN_AUDIENCE" envDefault:"eventreg-api"`
	TokenLeeway   time.Duration `env:"TOKEN_LEEWAY" envDefault:"30s"`
	// JWKSRefresh bounds how long a key removed from the JWKS (retired or
	// revoked) and the tokens it signed stay accepted.
	JWKSRefresh time.Duration `env:"JWKS_REFRESH_INTERVAL" envDefault:"5m"`
	// AuthRevocationsURL is auth's revocation feed; empty means the
	// /internal/revocations path on AUTH_JWKS_URL's scheme and host.
	AuthRevocationsURL string        `env:"AUTH_REVOCATIONS_URL"`
	RevocationPoll     time.Duration `env:"REVOCATION_POLL_INTERVAL" envDefault:"2s"`
	// MaxRevocations caps the feed entries a replica holds (tokenauth.Config).
	MaxRevocations int    `env:"REVOCATION_LIST_MAX" envDefault:"100000"`
	CursorKey      string `env:"CURSOR_KEY,required,unset"`
	ConventionID   string `env:"CONVENTION_ID,required"`
	RedisURL       string `env:"REDIS_URL"`
	// RedisCluster reads REDIS_URL as a Redis Cluster's seed nodes.
	RedisCluster bool `env:"REDIS_CLUSTER"`
	// RateLimit is the per-client limit of the public API (applied when
	// Redis is configured; see ResourceDeps.RateLimit).
	RateLimit ratelimit.Config
}

// Validate checks lengths, intervals and URLs the types cannot.
func (r *Resource) Validate() error {
	errs := []error{config.MinLength("CURSOR_KEY", r.CursorKey, cursor.MinKeyLength), r.RateLimit.Validate()}
	if r.MaxRevocations < 1000 {
		errs = append(errs, errors.New("REVOCATION_LIST_MAX must be at least 1000"))
	}
	if r.RevocationPoll < 100*time.Millisecond {
		errs = append(errs, errors.New("REVOCATION_POLL_INTERVAL must be at least 100ms"))
	}
	if r.JWKSRefresh < time.Second {
		errs = append(errs, errors.New("JWKS_REFRESH_INTERVAL must be at least 1s"))
	}
	if _, err := r.revocationsURL(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// revocationsURL is AUTH_REVOCATIONS_URL, or the feed's path on the host
// of AUTH_JWKS_URL (auth's internal listener).
func (r *Resource) revocationsURL() (string, error) {
	raw, name := r.AuthRevocationsURL, "AUTH_REVOCATIONS_URL"
	if raw == "" {
		raw, name = r.AuthJWKSURL, "AUTH_JWKS_URL"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s must be an http(s) URL, got %q", name, raw)
	}
	if r.AuthRevocationsURL != "" {
		return raw, nil
	}
	return u.Scheme + "://" + u.Host + authapi.PathRevocations, nil
}

// ResourceDeps are what Resource builds for serve.
type ResourceDeps struct {
	Tokens *tokenauth.Validator
	Cursor *cursor.Codec
	// Redis is nil when REDIS_URL is not set.
	Redis redis.UniversalClient
	// RateLimit limits each client's requests (Resource.RateLimit); nil when
	// Redis is not set or the limit is off. Put it after Protected's chain.
	RateLimit gin.HandlerFunc
	// AddressLimit is the same limit per client address, for the routes
	// that need no token (Public); nil when RateLimit is.
	AddressLimit gin.HandlerFunc
}

// StartResource builds the token validator (keys fetched now and kept fresh,
// revocations polled, until ctx ends), the cursor codec and the optional
// Redis client, and adds their readiness checks to rt. Readiness waits for
// the keys and for the first whole read of the revocation feed, never again
// for the feed after that (tokenauth.Validator.Ready).
func StartResource(ctx context.Context, rt *Runtime, r Resource) (*ResourceDeps, error) {
	feed, err := r.revocationsURL()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: r.AuthJWKSURL, Issuer: r.AuthIssuer, Audience: r.TokenAudience, Leeway: r.TokenLeeway,
		RefreshEvery: r.JWKSRefresh, RevocationsURL: feed, RevocationPoll: r.RevocationPoll, MaxRevocations: r.MaxRevocations, FeedCredentials: rt.Credentials, Log: rt.Log})
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	v.Start(ctx)
	rt.Server.AddReadinessCheck("jwks", v.Ready)
	rt.Server.Metrics.MustRegister(v.Collector())
	codec, err := cursor.NewCodec([]byte(r.CursorKey))
	if err != nil {
		return nil, fmt.Errorf("configuration: CURSOR_KEY: %w", err)
	}
	deps := &ResourceDeps{Tokens: v, Cursor: codec}
	if r.RedisURL != "" {
		rc, err := redisdb.Open(r.RedisURL, r.RedisCluster)
		if err != nil {
			return nil, err
		}
		deps.Redis = rc
		rt.Server.Metrics.MustRegister(redisdb.NewPoolCollector(rc))
		rt.OnClose(func(context.Context) error { return rc.Close() })
		if l := r.RateLimit.Limiter(rc, rt.Name, rt.Log); l != nil {
			rt.Server.Metrics.MustRegister(l.Collector())
			deps.RateLimit = l.Middleware()
			deps.AddressLimit = l.AddressMiddleware()
		}
	}
	return deps, nil
}

// Paginator is the paginator of the search named query (its cursors carry
// the name), with the service's cursor codec.
func (d *ResourceDeps) Paginator(query string) page.Paginator {
	return page.Paginator{Codec: d.Cursor, Query: query}
}

// ProtectedAndLimited is Protected followed by the client's rate limit (when
// there is one): the chain of a public API route.
func (d *ResourceDeps) ProtectedAndLimited(scope string) []gin.HandlerFunc {
	chain := d.Protected(scope)
	if d.RateLimit != nil {
		chain = append(chain, d.RateLimit)
	}
	return chain
}

// ProtectedOrSelfAndLimited is ProtectedAndLimited(scope) that also lets an
// OBO token with selfScope read the record of its own user, named by the
// path parameter param (tokenauth.RequireScopeOrSelf).
func (d *ResourceDeps) ProtectedOrSelfAndLimited(scope, selfScope, param string) []gin.HandlerFunc {
	chain := []gin.HandlerFunc{d.Tokens.Middleware(), tokenauth.RequireScopeOrSelf(scope, selfScope, param)}
	if d.RateLimit != nil {
		chain = append(chain, d.RateLimit)
	}
	return chain
}

// Public is the middleware chain of a public route that needs no token: the
// per-address rate limit (when there is one). A bearer token sent with the
// request is not read.
func (d *ResourceDeps) Public() []gin.HandlerFunc {
	if d.AddressLimit == nil {
		return nil
	}
	return []gin.HandlerFunc{d.AddressLimit}
}

// Protected returns the middleware chain of a route needing scope.
func (d *ResourceDeps) Protected(scope string) []gin.HandlerFunc {
	return []gin.HandlerFunc{d.Tokens.Middleware(), tokenauth.RequireScope(scope)}
}
