package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// TestOIDCC_RPInitiatedLogout covers OpenID Connect RP-Initiated Logout
// 1.0 at the end_session_endpoint (the Basic OP plan's logout modules
// belong to the RP-initiated logout plan, oidcc-rp-initiated-logout-*).
func TestOIDCC_RPInitiatedLogout(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := newRP(t, s, authtest.WikiID, authtest.WikiSecret, "openid")
	b := newBrowser(t)
	tok, _ := wiki.signIn(t, s, b, authtest.Alice, "n")
	hint := tok.Extra("id_token").(string)
	signedIn := func(t *testing.T) bool {
		t.Helper()
		p := b.get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none")))
		return callback(t, p).Get("code") != ""
	}
	logoutURL := func(v url.Values) string { return s.URL + "/oauth/logout?" + v.Encode() }

	t.Run("an unregistered post_logout_redirect_uri is the invalid request page; the session stays", func(t *testing.T) {
		p := b.get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.RedirectURI}, "state": {"s1"}}))
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "post_logout_redirect_uri") || !signedIn(t) {
			t.Fatalf("%d %s", p.status, p.body)
		}
	})
	t.Run("an id_token_hint this server did not sign is the invalid request page", func(t *testing.T) {
		p := b.get(logoutURL(url.Values{"id_token_hint": {hint + "x"}, "post_logout_redirect_uri": {authtest.PostLogoutURI}}))
		if p.status != http.StatusBadRequest || !signedIn(t) {
			t.Fatalf("%d %s", p.status, p.body)
		}
	})
	t.Run("a hint and a client_id of different apps are refused", func(t *testing.T) {
		p := b.get(logoutURL(url.Values{"id_token_hint": {hint}, "client_id": {authtest.ForumID}, "post_logout_redirect_uri": {authtest.PostLogoutURI}}))
		if p.status != http.StatusBadRequest || !signedIn(t) {
			t.Fatalf("%d %s", p.status, p.body)
		}
	})
	t.Run("a GET asks to confirm and ends nothing; the confirmation signs out and returns to the app with state", func(t *testing.T) {
		p := b.get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s2"}}))
		if p.status != http.StatusOK || !strings.Contains(p.body, "Sign out?") || !signedIn(t) {
			t.Fatalf("%d %s", p.status, p.body)
		}
		p = b.postForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {field(t, csrfRe, p.body)}, "client_id": {authtest.WikiID},
			"post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s2"}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != authtest.PostLogoutURI+"?state=s2" {
			t.Fatalf("%d %v", p.status, p.header)
		}
		q := callback(t, b.get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none"))))
		if q.Get("error") != "login_required" {
			t.Fatalf("still signed in: %v", q)
		}
	})
	t.Run("without a session the browser goes back at once, with state; an expired hint is still a hint", func(t *testing.T) {
		p := newBrowser(t).get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s3"}}))
		if p.status != http.StatusFound || p.header.Get("Location") != authtest.PostLogoutURI+"?state=s3" {
			t.Fatalf("%d %v", p.status, p.header)
		}
	})
	t.Run("a forged confirmation with an unregistered URI redirects nowhere", func(t *testing.T) {
		b2 := newBrowser(t)
		wiki.signIn(t, s, b2, authtest.Alice, "n2")
		p := b2.get(logoutURL(url.Values{"client_id": {authtest.WikiID}}))
		p = b2.postForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {field(t, csrfRe, p.body)}, "client_id": {authtest.WikiID},
			"post_logout_redirect_uri": {"https://evil.example/"}})
		if p.status != http.StatusBadRequest || p.header.Get("Location") != "" {
			t.Fatalf("%d %v", p.status, p.header)
		}
	})
}
