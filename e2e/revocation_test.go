package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// revocationBound is how soon a revocation must stop an access token at the
// resource services: one poll of the revocation feed (REVOCATION_POLL_INTERVAL,
// 2s by default) plus the time to answer it.
const revocationBound = 3 * time.Second

// iatOf reads the iat of a JWT without verifying it.
func iatOf(t *testing.T, token string) int64 {
	t.Helper()
	parts := strings.Split(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Iat int64 `json:"iat"`
	}
	if err != nil || len(parts) != 3 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("not a JWT: %q", token)
	}
	return c.Iat
}

// TestRevocationThroughTheGateway: what ends a grant stops its access tokens
// at the resource services within revocationBound: a role removed from the
// user behind a sensitive scope, a refresh token revoked by its app, a
// service token revoked by its app, and an operator rotating the app's
// secret. A token the app got after the revoked one keeps working, and
// revoking as fast as it can earns an app 429s, not an unbounded feed.
func TestRevocationThroughTheGateway(t *testing.T) {
	s := stack.Start(t, stack.Options{Env: map[string]string{"CLIENT_REVOCATIONS": "50"}})
	ctx := context.Background()
	tracker := clientCredentials(s.GatewayURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read")
	// untilRefused waits until path refuses token and fails t unless that
	// took at most revocationBound.
	untilRefused := func(t *testing.T, path, token, after string) {
		t.Helper()
		took := waitForStatus(t, s, path, token, http.StatusUnauthorized, 4*revocationBound)
		t.Logf("the access token was refused %v after %s", took.Round(time.Millisecond), after)
		if took > revocationBound {
			t.Fatalf("refused after %v, more than the stated bound %v", took, revocationBound)
		}
	}

	t.Run("a sensitive scope does not outlive the role behind it", func(t *testing.T) {
		// carol holds registration:read through the staff role (id 2).
		staff := authApp(s.GatewayURL, authStaffID, authStaffSecret, "pii:basic", "registration:read")
		tok := userToken(t, s.GatewayURL, staff, authCarol, authCarolPass)
		if tok.Extra("scope") != "pii:basic registration:read" {
			t.Fatalf("granted %v", tok.Extra("scope"))
		}
		const registration = "/api/v0/users/1003/registration"
		if r := mustSend(t, s, http.MethodGet, registration, tok.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("before: %d", r.status)
		}
		operator := serviceToken(t, s, trackerID, trackerSecret, "user:roles:update")
		if r := mustSend(t, s, http.MethodDelete, "/api/v0/users/1003/roles/2", operator, ""); r.status != http.StatusNoContent {
			t.Fatalf("removing the role: %d %s", r.status, r.body)
		}
		untilRefused(t, registration, tok.AccessToken, "the role was removed")
		if _, err := staff.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the app's refresh after the role was removed: %v", err)
		}
	})

	t.Run("revoking a refresh token stops its access token at the resource services", func(t *testing.T) {
		badge := authApp(s.GatewayURL, authBadgeID, authBadgeSecret, "pii:basic")
		tok := userToken(t, s.GatewayURL, badge, authAlice, authAlicePass)
		if r := mustSend(t, s, http.MethodGet, "/api/users/current", tok.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("before: %d", r.status)
		}
		revokeToken(t, s, authBadgeID, authBadgeSecret, tok.RefreshToken)
		untilRefused(t, "/api/users/current", tok.AccessToken, "RFC 7009 revocation")
	})

	const path = "/api/v0/users/1001"
	old, err := tracker.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A token of a later second: revoking old must not touch it.
	var later *oauth2.Token
	err = testkit.Poll(ctx, 5*time.Second, func(ctx context.Context) error {
		if later, err = tracker.Token(ctx); err != nil {
			return err
		}
		if iatOf(t, later.AccessToken) <= iatOf(t, old.AccessToken) {
			return errors.New("same second")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a revoked service token is refused; one got after it is not", func(t *testing.T) {
		if r := revokeToken(t, s, trackerID, trackerSecret, old.AccessToken); r.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		waitForStatus(t, s, path, old.AccessToken, http.StatusUnauthorized, 4*revocationBound)
		if r := mustSend(t, s, http.MethodGet, path, later.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("the later token: %d", r.status)
		}
	})
	t.Run("revoking as fast as it can gets the app 429 with Retry-After", func(t *testing.T) {
		var r reply
		for range 60 {
			if r = revokeToken(t, s, trackerID, trackerSecret, "not-a-token"); r.status == http.StatusTooManyRequests {
				break
			}
		}
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Fatalf("%d %v", r.status, r.header)
		}
	})
	t.Run("rotating the app's secret stops the tokens it holds", func(t *testing.T) {
		if r := mustSend(t, s, http.MethodGet, path, later.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("before: %d", r.status)
		}
		s.Command(t, "auth", "clients", "rotate-secret", trackerID)
		waitForStatus(t, s, path, later.AccessToken, http.StatusUnauthorized, 4*revocationBound)
	})
}
