package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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

// TestParallelRedemptionsThroughTheGateway: of many redemptions of one
// authorization code, or refreshes of one refresh token, sent at once
// through the gateway, exactly one succeeds and the others are invalid_grant.
func TestParallelRedemptionsThroughTheGateway(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	app := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")
	b := newAuthHTTPBrowser(t, gw)
	ctx := context.Background()
	// exactlyOne fails t unless one of the attempts succeeded and every other was invalid_grant.
	exactlyOne := func(t *testing.T, ok int, errs []error) {
		t.Helper()
		if ok != 1 {
			t.Fatalf("%d succeeded: %v", ok, errs)
		}
		for _, err := range errs {
			if authErrorCode(err) != "invalid_grant" {
				t.Fatalf("loser: %v", err)
			}
		}
	}

	t.Run("parallel redemptions of one code through the gateway: exactly one succeeds", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := b.code(app.AuthCodeURL("c", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
		ok, errs := authParallel(16, func() error { _, err := app.Exchange(ctx, code, oauth2.VerifierOption(verifier)); return err })
		exactlyOne(t, ok, errs)
	})
	t.Run("parallel refreshes of one token through the gateway: exactly one succeeds", func(t *testing.T) {
		tok := b.token(app, authAlice, authAlicePass)
		ok, errs := authParallel(16, func() error {
			_, err := app.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		})
		exactlyOne(t, ok, errs)
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
	type issued struct{ token, kid string }
	var mu sync.Mutex
	var tokens []issued
	var failures []string
	// Four workers, 80 ms apart each: below the resource services'
	// per-client rate limit (100/s).
	load := startWorkers(80*time.Millisecond, time.Time{}, slices.Repeat([]func(int) bool{func(int) bool {
		tok, err := clientCredentials(gw, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").Token(context.Background())
		if err != nil {
			mu.Lock()
			failures = append(failures, "token: "+err.Error())
			mu.Unlock()
			return true
		}
		r, err := send(s, http.MethodGet, "/api/v0/users/1001", tok.AccessToken, "")
		msg, _ := jws.ParseString(tok.AccessToken)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err.Error())
		} else if r.status != 200 {
			failures = append(failures, fmt.Sprintf("%d %s", r.status, r.body))
		}
		tokens = append(tokens, issued{tok.AccessToken, msg.Signatures()[0].ProtectedHeaders().KeyID()})
		return true
	}}, 4)...)
	defer load.stop()
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
				load.stop()
				t.Fatalf("timed out waiting for %s (kids %v)", what, kids())
			}
			time.Sleep(20 * time.Millisecond) // polling the traffic's progress
		}
	}
	waitFor("tokens before the rotation", func() bool { k := kids(); return len(k) == 1 && sum(k) >= 50 })
	var rotated struct{ Kid string }
	commandJSON(t, s, &rotated, "auth", "keys", "rotate")
	waitFor("tokens signed by the new key", func() bool { return kids()[rotated.Kid] >= 50 })
	load.stop()
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
	id, secret := createClient(t, s, "Door Scanner", "Scans badges at the door", "service", "registration:read")
	tok, err := clientCredentials(s.GatewayURL, id, secret, oauth2.AuthStyleInHeader).Token(context.Background())
	if err != nil || tok.Extra("scope") != "registration:read" {
		t.Fatalf("the new client cannot get a token: %v", err)
	}
	s.Command(t, "auth", "clients", "rotate-secret", id)
	// A running server caches client records for CLIENT_CACHE_TTL (5s).
	err = testkit.Poll(context.Background(), 15*time.Second, func(ctx context.Context) error {
		_, err := clientCredentials(s.GatewayURL, id, secret, oauth2.AuthStyleInHeader).Token(ctx)
		if authErrorCode(err) != "invalid_client" {
			return fmt.Errorf("old secret: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the old secret still works after rotation: %v", err)
	}
}
