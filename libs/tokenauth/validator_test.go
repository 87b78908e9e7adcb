package tokenauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/eventreg/eventreg/libs/tokenauth"
)

const (
	issuer   = "https://auth.example.test"
	audience = "eventreg-api"
)

type keyServer struct {
	priv    jwk.Key
	pub     jwk.Set
	fetches atomic.Int32
	srv     *httptest.Server
}

func newKeyServer(t *testing.T, kid string) *keyServer {
	t.Helper()
	ks := &keyServer{}
	ks.priv, ks.pub = newKey(t, kid)
	ks.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ks.pub)
	}))
	t.Cleanup(ks.srv.Close)
	return ks
}

func newKey(t *testing.T, kid string) (jwk.Key, jwk.Set) {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := jwk.FromRaw(raw)
	_ = priv.Set(jwk.KeyIDKey, kid)
	_ = priv.Set(jwk.AlgorithmKey, jwa.ES256)
	pub, _ := priv.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	return priv, set
}

type tokenOpts struct {
	typ      string
	issuer   string
	audience string
	exp      time.Time
	nbf      time.Time
	iat      time.Time
	sub      string
	scope    string
	clientID string
	jti      string
	sid      string
}

func defaults() tokenOpts {
	return tokenOpts{typ: "at+jwt", issuer: issuer, audience: audience, exp: time.Now().Add(time.Hour),
		sub: "1001", scope: "pii:basic user:read", clientID: "502"}
}

func sign(t *testing.T, key jwk.Key, o tokenOpts) string {
	t.Helper()
	tok := jwt.New()
	_ = tok.Set(jwt.IssuerKey, o.issuer)
	_ = tok.Set(jwt.AudienceKey, []string{o.audience})
	_ = tok.Set(jwt.SubjectKey, o.sub)
	_ = tok.Set(jwt.ExpirationKey, o.exp)
	iat := o.iat
	if iat.IsZero() {
		iat = time.Now()
	}
	_ = tok.Set(jwt.IssuedAtKey, iat)
	if !o.nbf.IsZero() {
		_ = tok.Set(jwt.NotBeforeKey, o.nbf)
	}
	_ = tok.Set("scope", o.scope)
	_ = tok.Set("client_id", o.clientID)
	if o.jti != "" {
		_ = tok.Set(jwt.JwtIDKey, o.jti)
	}
	if o.sid != "" {
		_ = tok.Set("sid", o.sid)
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, o.typ)
	b, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256, key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newValidator(t *testing.T, ks *keyServer) *tokenauth.Validator {
	t.Helper()
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience,
		Leeway: 5 * time.Second, MinRefresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidTokenClaims(t *testing.T) {
	ks := newKeyServer(t, "k1")
	v := newValidator(t, ks)
	c, err := v.Validate(context.Background(), sign(t, ks.priv, defaults()))
	if err != nil {
		t.Fatal(err)
	}
	if c.UserID != 1001 || c.ClientID != "502" || !c.HasScope("user:read") || c.HasScope("pii:email") {
		t.Fatalf("claims %+v", c)
	}
	withIDs := defaults()
	withIDs.jti, withIDs.sid = "jti-1", "family-1"
	if c, err := v.Validate(context.Background(), sign(t, ks.priv, withIDs)); err != nil || c.ID != "jti-1" || c.SessionID != "family-1" {
		t.Fatalf("jti and sid: %+v %v", c, err)
	}
	o := defaults()
	o.sub = "client:501"
	c, err = v.Validate(context.Background(), sign(t, ks.priv, o))
	if err != nil || c.UserID != 0 || c.Subject != "client:501" {
		t.Fatalf("service token: %+v %v", c, err)
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestRefusesEveryBadTokenKind(t *testing.T) {
	ks := newKeyServer(t, "k1")
	good := sign(t, ks.priv, defaults())
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])

	otherKey, _ := newKey(t, "k1") // same kid, different key: bad signature
	unknownKid, _ := newKey(t, "k-unknown")

	// HS256 "signed" with the public key's JSON: the classic key-confusion attack.
	pubJSON, _ := json.Marshal(ks.pub)
	hmacKey, _ := jwk.FromRaw(pubJSON)
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, "at+jwt")
	_ = hdr.Set(jws.KeyIDKey, "k1")
	hs256, err := jws.Sign(payload, jws.WithKey(jwa.HS256, hmacKey, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}

	mod := func(f func(*tokenOpts)) string {
		o := defaults()
		f(&o)
		return sign(t, ks.priv, o)
	}
	tampered := parts[0] + "." + b64(strings.Replace(string(payload), `"pii:basic user:read"`, `"pii:basic user:read user:roles:update"`, 1)) + "." + parts[2]

	cases := map[string]struct {
		token string
		want  error
	}{
		"bad signature":      {sign(t, otherKey, defaults()), tokenauth.ErrInvalid},
		"alg none":           {b64(`{"alg":"none","typ":"at+jwt","kid":"k1"}`) + "." + parts[1] + ".", tokenauth.ErrInvalid},
		"HS256 with pub key": {string(hs256), tokenauth.ErrInvalid},
		"unknown kid":        {sign(t, unknownKid, defaults()), tokenauth.ErrInvalid},
		"wrong iss":          {mod(func(o *tokenOpts) { o.issuer = "https://evil.test" }), tokenauth.ErrInvalid},
		"wrong aud":          {mod(func(o *tokenOpts) { o.audience = "other-api" }), tokenauth.ErrInvalid},
		"wrong typ":          {mod(func(o *tokenOpts) { o.typ = "JWT" }), tokenauth.ErrInvalid},
		"expired":            {mod(func(o *tokenOpts) { o.exp = time.Now().Add(-time.Minute) }), tokenauth.ErrExpired},
		"not yet valid":      {mod(func(o *tokenOpts) { o.nbf = time.Now().Add(time.Minute) }), tokenauth.ErrInvalid},
		"no client_id":       {mod(func(o *tokenOpts) { o.clientID = "" }), tokenauth.ErrInvalid},
		"bad sub":            {mod(func(o *tokenOpts) { o.sub = "alice" }), tokenauth.ErrInvalid},
		"tampered payload":   {tampered, tokenauth.ErrInvalid},
		"garbage":            {"not.a.token", tokenauth.ErrInvalid},
		"two parts":          {parts[0] + "." + parts[1], tokenauth.ErrInvalid},
		"huge":               {strings.Repeat("a", 10000) + ".b.c", tokenauth.ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := newValidator(t, ks)
			if _, err := v.Validate(context.Background(), tc.token); !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
		})
	}
}

func TestLeewayAcceptsSmallSkew(t *testing.T) {
	ks := newKeyServer(t, "k1")
	v := newValidator(t, ks)
	o := defaults()
	o.nbf = time.Now().Add(3 * time.Second) // issuer's clock 3s ahead
	if _, err := v.Validate(context.Background(), sign(t, ks.priv, o)); err != nil {
		t.Fatalf("3s skew within 5s leeway refused: %v", err)
	}
}

func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	ks := newKeyServer(t, "k1")
	v := newValidator(t, ks) // MinRefresh: 1h
	if _, err := v.Validate(context.Background(), sign(t, ks.priv, defaults())); err != nil {
		t.Fatal(err)
	}
	stranger, _ := newKey(t, "stranger")
	for i := 0; i < 20; i++ {
		o := defaults()
		o.scope = "x" + string(rune('a'+i))
		_, _ = v.Validate(context.Background(), sign(t, stranger, o))
	}
	if n := ks.fetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
}

