package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestGuessingAndReplaysAreContained plays, through the gateway against the
// real services, the guessing and replays an outside review tried against
// `make run`: wrong client secrets and wrong passwords are throttled by the
// address they really come from, whatever forwarding headers they forge,
// and neither they nor another app's replay of a used code or rotated
// refresh token lock the owners out.
func TestGuessingAndReplaysAreContained(t *testing.T) {
	// The login limits the forged-header subtests count against, stated here
	// rather than taken from the defaults; the failure delay is not under
	// test and only slows them.
	s := stack.Start(t, stack.Options{Env: map[string]string{"LOGIN_FAILURES_PER_ACCOUNT": strconv.Itoa(loginPerAccount),
		"LOGIN_FAILURES_PER_ADDRESS": strconv.Itoa(loginPerAddress), "LOGIN_FAILURE_DELAY": "100ms"}})
	gw := s.GatewayURL
	ctx := context.Background()
	badge := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")

	t.Run("strangers cannot lock a client out by guessing", func(t *testing.T) {
		tok := userToken(t, gw, badge, authBob, authBobPass)
		for i := 0; i < 15; i++ {
			for _, id := range []string{trackerID, "0" + trackerID, authBadgeID, "0" + authBadgeID} {
				wrong := clientCredentials(gw, id, "not-the-secret-not-the-secret-not-the", oauth2.AuthStyleInHeader)
				if _, err := wrong.Token(ctx); err == nil {
					t.Fatal("a wrong secret authenticated")
				}
			}
		}
		if _, err := clientCredentials(gw, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").Token(ctx); err != nil {
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
		if _, err := thief.Exchange(ctx, code, oauth2.VerifierOption(verifier)); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("replayed code: %v", err)
		}
		if _, err := thief.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("rotated refresh token: %v", err)
		}
		if r := mustSend(t, s, http.MethodGet, "/api/users/current", next.AccessToken, ""); r.status != http.StatusOK {
			t.Fatalf("the owner's access token was revoked: %d", r.status)
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
			b := browserFrom(t, gw, from)
			st, _, _ := b.login(gw, b.loginPage(gw), "/oauth/apps", login, password)
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
}

// The login limits of TestGuessingAndReplaysAreContained's stack.
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
	b := browserFrom(t, base, from)
	csrf := testkit.PageField(t, testkit.CSRFField, b.loginPage(base))
	for i := 0; i <= loginPerAddress; i++ {
		form := url.Values{"csrf_token": {csrf}, "next": {"/oauth/apps"}, "username": {demoAccounts[i%len(demoAccounts)]}, "password": {"not the password"}}
		req := newFormRequest(base, "/oauth/login", "", "", form)
		forged := "198.51.100." + strconv.Itoa(i+1)
		req.Header.Set("X-Forwarded-For", forged)
		req.Header.Set("X-Real-IP", forged)
		r := mustDo(t, b.Client, req)
		want := http.StatusBadRequest
		if i == loginPerAddress {
			want = http.StatusTooManyRequests
		}
		if r.status != want {
			t.Fatalf("wrong password %d of %d from %s (forged as %s) at %s: %d, want %d (the per-address limit is %d, no account reached its %d)",
				i+1, loginPerAddress+1, from, forged, base, r.status, want, loginPerAddress, loginPerAccount)
		}
	}
	ob := browserFrom(t, base, other)
	if st, _, _ := ob.login(base, ob.loginPage(base), "/oauth/apps", "someone-at-"+other, "not the password"); st != http.StatusBadRequest {
		t.Fatalf("a wrong password from %s after %s was throttled: %d, want 400", other, from, st)
	}
}
