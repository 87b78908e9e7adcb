// Package tokenauth validates the access tokens (RFC 9068 JWTs) that resource
// services receive: keys come from the auth service's JWKS, fetched and cached,
// refetched on an unknown key id at most once per MinRefresh; a token verified
// once is remembered until it expires, its key leaves the JWKS or auth's
// revocation feed lists it. Gin middleware turns failures into the API's 401
// and 403 bodies.
package tokenauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
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

	"github.com/eventreg/eventreg/libs/logging"
	"github.com/eventreg/eventreg/libs/svcclient"
)

// Errors of Validate.
var (
	ErrInvalid     = errors.New("invalid token")
	ErrExpired     = errors.New("token expired")
	ErrUnavailable = errors.New("signing keys unavailable") // JWKS never fetched
	// ErrRevoked is a token whose jti or sid the revocation feed lists. It
	// wraps ErrInvalid: a revoked token is answered like an invalid one.
	ErrRevoked = fmt.Errorf("%w: revoked", ErrInvalid)
)

// maxDocument bounds a JWKS or revocation-feed answer.
const maxDocument = 1 << 20

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
	// retired and revoked keys are dropped, with the tokens they signed.
	RefreshEvery time.Duration
	// RevocationsURL is auth's revocation feed (GET ?after=cursor); empty
	// means no feed: only expiry and key removal end a token.
	RevocationsURL string
	// FeedCredentials give the token auth's internal listener requires of
	// the feed's readers (nil: none, a test's double).
	FeedCredentials svcclient.Credentials
	// RevocationPoll is how often Start's goroutine polls the feed (default 2s).
	RevocationPoll time.Duration
	// MaxRevocations bounds the revocation entries held (default 100,000);
	// past it the entries expiring first are dropped and every token
	// expiring no later than them is treated as revoked (fail closed).
	MaxRevocations int
	// CacheSize bounds the verified-token cache (default 50,000).
	CacheSize int
	// HTTPClient fetches the JWKS and the feed (default: 5s timeout).
	HTTPClient *http.Client
	// Log receives background fetch failures, at most one a minute for each
	// source (default: discarded).
	Log *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Claims are what a resource service needs from a valid token.
type Claims struct {
	Subject  string
	ClientID string
	Scopes   []string
	Expiry   time.Time
	// IssuedAt is the iat claim (zero when absent: any cutoff of the
	// client revokes the token).
	IssuedAt time.Time
	ID       string
	// SessionID is the sid claim: the refresh-token family an OBO token was
	// issued from ("" for service tokens).
	SessionID string
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
	cache *lru.Cache[string, *verified]

	fetchMu    sync.Mutex
	lastFetch  atomic.Int64 // unix nanos of the last fetch attempt
	keyErrors  errorLog
	feedURL    *url.URL // nil: no revocation feed
	revoked    *revocationList
	cursor     int64  // the feed's next; only Start's goroutine touches it
	epoch      string // the feed's epoch at the last answer; likewise
	feedRead   atomic.Bool
	feedErrors errorLog
}

