package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestTicketScopesInConsent: admin:ticket:read and admin:ticket:scan are
// sensitive OBO scopes. In Chromium, a user holding the permissions (alice,
// admin) sees them marked administrative and the app gets them; a user
// without them (bob) is asked only for the rest, and the app's authorization
// still works with what he could grant (decision 0097, RFC 6749 §3.3).
func TestTicketScopesInConsent(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)
	app := authApp(gw, companionID, companionSecret, "pii:basic", "admin:ticket:read", "admin:ticket:scan")

	// authorize signs user in (the browser has no session: each case signs
	// out at its end) and authorizes app after inspect.
	authorize := func(t *testing.T, user, password, state string, inspect ...chromedp.Action) *oauth2.Token {
		t.Helper()
		verifier := oauth2.GenerateVerifier()
		actions := []chromedp.Action{toConsent(app.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), user, password)}
		actions = append(actions, inspect...)
		actions = append(actions, authorizeApp(), signOut(gw))
		run(t, ctx, actions...)
		return cb.redeem(t, app, state, oauth2.VerifierOption(verifier))
	}

	t.Run("a user holding the permissions sees them as administrative and grants them", func(t *testing.T) {
		var sensitive []string
		var buttonClass string
		var ok bool
		tok := authorize(t, authAlice, authAlicePass, "tickets-alice",
			chromedp.Evaluate(`[...document.querySelectorAll("li.sensitive")].map(li => li.innerText)`, &sensitive),
			chromedp.AttributeValue(authorizeButton, "class", &buttonClass, &ok, chromedp.ByQuery))
		if len(sensitive) != 2 || !strings.Contains(strings.Join(sensitive, " "), "admin:ticket:scan") ||
			!strings.Contains(sensitive[0], "This is an administrative permission") || buttonClass != "danger" {
			t.Fatalf("sensitive items %q, Authorize class %q", sensitive, buttonClass)
		}
		if got := tok.Extra("scope"); got != "admin:ticket:read admin:ticket:scan pii:basic" {
			t.Fatalf("granted %v", got)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/users/current", tok.AccessToken, ""); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("a user without them is asked for the rest, and the authorization works", func(t *testing.T) {
		var withheld string
		var sensitive int
		tok := authorize(t, authBob, authBobPass, "tickets-bob",
			chromedp.Text(`div.withheld`, &withheld, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll("li.sensitive").length`, &sensitive))
		if !strings.Contains(withheld, "admin:ticket:read") || !strings.Contains(withheld, "admin:ticket:scan") || sensitive != 0 {
			t.Fatalf("withheld %q, %d sensitive items offered", withheld, sensitive)
		}
		if got := tok.Extra("scope"); got != "pii:basic" {
			t.Fatalf("granted %v, want pii:basic (RFC 6749 §3.3: the scope says what was granted)", got)
		}
		r := mustSend(t, s, http.MethodGet, "/api/users/current", tok.AccessToken, "")
		if r.status != 200 || !strings.Contains(r.body, `"username":"bob"`) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("the ticket scopes grant nothing yet", func(t *testing.T) {
		tok := userToken(t, gw, authApp(gw, companionID, companionSecret, "admin:ticket:read"), authAlice, authAlicePass)
		for _, path := range []string{"/api/users/current", "/api/v0/users/1001/registration", "/api/v0/users/1001/orders", "/api/v0/users/1001"} {
			if r := mustSend(t, s, http.MethodGet, path, tok.AccessToken, ""); r.status != 403 {
				t.Errorf("%s with admin:ticket:read: %d, want 403", path, r.status)
			}
		}
	})
}
