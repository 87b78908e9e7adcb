package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

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

// TestRevocationThroughTheGateway: an app revoking a service token through
// the gateway, and an operator rotating the app's secret, stop its tokens at
// the resource services; a token the app got after the revoked one keeps
// working; and revoking as fast as it can earns the app 429s, not an
// unbounded feed.
func TestRevocationThroughTheGateway(t *testing.T) {
	s := stack.Start(t, stack.Options{Env: map[string]string{"CLIENT_REVOCATIONS": "50"}})
	ctx := context.Background()
	tracker := clientCredentials(s.GatewayURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read")
	const path = "/api/v0/users/1001"
	revoke := func(t *testing.T, token string) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.GatewayURL+"/api/oauth/revoke", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(trackerID, trackerSecret)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	untilRefused := func(t *testing.T, token string) {
		t.Helper()
		err := testkit.Poll(ctx, 4*revocationBound, func(context.Context) error {
			if apiRequest(t, s, path, token) != http.StatusUnauthorized {
				return errors.New("still accepted")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
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
		if st, _ := revoke(t, old.AccessToken); st != http.StatusOK {
			t.Fatalf("revoke: %d", st)
		}
		untilRefused(t, old.AccessToken)
		if st := apiRequest(t, s, path, later.AccessToken); st != http.StatusOK {
			t.Fatalf("the later token: %d", st)
		}
	})
	t.Run("revoking as fast as it can gets the app 429 with Retry-After", func(t *testing.T) {
		var st int
		var h http.Header
		for range 60 {
			if st, h = revoke(t, "not-a-token"); st == http.StatusTooManyRequests {
				break
			}
		}
		if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Fatalf("%d %v", st, h)
		}
	})
	t.Run("rotating the app's secret stops the tokens it holds", func(t *testing.T) {
		if st := apiRequest(t, s, path, later.AccessToken); st != http.StatusOK {
			t.Fatalf("before: %d", st)
		}
		s.Command(t, "auth", "clients", "rotate-secret", trackerID, "-o", "json")
		untilRefused(t, later.AccessToken)
	})
}
