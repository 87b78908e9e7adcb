package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
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
			if testkit.OAuthErrorCode(err) != "invalid_grant" {
				t.Fatalf("loser: %v", err)
			}
		}
	}

	t.Run("parallel redemptions of one code through the gateway: exactly one succeeds", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := b.code(app.AuthCodeURL("c", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
		ok, errs := testkit.CountAtOnce(16, func() error { _, err := app.Exchange(ctx, code, oauth2.VerifierOption(verifier)); return err })
		exactlyOne(t, ok, errs)
	})
	t.Run("parallel refreshes of one token through the gateway: exactly one succeeds", func(t *testing.T) {
		tok := b.token(app, authAlice, authAlicePass)
		ok, errs := testkit.CountAtOnce(16, func() error {
			_, err := app.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		})
		exactlyOne(t, ok, errs)
	})
}

// TestCreatedClientGetsTokensUntilItsSecretRotates: an app created with
// `auth clients create` gets client-credentials tokens through the gateway
// with its scopes; after `auth clients rotate-secret` its old secret is
// invalid_client (once the client cache, CLIENT_CACHE_TTL, lets go).
func TestCreatedClientGetsTokensUntilItsSecretRotates(t *testing.T) {
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
		if testkit.OAuthErrorCode(err) != "invalid_client" {
			return fmt.Errorf("old secret: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the old secret still works after rotation: %v", err)
	}
}