func TestRotatedKeyIsFetched(t *testing.T) {
	ks := newKeyServer(t, "k1")
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience, MinRefresh: time.Nanosecond})
	if _, err := v.Validate(context.Background(), sign(t, ks.priv, defaults())); err != nil {
		t.Fatal(err)
	}
	newPriv, newSet := newKey(t, "k2")
	oldPub, _ := ks.pub.Key(0)
	_ = newSet.AddKey(oldPub)
	ks.pub = newSet // publish k2 next to k1
	if _, err := v.Validate(context.Background(), sign(t, newPriv, defaults())); err != nil {
		t.Fatalf("token signed by the new key: %v", err)
	}
}

func TestCachedValidationStillExpires(t *testing.T) {
	ks := newKeyServer(t, "k1")
	now := time.Now()
	clock := func() time.Time { return now }
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience, Now: clock})
	o := defaults()
	o.exp = now.Add(10 * time.Second)
	tok := sign(t, ks.priv, o)
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	now = now.Add(11 * time.Second)
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, tokenauth.ErrExpired) {
		t.Fatalf("cached token past expiry: %v", err)
	}
}

func TestUnreachableJWKSIsUnavailable(t *testing.T) {
	ks := newKeyServer(t, "k1")
	tok := sign(t, ks.priv, defaults())
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: "http://127.0.0.1:1/jwks", Issuer: issuer, Audience: audience})
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, tokenauth.ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
}

func BenchmarkValidateCold(b *testing.B) {
	t := &testing.T{}
	ks := newKeyServer(t, "k1")
	defer ks.srv.Close()
	tok := sign(t, ks.priv, defaults())
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience, CacheSize: 1})
	other := sign(t, ks.priv, tokenOpts{typ: "at+jwt", issuer: issuer, audience: audience, exp: time.Now().Add(time.Hour), sub: "1", scope: "s", clientID: "1"})
	ctx := context.Background()
	for b.Loop() {
		// alternate two tokens through a one-entry cache: every call verifies
		if _, err := v.Validate(ctx, tok); err != nil {
			b.Fatal(err)
		}
		if _, err := v.Validate(ctx, other); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateCached(b *testing.B) {
	t := &testing.T{}
	ks := newKeyServer(t, "k1")
	defer ks.srv.Close()
	tok := sign(t, ks.priv, defaults())
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience})
	ctx := context.Background()
	if _, err := v.Validate(ctx, tok); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.Validate(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
