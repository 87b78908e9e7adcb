package e2e

import (
	"context"
	"fmt"
	"net/http"
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

// kidOf is the id of the key that signed token.
func kidOf(t testing.TB, token string) string {
	t.Helper()
	msg, err := jws.ParseString(token)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Signatures()[0].ProtectedHeaders().KeyID()
}

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
	// issueAndUse gets a token and reads a user with it.
	issueAndUse := func(int) bool {
		tok, err := clientCredentials(gw, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").Token(context.Background())
		if err != nil {
			mu.Lock()
			failures = append(failures, "token: "+err.Error())
			mu.Unlock()
			return true
		}
		r, err := send(s, http.MethodGet, "/api/v0/users/1001", tok.AccessToken, "")
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err.Error())
		} else if r.status != 200 {
			failures = append(failures, fmt.Sprintf("%d %s", r.status, r.body))
		}
		tokens = append(tokens, issued{tok.AccessToken, kidOf(t, tok.AccessToken)})
		return true
	}
	// Four workers, 80 ms apart each: below the resource services'
	// per-client rate limit (100/s).
	load := startWorkers(80*time.Millisecond, time.Time{}, issueAndUse, issueAndUse, issueAndUse, issueAndUse)
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
