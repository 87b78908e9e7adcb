package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestAuthorizationCodeFlowInChromium signs alice in through the gateway
// in headless Chromium for the demo badge app: login, consent, the code
// redeemed with PKCE, the current user read; refresh and reuse detection;
// remembered consent; denial; the warning on sensitive scopes and a user
// asked only for what he may grant; a redirect URI that does not match.
func TestAuthorizationCodeFlowInChromium(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)
	badge := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic", "pii:email")
	var tok *oauth2.Token

	t.Run("login, consent, code, exchange with PKCE, current user", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		var consentText string
		run(t, ctx,
			toConsent(badge.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass),
			chromedp.Text(`main`, &consentText, chromedp.ByQuery),
		)
		for _, want := range []string{"Con Badge Printer", "Prints badges for you", "See your email address", "Authorize", "Deny"} {
			if !strings.Contains(consentText, want) {
				t.Fatalf("consent page lacks %q:\n%s", want, consentText)
			}
		}
		if strings.Contains(consentText, "administrative permission") {
			t.Fatal("non-sensitive scopes shown as administrative")
		}
		run(t, ctx, authorizeApp())
		tok = cb.redeem(t, badge, "state-1", oauth2.VerifierOption(verifier))
		if tok.RefreshToken == "" || tok.Extra("scope") != "pii:basic pii:email" {
			t.Fatalf("%+v", tok)
		}
		r := mustSend(t, s, http.MethodGet, "/api/users/current", tok.AccessToken, "")
		var me map[string]any
		_ = json.Unmarshal([]byte(r.body), &me)
		if r.status != 200 || me["username"] != "alice" || me["email"] != "alice@example.org" {
			t.Fatalf("GET /api/users/current: %d %s", r.status, r.body)
		}
	})

	t.Run("refresh, then reuse detection", func(t *testing.T) {
		expired := &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
		next, err := badge.TokenSource(context.Background(), expired).Token()
		if err != nil || next.RefreshToken == tok.RefreshToken {
			t.Fatalf("refresh: %v", err)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/users/current", next.AccessToken, ""); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if _, err := badge.TokenSource(context.Background(), expired).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("reuse of a rotated refresh token: %v", err)
		}
		if _, err := badge.TokenSource(context.Background(), &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the family was not revoked: %v", err)
		}
	})

	t.Run("remembered consent skips the page", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(authApp(gw, authBadgeID, authBadgeSecret, "pii:basic").AuthCodeURL("state-2")), backInTheApp())
		if q := cb.wait(t); q.Get("code") == "" || q.Get("state") != "state-2" {
			t.Fatalf("%v", q)
		}
	})

	t.Run("deny", func(t *testing.T) {
		run(t, ctx,
			chromedp.Navigate(authApp(gw, authBadgeID, authBadgeSecret, "pii:basic", "pii:phone").AuthCodeURL("state-3")),
			chromedp.WaitVisible(`button[value=deny]`, chromedp.ByQuery),
			chromedp.Click(`button[value=deny]`, chromedp.ByQuery),
			backInTheApp())
		if q := cb.wait(t); q.Get("error") != "access_denied" || q.Get("state") != "state-3" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})

	// staffGets redeems the staff app's code for state: the token must carry
	// scope, and with it GET path must answer status (200 with user:read,
	// 403 without).
	staffGets := func(t *testing.T, staff *oauth2.Config, state, scope, path string, status int) {
		t.Helper()
		tok := cb.redeem(t, staff, state)
		if tok.Extra("scope") != scope {
			t.Fatalf("%+v, want scope %q", tok, scope)
		}
		if r := mustSend(t, s, http.MethodGet, path, tok.AccessToken, ""); r.status != status {
			t.Fatalf("GET %s with scope %q: %d, want %d", path, scope, r.status, status)
		}
	}

	t.Run("sensitive-scope warning", func(t *testing.T) {
		staff := authApp(gw, authStaffID, authStaffSecret, "pii:basic", "user:read")
		var warning, buttonClass string
		var ok bool
		run(t, ctx,
			chromedp.Navigate(staff.AuthCodeURL("state-4")),
			chromedp.WaitVisible(`li.sensitive`, chromedp.ByQuery),
			chromedp.Text(`li.sensitive`, &warning, chromedp.ByQuery),
			chromedp.AttributeValue(authorizeButton, "class", &buttonClass, &ok, chromedp.ByQuery),
		)
		if !strings.Contains(warning, "This is an administrative permission") || buttonClass != "danger" {
			t.Fatalf("warning %q, Authorize button class %q", warning, buttonClass)
		}
		var color string
		run(t, ctx, chromedp.Evaluate(`getComputedStyle(document.querySelector("li.sensitive")).color`, &color))
		if !strings.HasPrefix(color, "rgb(1") && !strings.HasPrefix(color, "rgb(2") {
			t.Fatalf("sensitive scope color %s", color)
		}
		run(t, ctx, authorizeApp())
		staffGets(t, staff, "state-4", "pii:basic user:read", "/api/v0/users/1002", 200)
	})

	t.Run("a user lacking a sensitive scope is asked only for the rest, and the app gets the rest", func(t *testing.T) {
		staff := authApp(gw, authStaffID, authStaffSecret, "pii:basic", "user:read")
		var withheld string
		run(t, ctx,
			signOut(gw),
			chromedp.Navigate(staff.AuthCodeURL("state-5")),
			signIn(authBob, authBobPass),
			chromedp.WaitVisible(`div.withheld`, chromedp.ByQuery),
			chromedp.Text(`div.withheld`, &withheld, chromedp.ByQuery),
			authorizeApp(),
		)
		if !strings.Contains(withheld, "your account does not have") || !strings.Contains(withheld, "user:read") {
			t.Fatalf("withheld %q", withheld)
		}
		staffGets(t, staff, "state-5", "pii:basic", "/api/v0/users/1001", 403)
	})

	t.Run("a redirect URI mismatch does not redirect", func(t *testing.T) {
		q := url.Values{"client_id": {authBadgeID}, "response_type": {"code"}, "redirect_uri": {"http://127.0.0.1:9999/elsewhere"}, "scope": {"pii:basic"}, "state": {"s"}}
		var text, loc string
		run(t, ctx, chromedp.Navigate(gw+"/oauth/authorize?"+q.Encode()), chromedp.WaitVisible(`//h1[contains(., "Invalid request")]`, chromedp.BySearch),
			chromedp.Text(`main`, &text, chromedp.ByQuery), chromedp.Location(&loc))
		if !strings.Contains(text, "invalid request") || !strings.HasPrefix(loc, gw) {
			t.Fatalf("%s at %s", text, loc)
		}
		cb.none(t)
	})
}
