package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestPasswordChangeSignsTheUserOutEverywhere plays a compromised account
// being taken back: the attacker holds a browser session and an app's
// tokens; the operator sets a new password (or signs the user out). Then,
// through the gateway, the session no longer counts, the refresh token is
// invalid_grant and the access token is refused by a resource service.
func TestPasswordChangeSignsTheUserOutEverywhere(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	ctx := context.Background()
	badge := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")
	// authURL is the app's authorization request: auth answers it without
	// the login page while the browser's session still counts.
	authURL := badge.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))

	// signedIn gives user a browser session and the badge app a refresh and
	// an access token acting for user.
	signedIn := func(t *testing.T, user, password string) (*authHTTPBrowser, *oauth2.Token) {
		t.Helper()
		b := newAuthHTTPBrowser(t, gw)
		tok := b.token(badge, user, password)
		if r := mustSend(t, s, http.MethodGet, "/api/users/current", tok.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("the access token before: %d", r.status)
		}
		if !b.sessionCounts(authURL) {
			t.Fatal("the browser has no session before")
		}
		return b, tok
	}
	// signedOut waits until the access token is refused at a resource
	// service (one revocation-feed poll after auth heard of the change),
	// then checks the refresh token and the browser session.
	signedOut := func(t *testing.T, b *authHTTPBrowser, tok *oauth2.Token) {
		t.Helper()
		waitForStatus(t, s, "/api/users/current", tok.AccessToken, http.StatusUnauthorized, 20*time.Second)
		if _, err := badge.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the app's refresh afterwards: %v, want invalid_grant", err)
		}
		if b.sessionCounts(authURL) {
			t.Fatal("the old session cookie still counts: no login page")
		}
	}

	t.Run("users set-password ends the sessions, refresh tokens and access tokens of the user", func(t *testing.T) {
		b, tok := signedIn(t, authAlice, authAlicePass)
		if _, err := s.Services["users"].Run(ctx, strings.NewReader("a brand new password for alice 2026\n"), "set-password", "1001"); err != nil {
			t.Fatal(err)
		}
		signedOut(t, b, tok)
	})
	t.Run("users sign-out ends the sessions, refresh tokens and access tokens of the user", func(t *testing.T) {
		b, tok := signedIn(t, authBob, authBobPass)
		if _, err := s.Services["users"].Run(ctx, nil, "sign-out", "1002"); err != nil {
			t.Fatal(err)
		}
		signedOut(t, b, tok)
		// bob's password is unchanged: he signs in again.
		signedIn(t, authBob, authBobPass)
	})
}
