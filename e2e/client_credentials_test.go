package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// errorMessage is errors.<category>.message of an API error body.
func errorMessage(t testing.TB, body, category string) string {
	t.Helper()
	var e struct {
		Errors map[string]struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body is not JSON: %s", body)
	}
	return e.Errors[category].Message
}

// TestClientCredentialsThroughTheGateway: a service app gets a token in
// either client authentication style on the HTTP and TLS listeners, the
// token verifies against the published JWKS and reads a user; bad
// credentials, scopes and tokens are refused in the documented shapes; and
// the gateway answers outside the API with its page and JSON 404s.
func TestClientCredentialsThroughTheGateway(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	ctx := context.Background()
	hc := s.HTTPClient()

	t.Run("client credentials in both auth styles, token verifies against JWKS, user readable", func(t *testing.T) {
		set, err := jwk.Fetch(ctx, gw+"/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		for name, style := range map[string]oauth2.AuthStyle{"basic": oauth2.AuthStyleInHeader, "form": oauth2.AuthStyleInParams} {
			t.Run(name, func(t *testing.T) {
				tok, err := clientCredentials(gw, trackerID, trackerSecret, style, "user:read").Token(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if tok.TokenType != "Bearer" || tok.RefreshToken != "" || tok.Extra("expires_in") == nil {
					t.Fatalf("token response %+v", tok)
				}
				parsed, err := jwt.ParseString(tok.AccessToken, jwt.WithKeySet(set), jwt.WithValidate(true), jwt.WithIssuer(s.Issuer))
				if err != nil {
					t.Fatalf("token does not verify against the JWKS: %v", err)
				}
				if parsed.Subject() != "client:"+trackerID {
					t.Fatalf("sub %q", parsed.Subject())
				}
				r := mustSend(t, s, http.MethodGet, "/api/v0/users/1001", tok.AccessToken, "")
				var u map[string]any
				if r.status != 200 || json.Unmarshal([]byte(r.body), &u) != nil || u["id"] != "1001" || u["username"] != "alice" {
					t.Fatalf("GET user: %d %s", r.status, r.body)
				}
			})
		}
	})

	t.Run("the TLS listener serves the same API with TLS 1.2 or newer only", func(t *testing.T) {
		tok, err := clientCredentials(s.GatewayTLSURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").
			Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := newRequest(s.GatewayTLSURL, http.MethodGet, "/api/v0/users/1002", tok.AccessToken, "")
		if r := mustDo(t, hc, req); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		old := hc.Transport.(*http.Transport).Clone()
		old.TLSClientConfig = old.TLSClientConfig.Clone()
		old.TLSClientConfig.MinVersion, old.TLSClientConfig.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		if _, err := (&http.Client{Transport: old}).Get(s.GatewayTLSURL + "/"); err == nil {
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})

	t.Run("an unknown user is 404", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/api/v0/users/999999", serviceToken(t, s, trackerID, trackerSecret, "user:read"), "")
		if r.status != 404 || errorMessage(t, r.body, "resource") == "" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})

	tokenRefusals := []struct {
		name, id, secret, scope, wantError string
		status                             int
	}{
		{"wrong secret", trackerID, trackerSecret + "x", "user:read", "invalid_client", 401},
		{"unknown client", "999", trackerSecret, "user:read", "invalid_client", 401},
		{"unapproved scope", readerID, readerSecret, "user:read", "invalid_scope", 400},
		{"OBO-only scope", trackerID, trackerSecret, "pii:basic", "invalid_scope", 400},
		{"unknown scope", trackerID, trackerSecret, "user:write", "invalid_scope", 400},
	}
	for _, tc := range tokenRefusals {
		t.Run("token refused: "+tc.name, func(t *testing.T) {
			_, err := clientCredentials(gw, tc.id, tc.secret, oauth2.AuthStyleInHeader, tc.scope).Token(ctx)
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) {
				t.Fatalf("want a token error, got %v", err)
			}
			if re.Response.StatusCode != tc.status || re.ErrorCode != tc.wantError {
				t.Fatalf("got %d %q (%s), want %d %q", re.Response.StatusCode, re.ErrorCode, re.Body, tc.status, tc.wantError)
			}
			if ct := re.Response.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}

	t.Run("API refusals", func(t *testing.T) {
		readerTok, err := clientCredentials(gw, readerID, readerSecret, oauth2.AuthStyleInParams, "registration:read").Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		good := serviceToken(t, s, trackerID, trackerSecret, "user:read")
		parts := strings.Split(good, ".")
		sig := []byte(parts[2])
		sig[10] ^= 0x01
		tampered := parts[0] + "." + parts[1] + "." + string(sig)

		cases := []struct {
			name, token, category, message string
			status                         int
		}{
			{"no token", "", "authentication", "Invalid token.", 401},
			{"token without user:read", readerTok.AccessToken, "access", "The token lacks the scope user:read.", 403},
			{"tampered token", tampered, "authentication", "Invalid token.", 401},
			{"not a JWT", "abc", "authentication", "Invalid token.", 401},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := mustSend(t, s, http.MethodGet, "/api/v0/users/1001", tc.token, "")
				if r.status != tc.status || errorMessage(t, r.body, tc.category) != tc.message {
					t.Fatalf("got %d %s", r.status, r.body)
				}
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
				}
			})
		}
	})

	t.Run("gateway root answers with a page linking the API document", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/", "", "")
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "/api/docs") {
			t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
		}
	})

	t.Run("paths outside the API are a JSON 404", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/etc/passwd", "", "")
		if r.status != 404 || errorMessage(t, r.body, "resource") == "" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
