package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jws"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

func TestAuthTokenConcurrency(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	app := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")
	b := newAuthHTTPBrowser(t, gw)
	ctx := context.Background()

	t.Run("parallel redemptions of one code through the gateway: exactly one succeeds", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := b.code(app.AuthCodeURL("c", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
		ok, errs := authParallel(16, func() error { _, err := app.Exchange(ctx, code, oauth2.VerifierOption(verifier)); return err })
		if ok != 1 {
			t.Fatalf("%d succeeded: %v", ok, errs)
		}
		for _, err := range errs {
			if authErrorCode(err) != "invalid_grant" {
				t.Fatalf("loser: %v", err)
			}
		}
	})
	t.Run("parallel refreshes of one token through the gateway: exactly one succeeds", func(t *testing.T) {
		tok, err := app.Exchange(ctx, b.code(app.AuthCodeURL("r"), authAlice, authAlicePass))
		if err != nil {
			t.Fatal(err)
		}
		ok, errs := authParallel(16, func() error {
			_, err := app.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		})
		if ok != 1 {
			t.Fatalf("%d succeeded: %v", ok, errs)
		}
		for _, err := range errs {
			if authErrorCode(err) != "invalid_grant" {
				t.Fatalf("loser: %v", err)
			}
		}
	})
	t.Run("an OBO token reads the current user through the gateway", func(t *testing.T) {
		tok, err := app.Exchange(ctx, b.code(app.AuthCodeURL("u"), authAlice, authAlicePass))
		if err != nil {
			t.Fatal(err)
		}
		if status, body := authCurrentUser(t, s, tok.AccessToken); status != 200 || !strings.Contains(string(body), `"username":"alice"`) {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("logout through the gateway returns to the app", func(t *testing.T) {
		back := url.Values{"next": {authRedirectURI}, "client_id": {authBadgeID}}
		status, _, page := b.do(http.MethodGet, gw+"/oauth/logout?"+back.Encode(), nil)
		if status != http.StatusOK || !strings.Contains(page, ">Sign out</button>") {
			t.Fatalf("want the confirmation page: %d\n%s", status, page)
		}
		back.Set("csrf_token", authField(t, authCSRFRe, page))
		status, h, _ := b.do(http.MethodPost, gw+"/oauth/logout", back)
		if status != http.StatusSeeOther || h.Get("Location") != authRedirectURI {
			t.Fatalf("%d %v", status, h)
		}
	})
}

// TestAuthKeyRotationUnderTraffic rotates the signing key with `auth keys
// rotate` while tokens are issued and used at the users service. The new key
// signs 6s after it is published: longer than a resource service's JWKS
// refetch limit (5s), as the production default (10m) is longer than its
// periodic refresh (5m).
func TestAuthKeyRotationUnderTraffic(t *testing.T) {
	s := stack.Start(t, stack.Options{Env: map[string]string{"KEY_ACTIVATION_DELAY": "6s", "KEY_REFRESH_INTERVAL": "500ms"}})
	gw := s.GatewayURL
	hc := s.HTTPClient()
	type issued struct{ token, kid string }
	var mu sync.Mutex
	var tokens []issued
	var failures []string
	stop := make(chan struct{})
	// Paced below the resource services' per-client rate limit (100/s).
	pace := time.NewTicker(20 * time.Millisecond)
	defer pace.Stop()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				tok, err := clientCredentials(gw, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").Token(context.Background())
				if err != nil {
					mu.Lock()
					failures = append(failures, "token: "+err.Error())
					mu.Unlock()
					continue
				}
				req, _ := http.NewRequest(http.MethodGet, gw+"/api/v0/users/1001", nil)
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				resp, err := hc.Do(req)
				msg, _ := jws.ParseString(tok.AccessToken)
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failures = append(failures, resp.Status+" "+string(body))
					}
				}
				tokens = append(tokens, issued{tok.AccessToken, msg.Signatures()[0].ProtectedHeaders().KeyID()})
				mu.Unlock()
			}
		}()
	}
	kids := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for _, i := range tokens {
			out[i.kid]++
		}
		return out
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out waiting for %s (kids %v)", what, kids())
			}
			time.Sleep(20 * time.Millisecond) // polling the traffic's progress
		}
	}
	waitFor("tokens before the rotation", func() bool { k := kids(); return len(k) == 1 && sum(k) >= 50 })
	out := s.Command(t, "auth", "keys", "rotate", "-o", "json")
	var rotated struct{ Kid string }
	if err := json.Unmarshal([]byte(out), &rotated); err != nil {
		t.Fatalf("%s", out)
	}
	waitFor("tokens signed by the new key", func() bool { return kids()[rotated.Kid] >= 50 })
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during the rotation, first: %s", len(failures), len(tokens), failures[0])
	}
	t.Run("every token, before and after, still validates against the JWKS", func(t *testing.T) {
		v, err := tokenauth.New(tokenauth.Config{JWKSURL: s.Services["auth"].InternalURL + "/.well-known/jwks.json", Issuer: s.Issuer, Audience: "eventreg-api"})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range tokens {
			if _, err := v.Validate(context.Background(), i.token); err != nil {
				t.Fatalf("%v", err)
			}
		}
	})
	t.Run("keys list shows the new key active and the old one retired", func(t *testing.T) {
		out := s.Command(t, "auth", "keys", "list")
		if !strings.Contains(out, rotated.Kid) || !strings.Contains(out, "active") || !strings.Contains(out, "retired") {
			t.Fatalf("%s", out)
		}
	})
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestAuthClientsCommand(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	out := s.Command(t, "auth", "clients", "create", "--name", "Door Scanner", "--description", "Scans badges at the door",
		"--kind", "service", "--scopes", "registration:read", "-o", "json")
	var c struct {
		ClientID     int64  `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%s", out)
	}
	id := strings.TrimSpace(func() string { b, _ := json.Marshal(c.ClientID); return string(b) }())
	tok, err := clientCredentials(s.GatewayURL, id, c.ClientSecret, oauth2.AuthStyleInHeader).Token(context.Background())
	if err != nil || tok.Extra("scope") != "registration:read" {
		t.Fatalf("the new client cannot get a token: %v", err)
	}
	s.Command(t, "auth", "clients", "rotate-secret", id)
	// A running server caches client records for CLIENT_CACHE_TTL (5s).
	err = testkit.Poll(context.Background(), 15*time.Second, func(ctx context.Context) error {
		_, err := clientCredentials(s.GatewayURL, id, c.ClientSecret, oauth2.AuthStyleInHeader).Token(ctx)
		if authErrorCode(err) != "invalid_client" {
			return fmt.Errorf("old secret: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the old secret still works after rotation: %v", err)
	}
}