// verified is a cached token: its claims and the key that signed it.
type verified struct {
	claims *Claims
	kid    string
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
	if cfg.RevocationPoll <= 0 {
		cfg.RevocationPoll = 2 * time.Second
	}
	if cfg.MaxRevocations <= 0 {
		cfg.MaxRevocations = 100_000
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 50_000
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := lru.New[string, *verified](cfg.CacheSize)
	if err != nil {
		return nil, err
	}
	v := &Validator{cfg: cfg, cache: cache, revoked: newRevocationList(cfg.MaxRevocations),
		keyErrors:  errorLog{log: cfg.Log, msg: "fetching the JWKS failed; keeping the keys held"},
		feedErrors: errorLog{log: cfg.Log, msg: "polling the revocation feed failed; keeping the current list"}}
	if cfg.RevocationsURL != "" {
		u, err := url.Parse(cfg.RevocationsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("tokenauth: revocations URL %q is not an http(s) URL", cfg.RevocationsURL)
		}
		v.feedURL = u
	}
	return v, nil
}

// Start fetches the keys once, then until ctx ends re-reads them every
// RefreshEvery and polls the revocation feed (when there is one) at once and
// every RevocationPoll. Start is called once. A failed first fetch is not
// fatal: the next request tries again.
func (v *Validator) Start(ctx context.Context) {
	if err := v.refresh(ctx, true); err != nil {
		v.keyErrors.report(v.cfg.Now(), err)
	}
	go v.run(ctx)
}

func (v *Validator) run(ctx context.Context) {
	keys := time.NewTicker(v.cfg.RefreshEvery)
	defer keys.Stop()
	var poll <-chan time.Time
	if v.feedURL != nil {
		v.pollRevocations(ctx)
		t := time.NewTicker(v.cfg.RevocationPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-keys.C:
			if err := v.refresh(ctx, true); err != nil && ctx.Err() == nil {
				v.keyErrors.report(v.cfg.Now(), err)
			}
		case <-poll:
			v.pollRevocations(ctx)
		}
	}
}

// Ready reports whether keys have been fetched and, when there is a
// revocation feed, whether it has been read to its end once (a readiness
// check): a replica that has not read it would accept tokens revoked before
// it started. Once read, a failing feed no longer makes it unready (the list
// held stays in force).
func (v *Validator) Ready(ctx context.Context) error {
	if err := v.keysReady(ctx); err != nil {
		return err
	}
	if v.feedURL != nil && !v.feedRead.Load() {
		return errors.New("revocation feed: not read yet")
	}
	return nil
}

func (v *Validator) keysReady(ctx context.Context) error {
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

// Validate verifies raw and returns its claims, or ErrInvalid, ErrExpired,
// ErrRevoked or ErrUnavailable.
func (v *Validator) Validate(ctx context.Context, raw string) (*Claims, error) {
	if e, ok := v.cache.Get(raw); ok {
		if !v.cfg.Now().Before(e.claims.Expiry.Add(v.cfg.Leeway)) {
			v.cache.Remove(raw)
			return nil, ErrExpired
		}
		if v.isRevoked(e.claims) {
			v.cache.Remove(raw)
			return nil, ErrRevoked
		}
		return e.claims, nil
	}
	c, kid, err := v.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if v.isRevoked(c) {
		return nil, ErrRevoked
	}
	v.cache.Add(raw, &verified{claims: c, kid: kid})
	// A refresh that dropped kid while this token was being verified may
	// have swept the cache before the Add: take the entry out again.
	if !v.holds(kid) {
		v.cache.Remove(raw)
	}
	return c, nil
}

// isRevoked is on every request's path: a read lock and a few map lookups.
func (v *Validator) isRevoked(c *Claims) bool { return v.revoked.lists(c) }

func (v *Validator) verify(ctx context.Context, raw string) (*Claims, string, error) {
	if len(raw) > 8192 || strings.Count(raw, ".") != 2 {
		return nil, "", ErrInvalid
	}
	msg, err := jws.ParseString(raw)
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, "", ErrInvalid
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	alg := hdr.Algorithm()
	if !allowedAlgs[alg] {
		return nil, "", ErrInvalid
	}
	if typ := strings.ToLower(hdr.Type()); typ != "at+jwt" && typ != "application/at+jwt" {
		return nil, "", ErrInvalid
	}
	kid := hdr.KeyID()
	key, err := v.key(ctx, kid)
	if err != nil {
		return nil, "", err
	}
	if ka := key.Algorithm(); ka != nil && ka.String() != "" && ka.String() != alg.String() {
		return nil, "", ErrInvalid
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
			return nil, "", ErrExpired
		}
		return nil, "", ErrInvalid
	}
	c, err := claimsOf(tok)
	return c, kid, err
}

func claimsOf(tok jwt.Token) (*Claims, error) {
	c := &Claims{Subject: tok.Subject(), Expiry: tok.Expiration(), IssuedAt: tok.IssuedAt(), ID: tok.JwtID()}
	if v, ok := tok.Get("client_id"); ok {
		c.ClientID, _ = v.(string)
	}
	if v, ok := tok.Get("sid"); ok {
		c.SessionID, _ = v.(string)
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

// holds reports whether the key set held now has kid.
func (v *Validator) holds(kid string) bool {
	set := v.keys.Load()
	if set == nil {
		return false
	}
	_, ok := (*set).LookupKeyID(kid)
	return ok
}

// refresh fetches the JWKS unless one was fetched within MinRefresh (force
// skips that check). Concurrent callers share one fetch. A failed fetch or an
// empty set keeps the keys held; a set without some key held before drops
// the cached tokens that key signed.
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
	body, err := getJSON(fctx, v.cfg.HTTPClient, v.cfg.JWKSURL, nil, "application/json", "application/jwk-set+json")
	if err != nil {
		return fmt.Errorf("fetching JWKS: %w", err)
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return fmt.Errorf("parsing JWKS: %w", err)
	}
	if set.Len() == 0 {
		return errors.New("fetching JWKS: the key set is empty")
	}
	old := v.keys.Load()
	v.keys.Store(&set)
	if old != nil {
		v.forgetTokensOfDroppedKeys(*old, set)
	}
	return nil
}

// forgetTokensOfDroppedKeys removes from the cache the tokens signed by a key
// of old that set no longer has (a retired or revoked key).
func (v *Validator) forgetTokensOfDroppedKeys(old, set jwk.Set) {
	var dropped []string
	for i := range old.Len() {
		k, _ := old.Key(i)
		if _, ok := set.LookupKeyID(k.KeyID()); !ok {
			dropped = append(dropped, k.KeyID())
		}
	}
	if len(dropped) == 0 {
		return
	}
	for _, raw := range v.cache.Keys() {
		if e, ok := v.cache.Peek(raw); ok && slices.Contains(dropped, e.kid) {
			v.cache.Remove(raw)
		}
	}
}

// authAudience names auth, whose internal listener serves the feed, in the
// service tokens sent to it.
const authAudience = "auth"

// getJSON GETs u, with a service token for auth from creds when not nil,
// and returns the body of a 200 answer of one of the media types given, of
// at most maxDocument bytes.
func getJSON(ctx context.Context, hc *http.Client, u string, creds svcclient.Credentials, types ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", strings.Join(types, ", "))
	if creds != nil {
		tok, err := creds.Token(authAudience)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !slices.Contains(types, mt) {
		return nil, fmt.Errorf("%s answered content type %q, not JSON", u, ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return nil, fmt.Errorf("%s answered more than %d bytes", u, maxDocument)
	}
	return body, nil
}

// errorLog logs a recurring background failure with its message, at most
// once a minute (logging.Recurring).
type errorLog struct {
	log *slog.Logger
	msg string
	logging.Recurring
}

func (l *errorLog) report(now time.Time, err error) {
	if l.Due(now) {
		l.log.Warn(l.msg, "error", err.Error())
	}
}
