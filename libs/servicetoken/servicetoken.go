// Package servicetoken authenticates the calls between the services: the
// caller signs a short-lived token (an HS256 JWT, typ "svc+jwt") naming itself
// (iss) and the service it calls (aud) with the key every service of the
// deployment shares (INTERNAL_AUTH_KEY); the called service's internal
// listener accepts only such tokens with its own name as audience
// (decision 0094). A peer that can reach the port but holds no key can
// call nothing.
package servicetoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/eventreg/eventreg/libs/config"
)

// MinKeyLength is the shortest INTERNAL_AUTH_KEY accepted.
const MinKeyLength = 32

// Lifetime is how long a token is valid; a Signer renews it when half is
// gone, so a token seen in flight is useless a few minutes later.
const Lifetime = 2 * time.Minute

// Leeway is the clock skew tolerated between two pods.
const Leeway = 30 * time.Second

// Type is the typ header of a service token: no other token of the system
// (access tokens are at+jwt, webhook deliveries webhook+jwt) is taken for one.
const Type = "svc+jwt"

// Errors of Verifier.Verify.
var (
	ErrInvalid = errors.New("invalid service token")
	ErrExpired = errors.New("service token expired")
)

// Config is the shared key; embed it in a service's configuration.
type Config struct {
	// Key signs the tokens this service sends and verifies those it
	// receives. Every service of a deployment has the same.
	Key string `env:"INTERNAL_AUTH_KEY,unset"`
	// PreviousKey is also accepted, never used to sign: during a key change
	// the replicas still on the old key keep being understood.
	PreviousKey string `env:"INTERNAL_AUTH_KEY_PREVIOUS,unset"`
}

// Validate checks that the key is set and long enough.
func (c Config) Validate() error {
	if c.Key == "" {
		return errors.New("INTERNAL_AUTH_KEY is required: the key the services sign their calls to each other with (the same in every service)")
	}
	errs := []error{config.MinLength("INTERNAL_AUTH_KEY", c.Key, MinKeyLength)}
	if c.PreviousKey != "" {
		errs = append(errs, config.MinLength("INTERNAL_AUTH_KEY_PREVIOUS", c.PreviousKey, MinKeyLength))
	}
	return errors.Join(errs...)
}

// hmacKey derives the signing key from a configured one, so that a value
// reused for another purpose (a cursor key, say) signs nothing here that it
// signs there.
func hmacKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("eventreg service token v1"))
	return m.Sum(nil)
}

// Signer makes the tokens one service sends. It is safe for concurrent use.
type Signer struct {
	key    []byte
	issuer string
	now    func() time.Time

	mu     sync.Mutex
	tokens map[string]signed // by audience
}

type signed struct {
	raw     string
	renewAt time.Time
}

// NewSigner returns the signer of the service named issuer with cfg's key.
func NewSigner(cfg Config, issuer string) *Signer {
	return &Signer{key: hmacKey(cfg.Key), issuer: issuer, now: time.Now, tokens: map[string]signed{}}
}

// Token returns a token for calling the service named audience: the one
// made before while it has more than half its Lifetime left, else a new one.
func (s *Signer) Token(audience string) (string, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[audience]; ok && now.Before(t.renewAt) {
		return t.raw, nil
	}
	raw, err := s.sign(audience, now, Lifetime)
	if err != nil {
		return "", err
	}
	s.tokens[audience] = signed{raw: raw, renewAt: now.Add(Lifetime / 2)}
	return raw, nil
}

// TokenAt is a new token for audience as made at the time at, never
// cached: tests make expired ones with it.
func (s *Signer) TokenAt(audience string, at time.Time) (string, error) {
	return s.sign(audience, at, Lifetime)
}

func (s *Signer) sign(audience string, now time.Time, lifetime time.Duration) (string, error) {
	tok, err := jwt.NewBuilder().Issuer(s.issuer).Audience([]string{audience}).
		IssuedAt(now).Expiration(now.Add(lifetime)).Build()
	if err != nil {
		return "", fmt.Errorf("building a service token: %w", err)
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, Type)
	out, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, s.key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", fmt.Errorf("signing a service token: %w", err)
	}
	return string(out), nil
}

// Verifier checks the tokens one service receives.
type Verifier struct {
	audience string
	keys     [][]byte
	now      func() time.Time
}

// NewVerifier returns the verifier of the service named audience, accepting
// tokens signed with cfg's key or its previous key.
func NewVerifier(cfg Config, audience string) *Verifier {
	v := &Verifier{audience: audience, keys: [][]byte{hmacKey(cfg.Key)}, now: time.Now}
	if cfg.PreviousKey != "" {
		v.keys = append(v.keys, hmacKey(cfg.PreviousKey))
	}
	return v
}

// Verify returns the calling service's name (iss) when raw is a service
// token for this service, signed with an accepted key, within its time and
// not valid longer than Lifetime; else ErrExpired or ErrInvalid.
func (v *Verifier) Verify(raw string) (caller string, err error) {
	if len(raw) > 2048 || strings.Count(raw, ".") != 2 {
		return "", ErrInvalid
	}
	msg, err := jws.ParseString(raw)
	if err != nil || len(msg.Signatures()) != 1 {
		return "", ErrInvalid
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	if hdr.Algorithm() != jwa.HS256 || hdr.Type() != Type {
		return "", ErrInvalid
	}
	for _, key := range v.keys {
		tok, err := jwt.ParseString(raw,
			jwt.WithKey(jwa.HS256, key),
			jwt.WithValidate(true),
			jwt.WithAudience(v.audience),
			jwt.WithAcceptableSkew(Leeway),
			jwt.WithClock(jwt.ClockFunc(v.now)),
			jwt.WithRequiredClaim("exp"),
			jwt.WithRequiredClaim("iat"),
			jwt.WithRequiredClaim("iss"),
		)
		switch {
		case errors.Is(err, jwt.ErrTokenExpired()):
			return "", ErrExpired
		case err != nil:
			continue // another key, or not ours at all
		}
		// Short-lived by construction: a token made to last longer (by a
		// holder of the key, by mistake) is refused, not honoured for long.
		if tok.Expiration().Sub(tok.IssuedAt()) > Lifetime {
			return "", ErrInvalid
		}
		return tok.Issuer(), nil
	}
	return "", ErrInvalid
}
