package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/cursor"
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
	CursorKey     string        `env:"CURSOR_KEY,required,unset"`
	ConventionID  string        `env:"CONVENTION_ID,required"`
	RedisURL      string        `env:"REDIS_URL"`
	// RateLimit is the per-client limit of the public API (applied when
	// Redis is configured; see ResourceDeps.RateLimit).
	RateLimit ratelimit.Config
}

// Validate checks lengths the types cannot.
func (r *Resource) Validate() error {
	return errors.Join(config.MinLength("CURSOR_KEY", r.CursorKey, cursor.MinKeyLength), r.RateLimit.Validate())
}

// ResourceDeps are what Resource builds for serve.
type ResourceDeps struct {
	Tokens *tokenauth.Validator
	Cursor *cursor.Codec
	// Redis is nil when REDIS_URL is not set.
	Redis *redis.Client
	// RateLimit limits each client's requests (Resource.RateLimit); nil when
	// Redis is not set or the limit is off. Put it after Protected's chain.
	RateLimit gin.HandlerFunc
}

// StartResource builds the token validator (keys fetched now and kept fresh
// until ctx ends), the cursor codec and the optional Redis client, and adds
// their readiness checks to rt.
func StartResource(ctx context.Context, rt *Runtime, r Resource) (*ResourceDeps, error) {
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: r.AuthJWKSURL, Issuer: r.AuthIssuer, Audience: r.TokenAudience, Leeway: r.TokenLeeway})
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	v.Start(ctx)
	rt.Server.AddReadinessCheck("jwks", v.Ready)
	codec, err := cursor.NewCodec([]byte(r.CursorKey))
	if err != nil {
		return nil, fmt.Errorf("configuration: CURSOR_KEY: %w", err)
	}
	deps := &ResourceDeps{Tokens: v, Cursor: codec}
	if r.RedisURL != "" {
		rc, err := redisdb.Open(r.RedisURL)
		if err != nil {
			return nil, err
		}
		deps.Redis = rc
		rt.Server.Metrics.MustRegister(redisdb.NewPoolCollector(rc))
		rt.OnClose(func(context.Context) error { return rc.Close() })
		if l := r.RateLimit.Limiter(rc, rt.Name, rt.Log); l != nil {
			rt.Server.Metrics.MustRegister(l.Collector())
			deps.RateLimit = l.Middleware()
		}
	}
	return deps, nil
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

// Protected returns the middleware chain of a route needing scope.
func (d *ResourceDeps) Protected(scope string) []gin.HandlerFunc {
	return []gin.HandlerFunc{d.Tokens.Middleware(), tokenauth.RequireScope(scope)}
}
