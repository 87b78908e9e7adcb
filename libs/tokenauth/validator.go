// Package tokenauth validates the access tokens (RFC 9068 JWTs) that resource
// services receive: keys come from the auth service's JWKS, fetched and cached,
// refetched on an unknown key id at most once per MinRefresh; a token verified
// once is remembered until it expires. Gin middleware turns failures into the
// API's 401 and 403 bodies.
package tokenauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// Errors of Validate.
var (
	ErrInvalid     = errors.New("invalid token")
	ErrExpired     = errors.New("token expired")
	ErrUnavailable = errors.New("signing keys unavailable") // JWKS never fetched
)

// Allowed signing algorithms: asymmetric only, never "none", never HMAC.
var allowedAlgs = map[jwa.SignatureAlgorithm]bool{
	jwa.ES256: true, jwa.ES384: true, jwa.RS256: true, jwa.PS256: true, jwa.EdDSA: true,
}

// Config configures a Validator.
type Config struct {
	JWKSURL  string
	Issuer   string
	Audience string
	// Leeway is the clock skew tolerated on exp, nbf and iat.
	Leeway time.Duration
	// MinRefresh is the least time between two JWKS fetches caused by
	// unknown key ids (default 5s).
	MinRefresh time.Duration
	// RefreshEvery re-reads the JWKS in the background (default 5m), so that
	// retired keys are dropped.
	RefreshEvery time.Duration
	// CacheSize bounds the verified-token cache (default 50,000).
	CacheSize int
	// HTTPClient fetches the JWKS (default: 5s timeout).
	HTTPClient *http.Client
	// Now is the clock (tests).
	Now func() time.Time
}

// Claims are what a resource service needs from a valid token.
type Claims struct {
	Subject  string
	ClientID string
	Scopes   []string
	Expiry   time.Time
	ID       string
	// UserID is the user an OBO token acts for; 0 for service tokens (sub "client:<id>").
	UserID int64
}

// HasScope reports whether the token carries scope.
func (c *Claims) HasScope(scope string) bool {
	for _, s := range c.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Validator checks access tokens. It is safe for concurrent use.
type Validator struct {
	cfg   Config
	keys  atomic.Pointer[jwk.Set]
	cache *lru.Cache[string, *Claims]

	fetchMu   sync.Mutex
	lastFetch atomic.Int64 // unix nanos of the last fetch attempt
}

// New returns a validator; keys are fetched on first use (or by Start).
func New(cfg Config) (*Validator, error) {
	if cfg.JWKSURL == "" || cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("tokenauth: JWKS URL, issuer and audience are required")
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 5 * time.Second
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 5 * time.Minute
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 50_000
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := lru.New[string, *Claims](cfg.CacheSize)
	if err != nil {
		return nil, err
	}
	return &Validator{cfg: cfg, cache: cache}, nil
}

// Start fetches the keys once and keeps them fresh until ctx ends. A failed
// first fetch is not fatal: the next request tries again.
func (v *Validator) Start(ctx context.Context) {
	_ = v.refresh(ctx, true)
	go func() {
		t := time.NewTicker(v.cfg.RefreshEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = v.refresh(ctx, true)
			}
		}
	}()
}

// Ready reports whether keys have been fetched (a readiness check).
func (v *Validator) Ready(ctx context.Context) error {
	if v.keys.Load() == nil {
		if err := v.refresh(ctx, false); err != nil {
			return fmt.Errorf("jwks: %w", err)
		}
		// A refresh skipped by the MinRefresh rate limit fetches nothing:
		// still unready until a fetch has succeeded.
		if v.keys.Load() == nil {
			return errors.New("jwks: not fetched yet")
		}
	}
	return nil
}

// Validate verifies raw and returns its claims, or ErrInvalid, ErrExpired or
// ErrUnavailable.
func (v *Validator) Validate(ctx context.Context, raw string) (*Claims, error) {
	if c, ok := v.cache.Get(raw); ok {
		if !v.cfg.Now().Before(c.Expiry.Add(v.cfg.Leeway)) {
			v.cache.Remove(raw)
			return nil, ErrExpired
		}
		return c, nil
	}
	c, err := v.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	v.cache.Add(raw, c)
	return c, nil
}

func (v *Validator) verify(ctx context.Context, raw string) (*Claims, error) {
	if len(raw) > 8192 || strings.Count(raw, ".") != 2 {
		return nil, ErrInvalid
	}
	msg, err := jws.ParseString(raw)
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, ErrInvalid
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	alg := hdr.Algorithm()
	if !allowedAlgs[alg] {
		return nil, ErrInvalid
	}
	if typ := strings.ToLower(hdr.Type()); typ != "at+jwt" && typ != "application/at+jwt" {
		return nil, ErrInvalid
	}
	key, err := v.key(ctx, hdr.KeyID())
	if err != nil {
		return nil, err
	}
	if ka := key.Algorithm(); ka != nil && ka.String() != "" && ka.String() != alg.String() {
		return nil, ErrInvalid
	}
	tok, err := jwt.ParseString(raw,
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithAcceptableSkew(v.cfg.Leeway),
		jwt.WithClock(jwt.ClockFunc(v.cfg.Now)),
		jwt.WithRequiredClaim("exp"),
		jwt.WithRequiredClaim("sub"),
	)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired()) {
			return nil, ErrExpired
		}
		return nil, ErrInvalid
	}
	return claimsOf(tok)
}

func claimsOf(tok jwt.Token) (*Claims, error) {
	c := &Claims{Subject: tok.Subject(), Expiry: tok.Expiration(), ID: tok.JwtID()}
	if v, ok := tok.Get("client_id"); ok {
		c.ClientID, _ = v.(string)
	}
	if v, ok := tok.Get("scope"); ok {
		s, _ := v.(string)
		c.Scopes = strings.Fields(s)
	}
	if c.ClientID == "" {
		return nil, ErrInvalid
	}
	if !strings.HasPrefix(c.Subject, "client:") {
		id, err := strconv.ParseInt(c.Subject, 10, 64)
		if err != nil || id <= 0 {
			return nil, ErrInvalid
		}
		c.UserID = id
	}
	return c, nil
}

// key finds the key with id kid, refetching the JWKS (rate-limited) when it is
// not known.
func (v *Validator) key(ctx context.Context, kid string) (jwk.Key, error) {
	if kid == "" {
		return nil, ErrInvalid
	}
	if set := v.keys.Load(); set != nil {
		if k, ok := (*set).LookupKeyID(kid); ok {
			return k, nil
		}
	}
	if err := v.refresh(ctx, false); err != nil && v.keys.Load() == nil {
		return nil, ErrUnavailable
	}
	if set := v.keys.Load(); set != nil {
		if k, ok := (*set).LookupKeyID(kid); ok {
			return k, nil
		}
	}
	return nil, ErrInvalid
}

// refresh fetches the JWKS unless one was fetched within MinRefresh (force
// skips that check). Concurrent callers share one fetch.
func (v *Validator) refresh(ctx context.Context, force bool) error {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	last := time.Unix(0, v.lastFetch.Load())
	if !force && v.cfg.Now().Sub(last) < v.cfg.MinRefresh {
		return nil
	}
	v.lastFetch.Store(v.cfg.Now().UnixNano())
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	set, err := jwk.Fetch(fctx, v.cfg.JWKSURL, jwk.WithHTTPClient(v.cfg.HTTPClient))
	if err != nil {
		return fmt.Errorf("fetching JWKS: %w", err)
	}
	v.keys.Store(&set)
	return nil
}
