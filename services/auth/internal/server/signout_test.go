package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// postEvents hands events to the internal event intake, as a producing
// service's outbox relay does.
func postEvents(t *testing.T, s *authtest.Server, events ...authapi.Event) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(authapi.EventBatch{Events: events})
	resp := s.Internal(t, http.MethodPost, authapi.PathEvents, "application/json", strings.NewReader(string(body)))
	defer resp.Body.Close()
	return resp.StatusCode, decode(t, readAll(t, resp))
}

func signOutEvent(userID int64, data string) authapi.Event {
	if data == "" {
		data = `{"userId":` + strconv.FormatInt(userID, 10) + `,"reason":"password-changed"}`
	}
	return authapi.Event{ID: uuid.NewString(), Type: authapi.EventUserSignedOut, Source: "users",
		Resource: "user:" + strconv.FormatInt(userID, 10), Data: json.RawMessage(data), OccurredAt: time.Now()}
}

// sessionCounts reports whether b's session still signs it in at authURL.
func sessionCounts(t *testing.T, b *browser, authURL string) bool {
	t.Helper()
	p := b.Get(authURL)
	if p.Status == http.StatusOK && strings.Contains(p.Body, `name="password"`) {
		return false
	}
	if p.Status != http.StatusFound {
		t.Fatalf("authorization request: %d\n%s", p.Status, p.Body)
	}
	return true
}

func TestSignOutEverywhere(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic")
	alice, bob := newBrowser(t), newBrowser(t)
	tok := mustExchange(t, badge, authorize(t, s, alice, badge.AuthCodeURL("a"), authtest.Alice), "")
	// A code issued and not redeemed yet.
	pending := authorize(t, s, alice, staff.AuthCodeURL("p"), authtest.Alice)
	bobTok := mustExchange(t, badge, authorize(t, s, bob, badge.AuthCodeURL("b"), authtest.Bob), "")

	t.Run("a malformed sign-out refuses the batch and ends nothing", func(t *testing.T) {
		if st, m := postEvents(t, s, signOutEvent(authtest.Alice.ID, `{"userId":"1001"}`)); st != http.StatusBadRequest {
			t.Fatalf("%d %v", st, m)
		}
		if !sessionCounts(t, alice, badge.AuthCodeURL("x")) {
			t.Fatal("the session ended")
		}
	})
	t.Run("a sign-out in a batch with a bad webhook event ends nothing", func(t *testing.T) {
		bad := authapi.Event{ID: "not-a-uuid", Type: authapi.EventUserUpdated, Source: "users", Resource: "user:1001", Data: json.RawMessage(`{}`), OccurredAt: time.Now()}
		if st, m := postEvents(t, s, signOutEvent(authtest.Alice.ID, ""), bad); st != http.StatusBadRequest {
			t.Fatalf("%d %v", st, m)
		}
		if !sessionCounts(t, alice, badge.AuthCodeURL("x")) {
			t.Fatal("the session ended")
		}
	})
	t.Run("a user-signed-out event ends the user's sessions, authorizations, access tokens and outstanding codes", func(t *testing.T) {
		if st, m := postEvents(t, s, signOutEvent(authtest.Alice.ID, "")); st != http.StatusOK || m["accepted"] != float64(0) {
			t.Fatalf("%d %v", st, m)
		}
		if sessionCounts(t, alice, badge.AuthCodeURL("y")) {
			t.Fatal("the old session cookie still signs in")
		}
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("refresh: %d %v", st, m)
		}
		if m := introspect(t, s, tok.AccessToken); m["active"] != false {
			t.Fatalf("the access token is still active: %v", m)
		}
		if !feedHas(t, s, "sid", claimsOf(t, tok.AccessToken)["sid"].(string)) {
			t.Fatal("the access token's sid is not on the revocation feed")
		}
		if _, err := exchange(t, staff, pending, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the code issued before: %v", err)
		}
	})
	t.Run("another user keeps their session and tokens", func(t *testing.T) {
		if !sessionCounts(t, bob, badge.AuthCodeURL("z")) {
			t.Fatal("bob's session ended")
		}
		if st, m := refreshWith(t, s, bobTok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("bob's refresh: %d %v", st, m)
		}
	})
	t.Run("a later sign-out ends the sessions begun since", func(t *testing.T) {
		again := newBrowser(t)
		if _, err := exchange(t, badge, authorize(t, s, again, badge.AuthCodeURL("c"), authtest.Alice), ""); err != nil {
			t.Fatal(err)
		}
		if !sessionCounts(t, again, badge.AuthCodeURL("d")) {
			t.Fatal("no session after signing in again")
		}
		// Another sign-out (a later password change) ends this one too.
		if st, m := postEvents(t, s, signOutEvent(authtest.Alice.ID, "")); st != http.StatusOK {
			t.Fatalf("%d %v", st, m)
		}
		if sessionCounts(t, again, badge.AuthCodeURL("e")) {
			t.Fatal("the second sign-out did not end the new session")
		}
	})
}

// TestCodesIssuedBeforeARevocationAreRefused: a code outstanding when the
// user revokes the app, or loses a role, is withdrawn with the grant: it
// cannot start a new family afterwards.
func TestCodesIssuedBeforeARevocationAreRefused(t *testing.T) {
	hana := staffUser(2011, "hana")
	s := authtest.Start(t, authtest.Options{Users: []authtest.User{authtest.Alice, hana}})
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")

	t.Run("a code issued before revoke access is invalid_grant", func(t *testing.T) {
		b := newBrowser(t)
		code := authorize(t, s, b, badge.AuthCodeURL("a"), authtest.Alice)
		p := b.Get(s.URL + "/oauth/apps")
		if r := b.PostForm(s.URL+"/oauth/apps/revoke", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "client_id": {authtest.BadgeID}}); r.Status != http.StatusSeeOther {
			t.Fatalf("revoke: %d", r.Status)
		}
		if _, err := exchange(t, badge, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the code issued before revoke access: %v", err)
		}
	})
	t.Run("a code issued before a role removal is invalid_grant", func(t *testing.T) {
		staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "registration:read")
		code := authorize(t, s, newBrowser(t), staff.AuthCodeURL("b"), hana)
		s.Users.SetPermissions(hana.ID, []string{"system:login"})
		resp := s.Internal(t, http.MethodPost, "/internal/users/"+strconv.FormatInt(hana.ID, 10)+"/permissions-changed", "application/json", nil)
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
			t.Fatalf("permissions-changed: %d", resp.StatusCode)
		}
		resp.Body.Close()
		if _, err := exchange(t, staff, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("the code issued before the role removal: %v", err)
		}
	})
	t.Run("a code issued after a revocation is redeemed", func(t *testing.T) {
		b := newBrowser(t)
		if _, err := exchange(t, badge, authorize(t, s, b, badge.AuthCodeURL("c"), authtest.Alice), ""); err != nil {
			t.Fatal(err)
		}
	})
}
