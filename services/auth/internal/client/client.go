// Package client is the business of OAuth clients (apps): registration rules, secrets, authentication and import.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/userid"

	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Kind is the kind of client.
type Kind string

// Kinds of client.
const (
	KindOBO     Kind = "obo"     // acts for a user who consents (authorization code)
	KindService Kind = "service" // acts for itself (client credentials)
)

// Client is a registered app.
type Client struct {
	ID           int64
	Name         string
	Description  string
	Kind         Kind
	SecretHash   []byte
	RedirectURIs []string
	Scopes       scope.Set
	// RequirePKCE refuses authorization requests without a code_challenge
	// (obo clients; new ones require it unless registered otherwise).
	RequirePKCE bool
	// IDTokenAlg signs the client's OpenID Connect ID tokens: ES256 or
	// RS256 (id_token_signed_response_alg), as registered.
	IDTokenAlg string
	// PostLogoutRedirectURIs are where RP-initiated logout may send the
	// browser back (exact match; obo clients).
	PostLogoutRedirectURIs []string
	CreatedAt              time.Time
	UpdatedAt              time.Time
}

// HasPostLogoutRedirectURI reports whether uri is registered, byte for byte.
func (c Client) HasPostLogoutRedirectURI(uri string) bool {
	return slices.Contains(c.PostLogoutRedirectURIs, uri)
}

// IDTokenAlgs are the ID token algorithms a client may be registered with
// (RS256 first: OpenID Connect requires it be offered).
var IDTokenAlgs = []string{"RS256", "ES256"}

// DefaultIDTokenAlg is the ID token algorithm of a client registered without
// one: an ES256 signature costs a thirtieth of an RS256 one, which keeps a
// sign-in with an ID token within 10 % of one without (decision 0104). A
// client registered before keeps the algorithm stored with it.
const DefaultIDTokenAlg = "ES256"

// HasRedirectURI reports whether uri is registered: compared byte for byte,
// except that for a native app (Native) a registered http://127.0.0.1 or
// http://[::1] URI matches the same URI with any port (RFC 8252 §7.3: a
// native app listens on whatever port the system gives it). A web client's
// loopback URI (a developer's) keeps its port: any other port may be another
// program's. localhost is a name, not an IP literal: exact.
func (c Client) HasRedirectURI(uri string) bool {
	portless, loopback := withoutLoopbackPort(uri)
	loopback = loopback && c.Native()
	for _, r := range c.RedirectURIs {
		if r == uri {
			return true
		}
		if loopback {
			if rp, ok := withoutLoopbackPort(r); ok && rp == portless {
				return true
			}
		}
	}
	return false
}

// Native reports whether c is a native app (RFC 8252): an obo client every
// redirect URI of which is on loopback, so that its codes can only go to a
// program on the user's own device. An operator registers a native app so;
// one https redirect URI makes a client a web client.
func (c Client) Native() bool {
	if c.Kind != KindOBO || len(c.RedirectURIs) == 0 {
		return false
	}
	for _, r := range c.RedirectURIs {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || !IsLoopback(u.Hostname()) {
			return false
		}
	}
	return true
}

// withoutLoopbackPort returns raw without its port when raw is an http URI
// on the IP literal 127.0.0.1 or [::1]; ok is false for any other URI. The
// rest of the string is kept byte for byte.
func withoutLoopbackPort(raw string) (string, bool) {
	const scheme = "http://"
	if !strings.HasPrefix(raw, scheme) {
		return "", false
	}
	rest := raw[len(scheme):]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		port, found := strings.CutPrefix(authority, host)
		if !found {
			continue
		}
		if port != "" && !validPort(port) {
			return "", false
		}
		return scheme + host + tail, true
	}
	return "", false
}

// validPort reports whether p is ":" and a port number.
func validPort(p string) bool {
	digits, ok := strings.CutPrefix(p, ":")
	if !ok || digits == "" || len(digits) > 5 {
		return false
	}
	n, err := strconv.Atoi(digits)
	return err == nil && n > 0 && n <= 65535 && digits[0] != '0'
}

