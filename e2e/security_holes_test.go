package e2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/servicetoken"
)

// revocationBound is how soon a revocation must stop an access token at the
// resource services: one poll of the revocation feed (REVOCATION_POLL_INTERVAL,
// 2s by default) plus the time to answer it.
const revocationBound = 3 * time.Second

// TestSecurityHolesStayClosed plays, through the gateway against the real
// services, the holes an outside review reproduced against `make run`.
func TestSecurityHolesStayClosed(t *testing.T) {
	// The login limits the forged-header subtests count against, stated here
	// rather than taken from the defaults; the failure delay is not under
	// test and only slows them.
	s := stack.Start(t, stack.Options{Env: map[string]string{"LOGIN_FAILURES_PER_ACCOUNT": strconv.Itoa(loginPerAccount),
		"LOGIN_FAILURES_PER_ADDRESS": strconv.Itoa(loginPerAddress), "LOGIN_FAILURE_DELAY": "100ms"}})
	gw := s.GatewayURL
	ctx := context.Background()
	staff := authApp(gw, authStaffID, authStaffSecret, "pii:basic", "registration:read")
	badge := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")
	operator := clientCredentials(gw, "501", "a-long-random-demo-secret-of-at-least-32-chars", oauth2.AuthStyleInHeader, "user:roles:update")
	grant := func(t *testing.T, app *oauth2.Config, user, password string) *oauth2.Token {
		t.Helper()
		verifier := oauth2.GenerateVerifier()
		code := newAuthHTTPBrowser(t, gw).code(app.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), user, password)
		tok, err := app.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// untilRefused polls path with token until it answers 401 and returns how long that took.
	untilRefused := func(t *testing.T, path, token string) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 4*revocationBound {
			if apiRequest(t, s, path, token) == http.StatusUnauthorized {
				return time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s still accepted the revoked token after %v", path, 4*revocationBound)
		return 0
	}

	t.Run("a sensitive scope does not outlive the role behind it", func(t *testing.T) {
		// carol holds registration:read through the staff role (id 2).
		tok := grant(t, staff, "carol", "carol demo password 2026")
		if tok.Extra("scope") != "pii:basic registration:read" {
			t.Fatalf("granted %v", tok.Extra("scope"))
		}
		const registration = "/api/v0/users/1003/registration"
		if st := apiRequest(t, s, registration, tok.AccessToken); st != http.StatusOK {
			t.Fatalf("before: %d", st)
		}
		opTok, err := operator.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodDelete, gw+"/api/v0/users/1003/roles/2", nil)
		req.Header.Set("Authorization", "Bearer "+opTok.AccessToken)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("removing the role: %d", resp.StatusCode)
		}
		took := untilRefused(t, registration, tok.AccessToken)
		t.Logf("the access token was refused %v after the role was removed", took.Round(time.Millisecond))
		if took > revocationBound {
			t.Fatalf("refused after %v, more than the stated bound %v", took, revocationBound)
		}
		_, err = staff.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if authErrorCode(err) != "invalid_grant" {
			t.Fatalf("the app's refresh after the role was removed: %v", err)
		}
	})

	t.Run("revoking a refresh token stops its access token at the resource services", func(t *testing.T) {
		tok := grant(t, badge, authAlice, authAlicePass)
		if st, _ := authCurrentUser(t, s, tok.AccessToken); st != http.StatusOK {
			t.Fatalf("before: %d", st)
		}
		form := url.Values{"token": {tok.RefreshToken}}
		req, _ := http.NewRequest(http.MethodPost, gw+"/api/oauth/revoke", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(authBadgeID, authBadgeSecret)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		took := untilRefused(t, "/api/users/current", tok.AccessToken)
		t.Logf("the access token was refused %v after RFC 7009 revocation", took.Round(time.Millisecond))
		if took > revocationBound {
			t.Fatalf("refused after %v, more than the stated bound %v", took, revocationBound)
		}
	})

	t.Run("strangers cannot lock a client out by guessing", func(t *testing.T) {
		tok := grant(t, badge, authBob, authBobPass)
		for i := 0; i < 15; i++ {
			for _, id := range []string{"501", "0501", authBadgeID, "0" + authBadgeID} {
				wrong := &clientcredentials.Config{ClientID: id, ClientSecret: "not-the-secret-not-the-secret-not-the", TokenURL: gw + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}
				if _, err := wrong.Token(ctx); err == nil {
					t.Fatal("a wrong secret authenticated")
				}
			}
		}
		if _, err := operator.Token(ctx); err != nil {
			t.Fatalf("the real service app was locked out: %v", err)
		}
		if _, err := badge.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
			t.Fatalf("the real OBO app's refresh was locked out: %v", err)
		}
	})

	t.Run("another client's replay does not revoke the owner's family", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := newAuthHTTPBrowser(t, gw).code(badge.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
		tok, err := badge.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		next, err := badge.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if err != nil {
			t.Fatal(err)
		}
		// The staff app presents the badge app's used code and rotated refresh token.
		thief := authApp(gw, authStaffID, authStaffSecret, "pii:basic")
		if _, err := thief.Exchange(ctx, code, oauth2.VerifierOption(verifier)); authErrorCode(err) != "invalid_grant" {
			t.Fatalf("replayed code: %v", err)
		}
		if _, err := thief.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); authErrorCode(err) != "invalid_grant" {
			t.Fatalf("rotated refresh token: %v", err)
		}
		if st, _ := authCurrentUser(t, s, next.AccessToken); st != http.StatusOK {
			t.Fatalf("the owner's access token was revoked: %d", st)
		}
		if _, err := badge.TokenSource(ctx, &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); err != nil {
			t.Fatalf("the owner's family was revoked: %v", err)
		}
	})

	// Forged client addresses. Each client below comes from its own loopback
	// address, so what it is throttled by is its own: the other subtests sign
	// in from 127.0.0.1. It tries wrong passwords for the five demo accounts
	// in turn, each at most loginPerAccount times, so only the per-address
	// limit can refuse it, and it forges a new X-Forwarded-For and X-Real-IP
	// on every attempt: believed, they would spread the attempts over as many
	// addresses and none would be refused.
	t.Run("a forged X-Forwarded-For through the gateway does not escape the per-address login limit", func(t *testing.T) {
		// Through the gateway, which replaces both headers with the peer it sees.
		forgedLoginsAreThrottledByTheRealAddress(t, gw, "127.0.0.2", "127.0.0.4")
	})
	t.Run("a forged X-Forwarded-For straight to auth from an untrusted peer does not escape the per-address login limit", func(t *testing.T) {
		// Past the gateway, straight to auth's public listener: the peer is
		// not in TRUSTED_PROXIES (loopback 127.0.0.1 only), so auth ignores
		// the headers and counts the peer.
		forgedLoginsAreThrottledByTheRealAddress(t, s.Services["auth"].PublicURL, "127.0.0.3", "127.0.0.5")
	})

	t.Run("parallel wrong guesses for one account from many addresses through the gateway get its budget, and the user still signs in from his own address", func(t *testing.T) {
		// The email, not the username, so the forged-header subtests'
		// rotation over the usernames keeps its budgets (each identifier has
		// its own, decision 0091). Addresses 127.0.0.2-5 are theirs.
		const login, home = "alice@example.org", "127.0.0.6"
		signIn := func(t *testing.T, from, password string) int {
			b := browserFrom(t, from)
			_, _, page := b.do(http.MethodGet, gw+"/oauth/login", nil)
			st, _, _ := b.do(http.MethodPost, gw+"/oauth/login", url.Values{"csrf_token": {authField(t, authCSRFRe, page)}, "next": {"/oauth/apps"},
				"username": {login}, "password": {password}})
			return st
		}
		if st := signIn(t, home, authAlicePass); st != http.StatusSeeOther {
			t.Fatalf("alice from home before the attack: %d", st)
		}
		const n = 20
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = signIn(t, "127.0.0."+strconv.Itoa(10+i), "not the password")
			}()
		}
		wg.Wait()
		wrong := 0
		for i, st := range statuses {
			switch st {
			case http.StatusBadRequest:
				wrong++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("guess %d: %d", i+1, st)
			}
		}
		if wrong > loginPerAccount {
			t.Fatalf("%d of %d parallel guesses from %d addresses were checked (answered 400), want at most %d", wrong, n, n, loginPerAccount)
		}
		if st := signIn(t, home, authAlicePass); st != http.StatusSeeOther {
			t.Fatalf("alice from home after the attack: %d, want the sign-in", st)
		}
	})

	t.Run("a peer that reaches an internal listener cannot call it without a service token", func(t *testing.T) {
		key := servicetoken.Config{Key: s.InternalAuthKey()}
		forger := servicetoken.NewSigner(servicetoken.Config{Key: "a-key-of-the-right-length-but-not-the-deployment's"}, "auth")
		peer := servicetoken.NewSigner(key, "auth")
		for _, c := range internalCalls {
			other := "users"
			if c.service == "users" {
				other = "volunteers"
			}
			forged, _ := forger.Token(c.service)
			wrongAudience, _ := peer.Token(other)
			expired, _ := peer.TokenAt(c.service, time.Now().Add(-time.Hour))
			for how, auth := range map[string]string{"no credentials:": "", "a token signed with another key:": "Bearer " + forged,
				"a token for " + other + ":": "Bearer " + wrongAudience, "an expired token:": "Bearer " + expired, "Basic credentials:": "Basic YXV0aDphdXRo"} {
				status, body := callInternal(t, s, c, auth)
				wantRefused(t, c, how, status, body)
			}
		}
		good, _ := peer.Token("auth")
		status, body := callInternal(t, s, internalCall{"auth", http.MethodGet, "/internal/revocations?after=0", ""}, "Bearer "+good)
		if status != http.StatusOK {
			t.Fatalf("a genuine service token for auth: %d %s", status, body)
		}
		for _, c := range internalCalls {
			if c.service != "users" || c.method != http.MethodGet {
				continue
			}
			good, _ := peer.Token("users")
			if status, body := callInternal(t, s, c, "Bearer "+good); status != http.StatusOK {
				t.Fatalf("a genuine service token for users: %s %d %s", c.path, status, body)
			}
		}
	})

	t.Run("probes and metrics are on the ops listener; the internal listener serves none of them", func(t *testing.T) {
		for _, name := range stack.ServiceNames {
			svc := s.Services[name]
			for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
				if status, _ := get(t, svc.OpsURL+path); status != http.StatusOK {
					t.Errorf("%s ops %s: %d, want 200", name, path, status)
				}
				// Without a token the internal listener refuses everything,
				// known route or not; with one, there is no such route.
				if status, _ := get(t, svc.InternalURL+path); status != http.StatusUnauthorized {
					t.Errorf("%s internal %s without a token: %d, want 401", name, path, status)
				}
				tok, _ := servicetoken.NewSigner(servicetoken.Config{Key: s.InternalAuthKey()}, "auth").Token(name)
				req, _ := http.NewRequest(http.MethodGet, svc.InternalURL+path, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("%s internal %s with a token: %d, want 404", name, path, resp.StatusCode)
				}
			}
		}
	})

	t.Run("the internal API is not reachable through the gateway", func(t *testing.T) {
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/internal/revocations"},
			{http.MethodPost, "/internal/users/1001/permissions-changed"},
		} {
			req, _ := http.NewRequest(r.method, gw+r.path, nil)
			resp, err := s.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s %s through the gateway: %d", r.method, r.path, resp.StatusCode)
			}
		}
	})
}

