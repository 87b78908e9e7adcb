package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// exchange redeems code with golang.org/x/oauth2 (PKCE verifier when given).
func exchange(t *testing.T, cfg *oauth2.Config, code, verifier string) (*oauth2.Token, error) {
	t.Helper()
	var opts []oauth2.AuthCodeOption
	if verifier != "" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	return cfg.Exchange(bg(), code, opts...)
}

// mustExchange is exchange for a code that must be redeemed.
func mustExchange(t *testing.T, cfg *oauth2.Config, code, verifier string) *oauth2.Token {
	t.Helper()
	tok, err := exchange(t, cfg, code, verifier)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthorizationCodeFlow(t *testing.T) {
	// Client records are not cached: one subtest changes them in the database.
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"CLIENT_CACHE_TTL": "0"}})
	v := validator(t, s)
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:email")
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()

	// Login, consent, code, exchange with PKCE.
	p := b.Get(cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier)))
	if p.Status != 200 || !strings.Contains(p.Body, `name="username"`) || !strings.Contains(p.Body, `name="password"`) {
		t.Fatalf("login page: %d\n%s", p.Status, p.Body)
	}
	p = b.Login(s.URL, p, "", "alice", authtest.Alice.Password)
	if p.Status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", p.Status, p.Body)
	}
	p = b.follow(s.URL, p)
	if p.Status != 200 || !strings.Contains(p.Body, "Con Badge Printer") || !strings.Contains(p.Body, "Prints badges for you") ||
		!strings.Contains(p.Body, ">Authorize<") || !strings.Contains(p.Body, ">Deny<") || strings.Contains(p.Body, "administrative permission") {
		t.Fatalf("consent page: %d\n%s", p.Status, p.Body)
	}
	p = b.Decide(s.URL, p, "authorize")
	if p.Status != http.StatusSeeOther {
		t.Fatalf("a redirect after the consent POST is 303, got %d", p.Status)
	}
	q := callback(t, p)
	if q.Get("state") != "st-1" {
		t.Fatalf("state %v", q)
	}
	tok := mustExchange(t, cfg, q.Get("code"), verifier)
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("scope") != "pii:basic pii:email" {
		t.Fatalf("token %+v", tok)
	}
	claims, err := v.Validate(bg(), tok.AccessToken)
	if err != nil || claims.UserID != 1001 || claims.Subject != "1001" || claims.ClientID != "502" || !claims.HasScope("pii:email") {
		t.Fatalf("claims %+v %v", claims, err)
	}

	t.Run("refresh rotates the token and keeps the scopes", func(t *testing.T) {
		next, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if err != nil {
			t.Fatal(err)
		}
		if next.RefreshToken == "" || next.RefreshToken == tok.RefreshToken || next.Extra("scope") != "pii:basic pii:email" {
			t.Fatalf("%+v", next)
		}
		if _, err := v.Validate(bg(), next.AccessToken); err != nil {
			t.Fatal(err)
		}
		t.Run("presenting the rotated token is invalid_grant and revokes the family", func(t *testing.T) {
			_, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if testkit.OAuthErrorCode(err) != "invalid_grant" {
				t.Fatalf("reuse: %v", err)
			}
			_, err = cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: next.RefreshToken}).Token()
			if testkit.OAuthErrorCode(err) != "invalid_grant" {
				t.Fatalf("the newest token of a revoked family still works: %v", err)
			}
		})
	})

	t.Run("remembered consent skips the page for the same or fewer scopes", func(t *testing.T) {
		p := b.Get(oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic").AuthCodeURL("st-2"))
		if q := callback(t, p); q.Get("code") == "" || q.Get("state") != "st-2" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("more scopes ask again", func(t *testing.T) {
		p := b.Get(oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:phone").AuthCodeURL("st-3"))
		if p.Status != 200 || !strings.Contains(p.Body, `value="authorize"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("a change of the app's approved scopes asks again", func(t *testing.T) {
		if _, err := s.Pool.Exec(bg(), `UPDATE clients SET scopes = array_append(scopes, 'pii:phone') WHERE id = 502 AND NOT 'pii:phone' = ANY(scopes)`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool.Exec(bg(), `UPDATE clients SET scopes = array_remove(scopes, 'pii:address') WHERE id = 502`); err != nil {
			t.Fatal(err)
		}
		p := b.Get(oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic").AuthCodeURL("st-4"))
		if p.Status != 200 || !strings.Contains(p.Body, `value="authorize"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("deny redirects with access_denied and the state", func(t *testing.T) {
		p := b.Get(oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:phone").AuthCodeURL("st-5"))
		q := callback(t, b.Decide(s.URL, p, "deny"))
		if q.Get("error") != "access_denied" || q.Get("state") != "st-5" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
}

func TestSensitiveScopes(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "user:read")
	// signIn signs user in from a new browser at authURL and returns the
	// browser and the page that follows the login.
	signIn := func(t *testing.T, authURL string, user authtest.User) (*browser, page) {
		b := newBrowser(t)
		return b, b.follow(s.URL, b.Login(s.URL, b.Get(authURL), "", user.Username, user.Password))
	}
	// granted authorizes on the consent page p: the token says scope.
	granted := func(t *testing.T, b *browser, p page, scope string) {
		t.Helper()
		code := callback(t, b.Decide(s.URL, p, "authorize")).Get("code")
		if tok := mustExchange(t, cfg, code, ""); tok.Extra("scope") != scope {
			t.Fatalf("%+v, want scope %q", tok, scope)
		}
	}

	t.Run("the consent page marks sensitive scopes and turns Authorize red", func(t *testing.T) {
		b, p := signIn(t, cfg.AuthCodeURL("s"), authtest.Alice)
		if !strings.Contains(p.Body, `<li class="sensitive">`) || !strings.Contains(p.Body, "This is an administrative permission") ||
			!strings.Contains(p.Body, `value="authorize" class="danger"`) {
			t.Fatalf("%s", p.Body)
		}
		granted(t, b, p, "pii:basic user:read")
	})
	t.Run("the same user may authorize the app's non-sensitive scopes", func(t *testing.T) {
		_, p := signIn(t, oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic").AuthCodeURL("s"), authtest.Bob)
		if p.Status != 200 || strings.Contains(p.Body, "administrative") {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("a user lacking a sensitive scope's permission is asked for the rest; the token says what was granted", func(t *testing.T) {
		b, p := signIn(t, cfg.AuthCodeURL("s"), authtest.Bob)
		if p.Status != 200 || !strings.Contains(p.Body, `<div class="withheld" role="note">`) ||
			!strings.Contains(p.Body, `<span class="name">user:read</span></li>`) || strings.Contains(p.Body, `class="danger"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		granted(t, b, p, "pii:basic")
	})
	t.Run("a user who may grant none of the scopes asked goes back to the app with invalid_scope", func(t *testing.T) {
		_, p := signIn(t, oboConfig(s, authtest.StaffID, authtest.StaffSecret, "user:read").AuthCodeURL("only-sensitive"), authtest.Bob)
		q := callback(t, p)
		if q.Get("error") != "invalid_scope" || q.Get("code") != "" || q.Get("state") != "only-sensitive" {
			t.Fatalf("%v", q)
		}
	})
}

// exactlyOne fails t unless one of the racing requests succeeded and every
// other got invalid_grant.
func exactlyOne(t *testing.T, what string, ok int, errs []error) {
	t.Helper()
	if ok != 1 {
		t.Fatalf("%d %s succeeded: %v", ok, what, errs)
	}
	for _, err := range errs {
		if testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("loser got %v", err)
		}
	}
}

func TestConcurrentRedemptions(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	b := newBrowser(t)

	t.Run("parallel redemptions of one code: exactly one succeeds", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, b, cfg.AuthCodeURL("x", oauth2.S256ChallengeOption(verifier)), authtest.Alice)
		var mu sync.Mutex
		var won *oauth2.Token
		ok, errs := testkit.CountAtOnce(16, func() error {
			tok, err := exchange(t, cfg, code, verifier)
			if err == nil {
				mu.Lock()
				won = tok
				mu.Unlock()
			}
			return err
		})
		exactlyOne(t, "redemptions", ok, errs)
		// The replays revoked what the winning redemption issued.
		if _, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: won.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the winner's refresh token survived the replays: %v", err)
		}
	})

	t.Run("parallel refreshes of one token: exactly one succeeds", func(t *testing.T) {
		code := authorize(t, s, b, cfg.AuthCodeURL("y"), authtest.Alice)
		tok := mustExchange(t, cfg, code, "")
		ok, errs := testkit.CountAtOnce(16, func() error {
			_, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		})
		exactlyOne(t, "refreshes", ok, errs)
	})
}