// Errors of the business.
var (
	ErrNotFound   = errors.New("client not found")
	ErrAuthFailed = errors.New("client authentication failed")
)

// InvalidError is a client definition that breaks a rule; it names the field.
type InvalidError struct{ Problems []string }

func (e *InvalidError) Error() string { return "invalid client: " + strings.Join(e.Problems, "; ") }

// Store keeps clients.
type Store interface {
	Get(ctx context.Context, id int64) (Client, error) // ErrNotFound
	List(ctx context.Context) ([]Client, error)
	// Create inserts c, assigning an id when c.ID is 0.
	Create(ctx context.Context, c Client) (Client, error)
	UpdateSecret(ctx context.Context, id int64, hash []byte) error // ErrNotFound
	Delete(ctx context.Context, id int64) error                    // ErrNotFound
	// Upsert inserts or updates every client in one transaction; a nil
	// SecretHash keeps the stored one. It returns the ids it changed, true
	// for those it inserted; unchanged clients are absent.
	Upsert(ctx context.Context, cs []Client) (changed map[int64]bool, err error)
	// Existing returns which of ids exist.
	Existing(ctx context.Context, ids []int64) (map[int64]bool, error)
}

// Service is the client business.
type Service struct {
	store    Store
	hasher   *clientsecret.Hasher
	cacheTTL time.Duration
	now      func() time.Time
	revoker  TokenRevoker

	mu    sync.RWMutex
	cache map[int64]cached
	dummy []byte
}

type cached struct {
	c       Client
	found   bool
	expires time.Time
}

// NewService returns the business over store. Clients read for
// authentication are cached for cacheTTL (0: not cached), so client
// credentials cost no database round trip on the hot path.
func NewService(store Store, hasher *clientsecret.Hasher, cacheTTL time.Duration) *Service {
	return &Service{store: store, hasher: hasher, cacheTTL: cacheTTL, now: time.Now,
		cache: map[int64]cached{}, dummy: hasher.Hash("dummy secret used to even out timing")}
}

// NewClient is what an operator registers.
type NewClient struct {
	Name         string
	Description  string
	Kind         Kind
	Scopes       []string
	RedirectURIs []string
	// RequirePKCE: an obo client must send PKCE (the default to choose).
	RequirePKCE bool
	// IDTokenAlg: RS256 or ES256; "" is DefaultIDTokenAlg.
	IDTokenAlg string
	// PostLogoutRedirectURIs of RP-initiated logout.
	PostLogoutRedirectURIs []string
}

// Create registers a client and returns it with its secret (shown once, stored hashed).
func (s *Service) Create(ctx context.Context, n NewClient) (Client, string, error) {
	c := Client{Name: n.Name, Description: n.Description, Kind: n.Kind, Scopes: scope.Normalize(n.Scopes), RedirectURIs: n.RedirectURIs,
		RequirePKCE: n.RequirePKCE && n.Kind == KindOBO, IDTokenAlg: n.IDTokenAlg,
		PostLogoutRedirectURIs: n.PostLogoutRedirectURIs}
	if c.IDTokenAlg == "" {
		c.IDTokenAlg = DefaultIDTokenAlg
	}
	if err := Validate(c); err != nil {
		return Client{}, "", err
	}
	secret, err := clientsecret.Generate()
	if err != nil {
		return Client{}, "", fmt.Errorf("generating a secret: %w", err)
	}
	c.SecretHash = s.hasher.Hash(secret)
	c, err = s.store.Create(ctx, c)
	if err != nil {
		return Client{}, "", fmt.Errorf("storing client: %w", err)
	}
	return c, secret, nil
}

// Get returns a client from the store.
func (s *Service) Get(ctx context.Context, id int64) (Client, error) { return s.store.Get(ctx, id) }

// List returns every client.
func (s *Service) List(ctx context.Context) ([]Client, error) { return s.store.List(ctx) }

