package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jws"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestRevokedSigningKeyIsRefusedByTheResourceServices runs the emergency key
// revocation end to end: after `auth keys revoke KID` every resource service
// refuses an access token signed by that key, one it has already accepted
// (and cached) included, within auth's KEY_REFRESH_INTERVAL (the key leaves
// the JWKS) plus the validators' JWKS_REFRESH_INTERVAL (they drop it), and
// the key put in its place signs tokens they accept.
func TestRevokedSigningKeyIsRefusedByTheResourceServices(t *testing.T) {
	const keyRefresh, jwksRefresh = 500 * time.Millisecond, 2 * time.Second
	s := stack.Start(t, stack.Options{Env: map[string]string{
		"KEY_REFRESH_INTERVAL": keyRefresh.String(), "JWKS_REFRESH_INTERVAL": jwksRefresh.String()}})
	ctx := context.Background()
	tracker := clientCredentials(s.GatewayURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read", "volunteer:read", "registration:read")
	// One route per resource service: users itself, and the two it forwards
	// to their owners, which check the token with validators of their own.
	paths := []string{"/api/v0/users/1001", "/api/v0/users/1003/volunteer", "/api/v0/users/1003/registration"}
	kidOf := func(t *testing.T, token string) string {
		t.Helper()
		msg, err := jws.ParseString(token)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Signatures()[0].ProtectedHeaders().KeyID()
	}
	// refused reports which of paths answer tok with 401.
	refused := func(t *testing.T, token string) map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, p := range paths {
			out[p] = mustSend(t, s, http.MethodGet, p, token, "").status == http.StatusUnauthorized
		}
		return out
	}
	tok, err := tracker.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p, no := range refused(t, tok.AccessToken) {
		if no {
			t.Fatalf("%s refused the token before the revocation", p)
		}
	}
	kid := kidOf(t, tok.AccessToken)
	var revoked struct {
		Kid         string
		Replacement *struct{ Kid string }
	}
	if commandJSON(t, s, &revoked, "auth", "keys", "revoke", "--", kid); revoked.Kid != kid || revoked.Replacement == nil {
		t.Fatalf("keys revoke: %+v", revoked)
	}
	start := time.Now()

	t.Run("every resource service refuses the key's token within the refresh intervals", func(t *testing.T) {
		bound := keyRefresh + jwksRefresh + time.Second // plus a poll's answer and scheduling
		var took time.Duration
		for {
			all := true
			for _, no := range refused(t, tok.AccessToken) {
				all = all && no
			}
			if all {
				took = time.Since(start)
				break
			}
			if time.Since(start) > 4*bound {
				t.Fatalf("still accepted %v after the revocation: refused %v", 4*bound, refused(t, tok.AccessToken))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the revoked key's token was refused everywhere %v after `keys revoke`", took.Round(time.Millisecond))
		if took > bound {
			t.Fatalf("refused after %v, more than KEY_REFRESH_INTERVAL + JWKS_REFRESH_INTERVAL (+1s) = %v", took, bound)
		}
	})
	t.Run("tokens of the key put in its place are accepted", func(t *testing.T) {
		err := testkit.Poll(ctx, 20*time.Second, func(ctx context.Context) error {
			fresh, err := tracker.Token(ctx)
			if err != nil {
				return err
			}
			if k := kidOf(t, fresh.AccessToken); k == kid {
				return fmt.Errorf("auth still signs with the revoked key")
			}
			for p, no := range refused(t, fresh.AccessToken) {
				if no {
					return fmt.Errorf("%s refused a token of the new key", p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
