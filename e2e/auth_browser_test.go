package e2e

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// chromium starts a headless Chromium (Debian's /usr/bin/chromium) with a
// fresh profile and returns a browser context; extra adds flags.
func chromium(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exec := os.Getenv("CHROMIUM")
	if exec == "" {
		exec = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exec); err != nil {
		t.Fatalf("headless Chromium is needed (apt-get install chromium): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exec), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		// no UserDataDir: chromedp makes a fresh profile directory and removes it
		// once the browser has exited (a t.TempDir raced its last writes)
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(tctx, actions...); err != nil {
		var loc, body string
		_ = chromedp.Run(ctx, chromedp.Location(&loc), chromedp.OuterHTML("body", &body, chromedp.ByQuery))
		t.Fatalf("browser: %v\nat %s\n%s", err, loc, body)
	}
}

// signOut opens the logout page and presses its Sign out button.
func signOut(gw string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(gw + "/oauth/logout"),
		chromedp.WaitVisible(`//button[normalize-space(.)="Sign out"]`, chromedp.BySearch),
		chromedp.Click(`//button[normalize-space(.)="Sign out"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//h1[contains(., "You are signed out")]`, chromedp.BySearch),
	}
}

// signIn fills the login page.
func signIn(user, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		chromedp.SendKeys(`#username`, user, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
	}
}

func TestAuthBrowserFlow(t *testing.T) {
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
			chromedp.Navigate(badge.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier))),
			signIn(authAlice, authAlicePass),
			chromedp.WaitVisible(`button[value=authorize]`, chromedp.ByQuery),
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
		run(t, ctx, chromedp.Click(`button[value=authorize]`, chromedp.ByQuery), chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		q := cb.wait(t)
		if q.Get("state") != "state-1" || q.Get("code") == "" {
			t.Fatalf("callback %v", q)
		}
		var err error
		tok, err = badge.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		if tok.RefreshToken == "" || tok.Extra("scope") != "pii:basic pii:email" {
			t.Fatalf("%+v", tok)
		}
		status, body := authCurrentUser(t, s, tok.AccessToken)
		var me map[string]any
		_ = json.Unmarshal(body, &me)
		if status != 200 || me["username"] != "alice" || me["email"] != "alice@example.org" {
			t.Fatalf("GET /api/users/current: %d %s", status, body)
		}
	})

	t.Run("refresh, then reuse detection", func(t *testing.T) {
		expired := &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
		next, err := badge.TokenSource(context.Background(), expired).Token()
		if err != nil || next.RefreshToken == tok.RefreshToken {
			t.Fatalf("refresh: %v", err)
		}
		if status, body := authCurrentUser(t, s, next.AccessToken); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		if _, err := badge.TokenSource(context.Background(), expired).Token(); authErrorCode(err) != "invalid_grant" {
			t.Fatalf("reuse of a rotated refresh token: %v", err)
		}
		if _, err := badge.TokenSource(context.Background(), &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); authErrorCode(err) != "invalid_grant" {
			t.Fatalf("the family was not revoked: %v", err)
		}
	})

	t.Run("remembered consent skips the page", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(authApp(gw, authBadgeID, authBadgeSecret, "pii:basic").AuthCodeURL("state-2")), chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		if q := cb.wait(t); q.Get("code") == "" || q.Get("state") != "state-2" {
			t.Fatalf("%v", q)
		}
	})

	t.Run("deny", func(t *testing.T) {
		run(t, ctx,
			chromedp.Navigate(authApp(gw, authBadgeID, authBadgeSecret, "pii:basic", "pii:phone").AuthCodeURL("state-3")),
			chromedp.WaitVisible(`button[value=deny]`, chromedp.ByQuery),
			chromedp.Click(`button[value=deny]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		if q := cb.wait(t); q.Get("error") != "access_denied" || q.Get("state") != "state-3" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})

	t.Run("sensitive-scope warning", func(t *testing.T) {
		staff := authApp(gw, authStaffID, authStaffSecret, "pii:basic", "user:read")
		var warning, buttonClass string
		var ok bool
		run(t, ctx,
			chromedp.Navigate(staff.AuthCodeURL("state-4")),
			chromedp.WaitVisible(`li.sensitive`, chromedp.ByQuery),
			chromedp.Text(`li.sensitive`, &warning, chromedp.ByQuery),
			chromedp.AttributeValue(`button[value=authorize]`, "class", &buttonClass, &ok, chromedp.ByQuery),
		)
		if !strings.Contains(warning, "This is an administrative permission") || buttonClass != "danger" {
			t.Fatalf("warning %q, Authorize button class %q", warning, buttonClass)
		}
		var color string
		run(t, ctx, chromedp.Evaluate(`getComputedStyle(document.querySelector("li.sensitive")).color`, &color))
		if !strings.HasPrefix(color, "rgb(1") && !strings.HasPrefix(color, "rgb(2") {
			t.Fatalf("sensitive scope color %s", color)
		}
		run(t, ctx, chromedp.Click(`button[value=authorize]`, chromedp.ByQuery), chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		q := cb.wait(t)
		st, err := staff.Exchange(context.Background(), q.Get("code"))
		if err != nil || st.Extra("scope") != "pii:basic user:read" {
			t.Fatalf("%v %+v", err, st)
		}
		req := apiRequest(t, s, "/api/v0/users/1002", st.AccessToken)
		if req != 200 {
			t.Fatalf("an OBO token with user:read reads a user: %d", req)
		}
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
			chromedp.Click(`button[value=authorize]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery),
		)
		if !strings.Contains(withheld, "your account does not have") || !strings.Contains(withheld, "user:read") {
			t.Fatalf("withheld %q", withheld)
		}
		q := cb.wait(t)
		tok, err := staff.Exchange(context.Background(), q.Get("code"))
		if err != nil || tok.Extra("scope") != "pii:basic" {
			t.Fatalf("%v %+v", err, tok)
		}
		if status := apiRequest(t, s, "/api/v0/users/1001", tok.AccessToken); status != 403 {
			t.Fatalf("a token without user:read reads a user: %d", status)
		}
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

// TestLogoutThroughTheGatewayNeedsConfirmation: a signed-in browser's session
// survives a GET of /oauth/logout sent from another origin (an image) or
// followed as a link, and ends only with the confirmed POST of the Sign out
// button, which then returns to the app.
func TestLogoutThroughTheGatewayNeedsConfirmation(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)
	run(t, ctx, chromedp.Navigate(gw+"/oauth/login?next=/oauth/apps"), signIn(authAlice, authAlicePass),
		chromedp.WaitVisible(`//h1[contains(., "Your authorized apps")]`, chromedp.BySearch))
	// Another site's page (another origin of the same site, so the
	// SameSite=Lax session cookie goes along) embeds the logout URL.
	logout := gw + "/oauth/logout?" + url.Values{"next": {authRedirectURI}, "client_id": {authBadgeID}}.Encode()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>elsewhere</title><img src="`+html.EscapeString(logout)+
			`" onload="document.title='fetched'" onerror="document.title='fetched'">`)
	}))
	defer other.Close()
	signedIn := chromedp.Tasks{chromedp.Navigate(gw + "/oauth/apps"), chromedp.WaitVisible(`//h1[contains(., "Your authorized apps")]`, chromedp.BySearch)}
	run(t, ctx, signedIn)
	run(t, ctx, chromedp.Navigate(other.URL), chromedp.Poll(`document.title === "fetched"`, nil))
	run(t, ctx, signedIn)
	// Followed as a link (a top-level GET): the confirmation page, still signed in.
	run(t, ctx, chromedp.Navigate(logout), chromedp.WaitVisible(`//button[normalize-space(.)="Sign out"]`, chromedp.BySearch))
	cb.none(t)
	run(t, ctx, signedIn)
	// Confirmed: signed out, and back at the app.
	run(t, ctx, chromedp.Navigate(logout), chromedp.WaitVisible(`//button[normalize-space(.)="Sign out"]`, chromedp.BySearch),
		chromedp.Click(`//button[normalize-space(.)="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
	cb.wait(t)
	run(t, ctx, chromedp.Navigate(gw+"/oauth/apps"), chromedp.WaitVisible(`#username`, chromedp.ByQuery))
}