// TokenRevoker revokes every access token a client was issued so far, and
// for as long as a replica may still hold the client's old record (the
// client cache): refreshdb.ClientTokens, a cutoff on the revocation feed.
type TokenRevoker interface {
	RevokeClientTokens(ctx context.Context, id int64) error
}

// ErrNoRevoker refuses a change that must revoke a client's tokens when the
// service has no TokenRevoker (the command was run without REDIS_URL).
var ErrNoRevoker = errors.New("revoking the client's access tokens needs the token store (REDIS_URL)")

// SetTokenRevoker sets what Delete, RotateSecret and a narrowing Import
// revoke the client's outstanding access tokens with.
func (s *Service) SetTokenRevoker(r TokenRevoker) { s.revoker = r }

// revokeTokens revokes client id's access tokens before a change that
// withdraws what they were issued on: first, so that a failure changes
// nothing and the command can be run again; tokens a replica mints with the
// old record meanwhile are within the cutoff.
func (s *Service) revokeTokens(ctx context.Context, id int64) error {
	if s.revoker == nil {
		return ErrNoRevoker
	}
	if err := s.revoker.RevokeClientTokens(ctx, id); err != nil {
		return fmt.Errorf("revoking the access tokens of client %d: %w", id, err)
	}
	return nil
}

// Delete removes a client (its consents go with it) and revokes its access
// tokens.
func (s *Service) Delete(ctx context.Context, id int64) error {
	if _, err := s.store.Get(ctx, id); err != nil {
		return err
	}
	if err := s.revokeTokens(ctx, id); err != nil {
		return err
	}
	if err := s.store.Delete(ctx, id); err != nil {
		return err
	}
	s.forget(id)
	return nil
}

// RotateSecret replaces a client's secret and returns the new one (shown
// once). The access tokens got with the old secret are revoked: a rotation
// is what an operator does when the secret leaked.
func (s *Service) RotateSecret(ctx context.Context, id int64) (string, error) {
	secret, err := clientsecret.Generate()
	if err != nil {
		return "", fmt.Errorf("generating a secret: %w", err)
	}
	if _, err := s.store.Get(ctx, id); err != nil {
		return "", err
	}
	if err := s.revokeTokens(ctx, id); err != nil {
		return "", err
	}
	if err := s.store.UpdateSecret(ctx, id, s.hasher.Hash(secret)); err != nil {
		return "", err
	}
	s.forget(id)
	return secret, nil
}

// Lookup returns a client through the short-lived cache.
func (s *Service) Lookup(ctx context.Context, id int64) (Client, error) {
	now := s.now()
	s.mu.RLock()
	e, ok := s.cache[id]
	s.mu.RUnlock()
	if ok && now.Before(e.expires) {
		if !e.found {
			return Client{}, ErrNotFound
		}
		return e.c, nil
	}
	c, err := s.store.Get(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Client{}, err
	}
	if s.cacheTTL > 0 {
		s.mu.Lock()
		if len(s.cache) > 100_000 { // unknown ids must not grow it without bound
			s.cache = map[int64]cached{}
		}
		s.cache[id] = cached{c: c, found: err == nil, expires: now.Add(s.cacheTTL)}
		s.mu.Unlock()
	}
	return c, err
}

func (s *Service) forget(id int64) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
}

// ParseID parses a client id as sent by apps: a positive decimal number,
// written exactly as user ids are, so userid.Parse reads it (leading zeros
// included: "0501" is client 501). The name says what the call sites parse.
func ParseID(raw string) (int64, bool) { return userid.Parse(raw) }

// Authenticate checks a client id and secret. Unknown clients and wrong
// secrets are both ErrAuthFailed and take the same work.
func (s *Service) Authenticate(ctx context.Context, rawID, secret string) (Client, error) {
	id, ok := ParseID(rawID)
	if !ok {
		s.hasher.Verify(secret, s.dummy)
		return Client{}, ErrAuthFailed
	}
	c, err := s.Lookup(ctx, id)
	if errors.Is(err, ErrNotFound) {
		s.hasher.Verify(secret, s.dummy)
		return Client{}, ErrAuthFailed
	}
	if err != nil {
		return Client{}, err
	}
	if !s.hasher.Verify(secret, c.SecretHash) {
		return Client{}, ErrAuthFailed
	}
	return c, nil
}

