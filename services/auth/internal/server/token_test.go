package server_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestClientCredentials(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	tokenURL := s.URL + "/api/oauth/token"
	v := validator(t, s)

	t.Run("both auth styles give a Bearer token that libs/tokenauth accepts", func(t *testing.T) {
		for name, style := range map[string]oauth2.AuthStyle{"basic": oauth2.AuthStyleInHeader, "form": oauth2.AuthStyleInParams} {
			cc := clientcredentials.Config{ClientID: authtest.ServiceID, ClientSecret: authtest.ServiceSecret, TokenURL: tokenURL, AuthStyle: style, Scopes: []string{"user:read"}}
			tok, err := cc.Token(bg())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if tok.TokenType != "Bearer" || tok.RefreshToken != "" || tok.Extra("expires_in").(float64) != 3600 || tok.Extra("scope") != "user:read" {
				t.Fatalf("%s: %+v", name, tok)
			}
			claims, err := v.Validate(bg(), tok.AccessToken)
			if err != nil {
				t.Fatalf("%s: tokenauth rejects the token: %v", name, err)
			}
			if claims.Subject != "client:501" || claims.ClientID != "501" || !claims.HasScope("user:read") || claims.UserID != 0 {
				t.Fatalf("%s: claims %+v", name, claims)
			}
		}
	})

	t.Run("response is exactly the contract's, with Cache-Control no-store", func(t *testing.T) {
		status, h, body := post(t, tokenURL, form, "grant_type=client_credentials&scope=volunteer:read", authtest.ServiceID, authtest.ServiceSecret)
		m := decode(t, body)
		if status != 200 || h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %v %s", status, h, body)
		}
		if len(m) != 4 || m["token_type"] != "Bearer" || m["expires_in"] != float64(3600) || m["scope"] != "volunteer:read" || m["access_token"] == "" {
			t.Fatalf("body %s", body)
		}
	})

	t.Run("omitted scope means every approved scope", func(t *testing.T) {
		_, _, body := post(t, tokenURL, form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret)
		if got := decode(t, body)["scope"]; got != "registration:read user:read user:roles:update volunteer:read webhook:manage" {
			t.Fatalf("scope %v", got)
		}
	})

	t.Run("repeated scope fields mean all of them", func(t *testing.T) {
		_, _, body := post(t, tokenURL, form, "grant_type=client_credentials&scope=user:read&scope=registration:read", authtest.ServiceID, authtest.ServiceSecret)
		if got := decode(t, body)["scope"]; got != "registration:read user:read" {
			t.Fatalf("scope %v", got)
		}
	})

	t.Run("a JSON body works, with scope as string or array and client_id as a number", func(t *testing.T) {
		for _, body := range []string{
			`{"grant_type":"client_credentials","scope":"user:read","client_id":"501","client_secret":"` + authtest.ServiceSecret + `"}`,
			`{"grant_type":"client_credentials","scope":["user:read"],"client_id":501,"client_secret":"` + authtest.ServiceSecret + `"}`,
		} {
			status, _, b := post(t, tokenURL, "application/json", body)
			if status != 200 || decode(t, b)["scope"] != "user:read" {
				t.Fatalf("%d %s", status, b)
			}
		}
		status, _, b := post(t, tokenURL, "application/json", `{"grant_type":"client_credentials"}`, authtest.ServiceID, authtest.ServiceSecret)
		if status != 200 {
			t.Fatalf("JSON with Basic: %d %s", status, b)
		}
	})

	refusals := []struct {
		name, body, ct, id, secret, code string
		status                           int
	}{
		{"wrong secret", "grant_type=client_credentials", form, authtest.ServiceID, authtest.ServiceSecret + "x", "invalid_client", 401},
		{"unknown client", "grant_type=client_credentials", form, "999", authtest.ServiceSecret, "invalid_client", 401},
		{"malformed client id", "grant_type=client_credentials", form, "abc", authtest.ServiceSecret, "invalid_client", 401},
		{"no credentials", "grant_type=client_credentials", form, "", "", "invalid_client", 401},
		{"unapproved scope", "grant_type=client_credentials&scope=user:read", form, authtest.ReaderID, authtest.ReaderSecret, "invalid_scope", 400},
		{"OBO-only scope", "grant_type=client_credentials&scope=pii:basic", form, authtest.ServiceID, authtest.ServiceSecret, "invalid_scope", 400},
		{"unknown scope", "grant_type=client_credentials&scope=user:write", form, authtest.ServiceID, authtest.ServiceSecret, "invalid_scope", 400},
		{"OBO client", "grant_type=client_credentials&scope=pii:basic", form, authtest.BadgeID, authtest.BadgeSecret, "unauthorized_client", 400},
		{"password grant", "grant_type=password&username=a&password=b", form, authtest.ServiceID, authtest.ServiceSecret, "unsupported_grant_type", 400},
		{"no grant type", "scope=user:read", form, authtest.ServiceID, authtest.ServiceSecret, "invalid_request", 400},
		{"repeated grant type", "grant_type=client_credentials&grant_type=client_credentials", form, authtest.ServiceID, authtest.ServiceSecret, "invalid_request", 400},
		{"malformed JSON", `{"grant_type":`, "application/json", authtest.ServiceID, authtest.ServiceSecret, "invalid_request", 400},
		{"JSON with a duplicate key", `{"grant_type":"client_credentials","grant_type":"x"}`, "application/json", authtest.ServiceID, authtest.ServiceSecret, "invalid_request", 400},
		{"XML body", `<x/>`, "application/xml", authtest.ServiceID, authtest.ServiceSecret, "invalid_request", 415},
	}
	for _, tc := range refusals {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			var status int
			var h http.Header
			var body []byte
			if tc.id != "" {
				status, h, body = post(t, tokenURL, tc.ct, tc.body, tc.id, tc.secret)
			} else {
				status, h, body = post(t, tokenURL, tc.ct, tc.body)
			}
			m := decode(t, body)
			if status != tc.status || m["error"] != tc.code || m["error_description"] == "" {
				t.Fatalf("got %d %s", status, body)
			}
			if !strings.HasPrefix(h.Get("Content-Type"), "application/json") || h.Get("Cache-Control") != "no-store" {
				t.Fatalf("headers %v", h)
			}
			if tc.code == "invalid_client" && h.Get("WWW-Authenticate") == "" {
				t.Fatal("invalid_client without WWW-Authenticate")
			}
		})
	}

	t.Run("secret in the body and HTTP Basic together is invalid_request", func(t *testing.T) {
		status, _, body := post(t, tokenURL, form, "grant_type=client_credentials&client_secret=x", authtest.ServiceID, authtest.ServiceSecret)
		if status != 400 || decode(t, body)["error"] != "invalid_request" {
			t.Fatalf("%d %s", status, body)
		}
	})

	t.Run("golang.org/x/oauth2 reports errors as RetrieveError", func(t *testing.T) {
		cc := clientcredentials.Config{ClientID: authtest.ReaderID, ClientSecret: authtest.ReaderSecret, TokenURL: tokenURL, Scopes: []string{"user:read"}}
		_, err := cc.Token(bg())
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_scope" {
			t.Fatalf("%v", err)
		}
	})

	t.Run("a tampered token is refused by tokenauth", func(t *testing.T) {
		_, _, body := post(t, tokenURL, form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret)
		tok := decode(t, body)["access_token"].(string)
		tampered := tok[:len(tok)-5] + strings.Map(func(r rune) rune {
			if r == 'A' {
				return 'B'
			}
			return 'A'
		}, tok[len(tok)-5:])
		if _, err := v.Validate(bg(), tampered); !errors.Is(err, tokenauth.ErrInvalid) {
			t.Fatalf("tampered token: %v", err)
		}
	})
}

