package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestOIDCRelyingPartyGoOIDC signs a user in through the gateway with a
// relying party no one here wrote: github.com/coreos/go-oidc/v3 with
// golang.org/x/oauth2, the person acting in headless Chromium. It verifies
// the ID token (signature from the JWKS, iss, aud, exp), the nonce and
// at_hash, and reads UserInfo.
func TestOIDCRelyingPartyGoOIDC(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)
	bg := context.Background()

	provider, cfg, verifier := goOIDCWiki(t, gw)
	pkce, nonce := oauth2.GenerateVerifier(), "e2e-nonce-"+oauth2.GenerateVerifier()[:16]

	var consentText string
	run(t, ctx,
		toConsent(cfg.AuthCodeURL("oidc-state", oauth2.S256ChallengeOption(pkce), oidc.Nonce(nonce)), authAlice, authAlicePass),
		chromedp.Text(`main`, &consentText, chromedp.ByQuery),
	)
	t.Run("the consent page says in words what signing in gives the app", func(t *testing.T) {
		for _, want := range []string{"Convention Wiki", "Sign you in to the app", "your name, username", "email address and whether it is verified",
			"phone number", "postal address"} {
			if !strings.Contains(consentText, want) {
				t.Errorf("consent page lacks %q:\n%s", want, consentText)
			}
		}
	})
	run(t, ctx, authorizeApp())
	q := cb.wait(t)
	if q.Get("state") != "oidc-state" || q.Get("iss") != gw || q.Get("code") == "" {
		t.Fatalf("callback %v", q)
	}
	tok, err := cfg.Exchange(bg, q.Get("code"), oauth2.VerifierOption(pkce))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(bg, raw)
	if err != nil {
		t.Fatalf("go-oidc refuses the ID token: %v", err)
	}
	t.Run("the ID token: RS256 as the app is registered; signature, issuer, audience, nonce, at_hash, subject", func(t *testing.T) {
		if idt.Issuer != gw || idt.Nonce != nonce || idt.Subject != "1001" {
			t.Fatalf("%+v", idt)
		}
		header, _, _ := strings.Cut(raw, ".")
		if h, err := base64.RawURLEncoding.DecodeString(header); err != nil || !strings.Contains(string(h), `"alg":"RS256"`) {
			t.Fatalf("header %s %v", h, err)
		}
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("oidcc-userinfo-get: go-oidc reads UserInfo through the gateway", func(t *testing.T) {
		info, err := provider.UserInfo(bg, oauth2.StaticTokenSource(tok))
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]any
		if err := info.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if info.Subject != idt.Subject || info.Email != "alice@example.org" || claims["preferred_username"] != "alice" || claims["address"] == nil {
			t.Fatalf("%+v %v", info, claims)
		}
		// updated_at: when alice's record last changed (the fixture's import), in seconds.
		if at, ok := claims["updated_at"].(float64); !ok || at < 1.7e9 || at > float64(time.Now().Unix()) {
			t.Fatalf("updated_at %v", claims["updated_at"])
		}
	})
	t.Run("oidcc-userinfo-post-header: POST with the bearer token in the header", func(t *testing.T) {
		r := mustSend(t, s, http.MethodPost, "/api/users/userinfo", tok.AccessToken, "")
		var m map[string]any
		if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil || m["sub"] != "1001" || m["email"] != "alice@example.org" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("UserInfo with a token of an app written for the real API: 403 insufficient_scope", func(t *testing.T) {
		oauthTok := userToken(t, gw, authApp(gw, authBadgeID, authBadgeSecret, "pii:basic"), authBob, authBobPass)
		r := mustSend(t, s, http.MethodGet, "/api/users/userinfo", oauthTok.AccessToken, "")
		if h := r.header.Get("WWW-Authenticate"); r.status != 403 || !strings.Contains(h, `error="insufficient_scope"`) {
			t.Fatalf("%d %q", r.status, h)
		}
	})
}

// goOIDCWiki is go-oidc set up, by discovery through the gateway at gw, as
// the demo wiki (app 520): the provider, the app's OAuth configuration asking
// every OpenID scope, and its ID token verifier.
func goOIDCWiki(t *testing.T, gw string) (*oidc.Provider, *oauth2.Config, *oidc.IDTokenVerifier) {
	t.Helper()
	provider, err := oidc.NewProvider(context.Background(), gw)
	if err != nil {
		t.Fatalf("discovery through the gateway: %v", err)
	}
	cfg := &oauth2.Config{ClientID: oidcWikiID, ClientSecret: oidcWikiSecret, RedirectURL: authRedirectURI, Endpoint: provider.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "profile", "email", "phone", "address"}}
	return provider, cfg, provider.Verifier(&oidc.Config{ClientID: oidcWikiID})
}