// Validate checks a client definition.
func Validate(c Client) error {
	var p []string
	if strings.TrimSpace(c.Name) == "" {
		p = append(p, "name is required")
	}
	if len(c.Name) > 200 || len(c.Description) > 2000 {
		p = append(p, "name (200) or description (2000) is too long")
	}
	switch c.Kind {
	case KindOBO:
		if len(c.RedirectURIs) == 0 {
			p = append(p, "an obo client needs at least one redirect URI")
		}
	case KindService:
		if len(c.RedirectURIs) > 0 {
			p = append(p, "a service client has no redirect URIs")
		}
		if obo := c.Scopes.OBOOnly(); len(obo) > 0 {
			p = append(p, "scopes "+strings.Join(obo, ", ")+" are for obo clients only")
		}
	default:
		p = append(p, `kind must be "obo" or "service"`)
	}
	if len(c.Scopes) == 0 {
		p = append(p, "at least one scope is required")
	}
	if c.IDTokenAlg != "" && !slices.Contains(IDTokenAlgs, c.IDTokenAlg) {
		p = append(p, "the ID token algorithm must be one of "+strings.Join(IDTokenAlgs, ", "))
	}
	if unknown := c.Scopes.Unknown(); len(unknown) > 0 {
		p = append(p, "unknown scopes: "+strings.Join(unknown, ", "))
	}
	for _, u := range c.RedirectURIs {
		if err := ValidateRedirectURI(u); err != nil {
			p = append(p, fmt.Sprintf("redirect URI %q: %v", u, err))
		}
	}
	if len(c.PostLogoutRedirectURIs) > 0 && c.Kind != KindOBO {
		p = append(p, "a service client has no post-logout redirect URIs")
	}
	for _, u := range c.PostLogoutRedirectURIs {
		if err := ValidateRedirectURI(u); err != nil {
			p = append(p, fmt.Sprintf("post-logout redirect URI %q: %v", u, err))
		}
	}
	if len(p) > 0 {
		return &InvalidError{Problems: p}
	}
	return nil
}

// ValidateRedirectURI accepts absolute https URIs, and http only for loopback hosts (RFC 8252 §7.3).
func ValidateRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute URL")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not have a fragment")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if IsLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("http is allowed only for loopback addresses; use https")
	default:
		return errors.New("scheme must be https (or http on a loopback address)")
	}
}

// IsLoopback reports whether host is localhost or a loopback IP address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ImportResult says what an import did.
type ImportResult struct {
	Created, Updated int
	// Revoked lists the clients whose access tokens were revoked: the file
	// took a scope from them, changed their kind or replaced their secret.
	Revoked []int64
	// Generated holds the secrets made for new clients without one (print once).
	Generated map[int64]string
}

// withdraws reports whether next takes from a stored client what its
// access tokens were issued on: a scope, its kind, or its secret.
func withdraws(stored, next Client) bool {
	if stored.Kind != next.Kind || (next.SecretHash != nil && !bytes.Equal(stored.SecretHash, next.SecretHash)) {
		return true
	}
	for _, sc := range stored.Scopes {
		if !next.Scopes.Contains(sc) {
			return true
		}
	}
	return false
}