func TestMetadataAndJWKS(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	for _, base := range []string{s.URL, s.InternalURL} {
		resp, err := http.Get(base + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("JWKS on %s: %d", base, resp.StatusCode)
		}
	}
	t.Run("JWKS publishes public keys only", func(t *testing.T) {
		_, body := getValidated(t, s.URL+"/.well-known/jwks.json")
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := jsonUnmarshal(body, &set); err != nil || len(set.Keys) != 2 {
			t.Fatalf("%s", body)
		}
		kty := map[string]string{"ES256": "EC", "RS256": "RSA"}
		for _, k := range set.Keys {
			alg, _ := k["alg"].(string)
			if kty[alg] == "" || k["kty"] != kty[alg] || k["use"] != "sig" || k["kid"] == "" || k["d"] != nil || k["p"] != nil {
				t.Fatalf("key %v", k)
			}
			delete(kty, alg)
		}
	})
	t.Run("RFC 8414 metadata lists every endpoint", func(t *testing.T) {
		_, body := getValidated(t, s.URL+"/.well-known/oauth-authorization-server")
		m := decode(t, body)
		want := map[string]string{"issuer": s.URL, "token_endpoint": s.URL + "/api/oauth/token", "authorization_endpoint": s.URL + "/oauth/authorize",
			"revocation_endpoint": s.URL + "/api/oauth/revoke", "introspection_endpoint": s.URL + "/api/oauth/introspect", "jwks_uri": s.URL + "/.well-known/jwks.json"}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s = %v, want %s", k, m[k], v)
			}
		}
	})

}
