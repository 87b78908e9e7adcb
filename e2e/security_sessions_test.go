package e2e

import (
	"context"
	"fmt"
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

	// signedIn gives user a browser session and the badge app a refresh and
	// an access token acting for user.
	signedIn := func(t *testing.T, user, password string) (*authHTTPBrowser, *oauth2.Token, string) {
		t.Helper()
		b := newAuthHTTPBrowser(t, gw)
		verifier := oauth2.GenerateVerifier()
		authURL := badge.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier))
		tok, err := badge.Exchange(ctx, b.code(authURL, user, password), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := authCurrentUser(t, s, tok.AccessToken); st != http.StatusOK {
			t.Fatalf("the access token before: %d", st)
		}
		if !sessionCounts(t, b, authURL) {
			t.Fatal("the browser has no session before")
		}
		return b, tok, authURL
	}
	// signedOut waits until the access token is refused at a resource
	// service (one revocation-feed poll after auth heard of the change),
	// then checks the refresh token and the browser session.
	signedOut := func(t *testing.T, b *authHTTPBrowser, tok *oauth2.Token, authURL string) {
		t.Helper()
		err := testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
			if st, _ := authCurrentUser(t, s, tok.AccessToken); st != http.StatusUnauthorized {
				return fmt.Errorf("GET /api/users/current still answers %d to the old access token", st)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := badge.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); authErrorCode(err) != "invalid_grant" {
			t.Fatalf("the app's refresh afterwards: %v, want invalid_grant", err)
		}
		if sessionCounts(t, b, authURL) {
			t.Fatal("the old session cookie still counts: no login page")
		}
	}

	t.Run("users set-password ends the sessions, refresh tokens and access tokens of the user", func(t *testing.T) {
		b, tok, authURL := signedIn(t, authAlice, authAlicePass)
		if _, err := s.Services["users"].Run(ctx, strings.NewReader("a brand new password for alice 2026\n"), "set-password", "1001"); err != nil {
			t.Fatal(err)
		}
		signedOut(t, b, tok, authURL)
	})
	t.Run("users sign-out ends the sessions, refresh tokens and access tokens of the user", func(t *testing.T) {
		b, tok, authURL := signedIn(t, authBob, authBobPass)
		if _, err := s.Services["users"].Run(ctx, nil, "sign-out", "1002"); err != nil {
			t.Fatal(err)
		}
		signedOut(t, b, tok, authURL)
		// bob's password is unchanged: he signs in again.
		signedIn(t, authBob, authBobPass)
	})
}

// sessionCounts reports whether b's session cookie still signs it in: the
// authorization request is answered without the login page.
func sessionCounts(t *testing.T, b *authHTTPBrowser, authURL string) bool {
	t.Helper()
	status, _, page := b.do(http.MethodGet, authURL, nil)
	if status == http.StatusOK && strings.Contains(page, `name="password"`) {
		return false
	}
	if status != http.StatusFound {
		t.Fatalf("authorization request: %d\n%s", status, page)
	}
	return true
}
