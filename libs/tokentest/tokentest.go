// Package tokentest issues access tokens for tests of resource services: an in-process JWKS server and tokens signed like the auth service's (RFC 9068 JWTs, ES256).
package tokentest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/eventreg/eventreg/libs/authapi"
)

// Issuer and Audience of the tokens an Issuer signs.
const (
	Issuer   = "https://issuer.test"
	Audience = "eventreg-api"
)

// Server publishes a signing key's JWKS and signs tokens with it.
type Server struct {
	// JWKSURL is where the key set is served.
	JWKSURL string
	priv    jwk.Key
}

// New starts a JWKS server that stops when t ends; on auth's path of the
// revocation feed it answers an empty feed.
func New(t testing.TB) *Server {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, "test-key")
	_ = priv.Set(jwk.AlgorithmKey, jwa.ES256)
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == authapi.PathRevocations { // nothing is revoked
			_ = json.NewEncoder(w).Encode(authapi.Revocations{Revoked: []authapi.Revocation{}})
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	return &Server{JWKSURL: srv.URL, priv: priv}
}

// Service returns a client-credentials token of client 501 with scopes, valid for an hour.
func (s *Server) Service(t testing.TB, scopes ...string) string {
	t.Helper()
	return s.Sign(t, "client:501", time.Now().Add(time.Hour), scopes...)
}

// ForUser returns a token acting for the user userID (OBO: the user is its
// subject) with scopes, valid for an hour.
func (s *Server) ForUser(t testing.TB, userID string, scopes ...string) string {
	t.Helper()
	return s.Sign(t, userID, time.Now().Add(time.Hour), scopes...)
}

// Expired returns a service token that expired an hour ago.
func (s *Server) Expired(t testing.TB, scopes ...string) string {
	t.Helper()
	return s.Sign(t, "client:501", time.Now().Add(-time.Hour), scopes...)
}

// Sign returns a token for subject expiring at exp.
func (s *Server) Sign(t testing.TB, subject string, exp time.Time, scopes ...string) string {
	t.Helper()
	tok := jwt.New()
	_ = tok.Set(jwt.IssuerKey, Issuer)
	_ = tok.Set(jwt.AudienceKey, []string{Audience})
	_ = tok.Set(jwt.SubjectKey, subject)
	_ = tok.Set(jwt.ExpirationKey, exp)
	_ = tok.Set(jwt.IssuedAtKey, exp.Add(-time.Hour))
	_ = tok.Set(jwt.JwtIDKey, rand.Text())
	_ = tok.Set("scope", strings.Join(scopes, " "))
	_ = tok.Set("client_id", strings.TrimPrefix(subject, "client:"))
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, "at+jwt")
	b, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256, s.priv, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