// Import loads the clients section of a fixture: all or nothing, idempotent.
func (s *Service) Import(ctx context.Context, in []fixture.Client) (ImportResult, error) {
	var problems fixture.Problems
	seen := map[int64]bool{}
	cs := make([]Client, 0, len(in))
	ids := make([]int64, 0, len(in))
	for i, f := range in {
		where := fmt.Sprintf("clients[%d] (id %d)", i, f.ID)
		if f.ID <= 0 {
			problems.Addf("%s: id must be a positive integer", where)
		}
		if seen[f.ID] {
			problems.Addf("%s: id appears twice", where)
		}
		seen[f.ID] = true
		c := Client{ID: f.ID, Name: f.Name, Description: f.Description, Kind: Kind(f.Kind), RedirectURIs: f.RedirectURIs, Scopes: scope.Normalize(f.Scopes),
			IDTokenAlg: DefaultIDTokenAlg, PostLogoutRedirectURIs: f.PostLogoutRedirectURIs}
		if f.IDTokenAlg != nil {
			c.IDTokenAlg = *f.IDTokenAlg
		}
		if f.RequirePKCE != nil && *f.RequirePKCE && c.Kind != KindOBO {
			problems.Addf("%s: requirePkce applies to obo clients only", where)
		}
		if c.RedirectURIs == nil {
			c.RedirectURIs = []string{}
		}
		if err := Validate(c); err != nil {
			var ie *InvalidError
			if errors.As(err, &ie) {
				for _, p := range ie.Problems {
					problems.Addf("%s: %s", where, p)
				}
			}
		}
		if f.Secret != nil {
			if err := clientsecret.Check(*f.Secret); err != nil {
				problems.Addf("%s: secret: %v", where, err)
			} else {
				c.SecretHash = s.hasher.Hash(*f.Secret)
			}
		}
		cs = append(cs, c)
		ids = append(ids, f.ID)
	}
	if err := problems.Err(); err != nil {
		return ImportResult{}, err
	}
	existing, err := s.store.Existing(ctx, ids)
	if err != nil {
		return ImportResult{}, fmt.Errorf("reading existing clients: %w", err)
	}
	res := ImportResult{Generated: map[int64]string{}}
	var narrowed []int64
	for i := range cs {
		if existing[cs[i].ID] {
			stored, err := s.store.Get(ctx, cs[i].ID)
			if err != nil {
				return ImportResult{}, fmt.Errorf("reading client %d: %w", cs[i].ID, err)
			}
			if withdraws(stored, cs[i]) {
				narrowed = append(narrowed, cs[i].ID)
			}
		}
	}
	for _, id := range narrowed {
		if err := s.revokeTokens(ctx, id); err != nil {
			return ImportResult{}, err
		}
	}
	res.Revoked = narrowed
	for i := range cs {
		// requirePkce: as the file says; when it says nothing, required for a
		// new obo client and kept as stored for an existing one (re-importing
		// an old file does not break an app that sends no PKCE).
		switch f := in[i]; {
		case f.RequirePKCE != nil:
			cs[i].RequirePKCE = *f.RequirePKCE
		case existing[cs[i].ID]:
			stored, err := s.store.Get(ctx, cs[i].ID)
			if err != nil {
				return ImportResult{}, fmt.Errorf("reading client %d: %w", cs[i].ID, err)
			}
			cs[i].RequirePKCE = stored.RequirePKCE
		default:
			cs[i].RequirePKCE = cs[i].Kind == KindOBO
		}
		// idTokenSignedResponseAlg: as the file says; absent, kept as stored.
		if in[i].IDTokenAlg == nil && existing[cs[i].ID] {
			stored, err := s.store.Get(ctx, cs[i].ID)
			if err != nil {
				return ImportResult{}, fmt.Errorf("reading client %d: %w", cs[i].ID, err)
			}
			cs[i].IDTokenAlg = stored.IDTokenAlg
		}
		cs[i].RequirePKCE = cs[i].RequirePKCE && cs[i].Kind == KindOBO
		if cs[i].SecretHash == nil && !existing[cs[i].ID] {
			secret, err := clientsecret.Generate()
			if err != nil {
				return ImportResult{}, fmt.Errorf("generating a secret: %w", err)
			}
			cs[i].SecretHash = s.hasher.Hash(secret)
			res.Generated[cs[i].ID] = secret
		}
	}
	created, err := s.store.Upsert(ctx, cs)
	if err != nil {
		return ImportResult{}, fmt.Errorf("storing clients: %w", err)
	}
	for _, c := range cs {
		s.forget(c.ID)
		if inserted, changed := created[c.ID]; changed && inserted {
			res.Created++
		} else if changed {
			res.Updated++
		}
	}
	return res, nil
}
