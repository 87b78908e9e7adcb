package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// TestOIDCC_AuthenticationRequest covers prompt, max_age, id_token_hint,
// login_hint and ui_locales (Core §3.1.2.1), as the Basic OP plan's
// oidcc-prompt-*, oidcc-max-age-* and oidcc-id-token-hint modules do.
func TestOIDCC_AuthenticationRequest(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := newRP(t, s, authtest.WikiID, authtest.WikiSecret, "openid", "profile")
	var verifier string // of the last authURL
	authURL := func(extra url.Values) string {
		verifier = oauth2.GenerateVerifier()
		u := wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier))
		if len(extra) > 0 {
			u += "&" + extra.Encode()
		}
		return u
	}
	isLoginPage := func(p page) bool { return p.status == http.StatusOK && strings.Contains(p.body, `name="password"`) }

	t.Run("oidcc-prompt-none-not-logged-in: login_required at the app, no page", func(t *testing.T) {
		q := callback(t, newBrowser(t).get(authURL(url.Values{"prompt": {"none"}})))
		if q.Get("error") != "login_required" || q.Get("state") != "st" || q.Get("iss") != s.URL || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})

	b := newBrowser(t)
	_, first := wiki.signIn(t, s, b, authtest.Alice, "n1")
	var firstClaims map[string]any
	_ = first.Claims(&firstClaims)

	t.Run("oidcc-prompt-none-logged-in: a code without a page", func(t *testing.T) {
		if q := callback(t, b.get(authURL(url.Values{"prompt": {"none"}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("prompt=none for an app not yet authorized: consent_required", func(t *testing.T) {
		forum := newRP(t, s, authtest.ForumID, authtest.ForumSecret, "openid")
		q := callback(t, b.get(forum.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none"))))
		if q.Get("error") != "consent_required" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("prompt=consent shows the consent page though consent was given", func(t *testing.T) {
		if p := b.get(authURL(url.Values{"prompt": {"consent"}})); p.status != 200 || !strings.Contains(p.body, `value="authorize"`) {
			t.Fatalf("%d %s", p.status, p.body)
		}
	})
	t.Run("oidcc-id-token-hint: the signed-in user's ID token as hint with prompt=none gives a code", func(t *testing.T) {
		hint := firstRaw(t, wiki, s, b)
		if q := callback(t, b.get(authURL(url.Values{"prompt": {"none"}, "id_token_hint": {hint}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
		t.Run("another user's hint with prompt=none is login_required", func(t *testing.T) {
			bob := newBrowser(t)
			tok, _ := wiki.signIn(t, s, bob, authtest.Bob, "nb")
			q := callback(t, b.get(authURL(url.Values{"prompt": {"none"}, "id_token_hint": {tok.Extra("id_token").(string)}})))
			if q.Get("error") != "login_required" {
				t.Fatalf("%v", q)
			}
		})
		t.Run("a hint this server did not sign is invalid_request", func(t *testing.T) {
			if q := callback(t, b.get(authURL(url.Values{"id_token_hint": {hint[:len(hint)-4] + "AAAA"}}))); q.Get("error") != "invalid_request" {
				t.Fatalf("%v", q)
			}
		})
	})
	t.Run("oidcc-prompt-login: the login page though signed in; then a new session", func(t *testing.T) {
		p := b.get(authURL(url.Values{"prompt": {"login"}}))
		if !isLoginPage(p) {
			t.Fatalf("%d %s", p.status, p.body)
		}
		p = b.login(s.URL, p, authtest.Alice.Username, authtest.Alice.Password)
		q := callback(t, b.follow(s.URL, p))
		tok := mustExchange(t, wiki.cfg, q.Get("code"), verifier)
		if c := claimsOf(t, tok.Extra("id_token").(string)); c["sid"] == firstClaims["sid"] {
			t.Fatalf("the same session after prompt=login: %v", c)
		}
	})
	t.Run("oidcc-max-age-1: a session older than max_age signs in again; auth_time is the new sign-in", func(t *testing.T) {
		time.Sleep(1100 * time.Millisecond) // the session must become older than max_age=1: real time has to pass
		p := b.get(authURL(url.Values{"max_age": {"1"}}))
		if !isLoginPage(p) {
			t.Fatalf("%d %s", p.status, p.body)
		}
		before := time.Now().Unix()
		p = b.login(s.URL, p, authtest.Alice.Username, authtest.Alice.Password)
		q := callback(t, b.follow(s.URL, p))
		tok := mustExchange(t, wiki.cfg, q.Get("code"), verifier)
		if at := claimsOf(t, tok.Extra("id_token").(string))["auth_time"].(float64); int64(at) < before-1 {
			t.Fatalf("auth_time %v before the sign-in at %d", at, before)
		}
	})
	t.Run("oidcc-max-age-10000: a fresh session needs no sign-in", func(t *testing.T) {
		if q := callback(t, b.get(authURL(url.Values{"max_age": {"10000"}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("login_hint fills the username; ui_locales is ignored", func(t *testing.T) {
		p := newBrowser(t).get(authURL(url.Values{"login_hint": {"alice@example.org"}, "ui_locales": {"fr-CA fr"}}))
		if !isLoginPage(p) || !strings.Contains(p.body, `value="alice@example.org"`) {
			t.Fatalf("%d %s", p.status, p.body)
		}
	})
	t.Run("malformed prompt or max_age is invalid_request at the app", func(t *testing.T) {
		for _, extra := range []url.Values{{"prompt": {"none login"}}, {"prompt": {"sometimes"}}, {"max_age": {"-1"}}, {"max_age": {"soon"}}} {
			if q := callback(t, b.get(authURL(extra))); q.Get("error") != "invalid_request" || q.Get("code") != "" {
				t.Errorf("%v: %v", extra, q)
			}
		}
	})
}

// firstRaw signs in again silently and returns the ID token (a hint).
func firstRaw(t *testing.T, r rp, s *authtest.Server, b *browser) string {
	t.Helper()
	tok, _ := r.signIn(t, s, b, authtest.Alice, "hint")
	return tok.Extra("id_token").(string)
}

// TestOIDCC_PromptNoneNeedsInteraction: prompt=none answers
// interaction_required when the page it may not show would do more than ask
// consent (OpenID Connect Core §3.1.2.6; decision 0108).
func TestOIDCC_PromptNoneNeedsInteraction(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "user:read")
	b := newBrowser(t)
	consentPage := b.follow(s.URL, b.login(s.URL, b.get(staff.AuthCodeURL("st")), authtest.Bob.Username, authtest.Bob.Password))
	silent := staff.AuthCodeURL("st", oauth2.SetAuthURLParam("prompt", "none"))

	t.Run("a user lacking a sensitive scope asked, the app not yet authorized: interaction_required, not consent_required", func(t *testing.T) {
		q := callback(t, b.get(silent))
		if q.Get("error") != "interaction_required" || q.Get("code") != "" || q.Get("state") != "st" || q.Get("iss") != s.URL {
			t.Fatalf("%v", q)
		}
	})
	t.Run("once the user granted the rest, the same request gets a code without a page, for the rest", func(t *testing.T) {
		if q := callback(t, b.decide(s.URL, consentPage, "authorize")); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
		q := callback(t, b.get(silent))
		if tok := mustExchange(t, staff, q.Get("code"), ""); tok.Extra("scope") != "pii:basic" {
			t.Fatalf("%v %+v", q, tok)
		}
	})
}