// The login limits of TestSecurityHolesStayClosed's stack.
const (
	loginPerAccount = 5  // LOGIN_FAILURES_PER_ACCOUNT: per account and address
	loginPerAddress = 10 // LOGIN_FAILURES_PER_ADDRESS: per address, all accounts
)

// demoAccounts are the demo fixture's users: wrong passwords rotate over them.
var demoAccounts = []string{"alice", "bob", "carol", "dave", "erin"}

// forgedLoginsAreThrottledByTheRealAddress signs in with wrong passwords at
// base (the gateway, or auth itself) from the loopback address from, forging
// a different X-Forwarded-For and X-Real-IP each time, over the demo accounts
// in turn (none reaches loginPerAccount). The first loginPerAddress attempts
// must be refused as wrong (400), the next one throttled (429): counted by
// from, whatever the headers said. A wrong password from other, with no
// forged header, is still answered 400: the limit is from's, not everyone's.
// That one names a login of its own (other, with no user behind it, is
// answered alike): the accounts of the rotation share a budget across
// addresses (decision 0091), which the two calls of this together use up.
func forgedLoginsAreThrottledByTheRealAddress(t *testing.T, base, from, other string) {
	t.Helper()
	if loginPerAddress+1 > len(demoAccounts)*(loginPerAccount-1) {
		t.Fatal("too few accounts to reach the per-address limit without any account's")
	}
	b := browserFrom(t, from)
	_, _, page := b.do(http.MethodGet, base+"/oauth/login", nil)
	csrf := authField(t, authCSRFRe, page)
	for i := 0; i <= loginPerAddress; i++ {
		form := url.Values{"csrf_token": {csrf}, "next": {"/oauth/apps"}, "username": {demoAccounts[i%len(demoAccounts)]}, "password": {"not the password"}}
		req, _ := http.NewRequest(http.MethodPost, base+"/oauth/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		forged := "198.51.100." + strconv.Itoa(i+1)
		req.Header.Set("X-Forwarded-For", forged)
		req.Header.Set("X-Real-IP", forged)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusBadRequest
		if i == loginPerAddress {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("wrong password %d of %d from %s (forged as %s) at %s: %d, want %d (the per-address limit is %d, no account reached its %d)",
				i+1, loginPerAddress+1, from, forged, base, resp.StatusCode, want, loginPerAddress, loginPerAccount)
		}
	}
	ob := browserFrom(t, other)
	_, _, page = ob.do(http.MethodGet, base+"/oauth/login", nil)
	if st, _, _ := ob.do(http.MethodPost, base+"/oauth/login", url.Values{"csrf_token": {authField(t, authCSRFRe, page)}, "next": {"/oauth/apps"},
		"username": {"someone-at-" + other}, "password": {"not the password"}}); st != http.StatusBadRequest {
		t.Fatalf("a wrong password from %s after %s was throttled: %d, want 400", other, from, st)
	}
}

// browserFrom is a browser whose connections leave from the loopback
// address ip (any of 127.0.0.0/8 reaches the listeners on 127.0.0.1).
func browserFrom(t *testing.T, ip string) *authHTTPBrowser {
	b := newAuthHTTPBrowser(t, "")
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	b.hc.Transport = &http.Transport{DialContext: dialer.DialContext}
	return b
}
