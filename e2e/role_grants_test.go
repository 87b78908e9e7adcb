package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestRoleGrantsHaveACeiling: an app with user:roles:update may grant and
// remove only the roles apps may grant (docs/users.md, Roles apps may
// grant). admin (role 1) carries sensitive permissions and the demo does not
// mark it grantable, so the tracker can neither make bob (1002) an admin —
// which would let him consent to administrative scopes — nor strip alice
// (1001) of it; staff (role 2), marked grantable in the demo, still works,
// and so does admin once an operator marks it grantable.
func TestRoleGrantsHaveACeiling(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	tracker := serviceToken(t, s, trackerID, trackerSecret, "user:read", "user:roles:update")
	rolesOf := func(t *testing.T, id string) string {
		t.Helper()
		r := mustSend(t, s, http.MethodGet, "/api/v0/users/"+id+"/roles", tracker, "")
		if r.status != http.StatusOK {
			t.Fatalf("roles of %s: %d %s", id, r.status, r.body)
		}
		return r.body
	}
	refused := func(t *testing.T, r reply) {
		t.Helper()
		var body struct {
			Errors map[string]json.RawMessage `json:"errors"`
		}
		if r.status != http.StatusForbidden || json.Unmarshal([]byte(r.body), &body) != nil || body.Errors["access"] == nil {
			t.Fatalf("want 403 access, got %d %s", r.status, r.body)
		}
	}

	t.Run("a service app may not grant admin: 403 access and the user gains nothing", func(t *testing.T) {
		before := rolesOf(t, "1002")
		for _, scope := range []string{"global", "convention"} {
			refused(t, mustSend(t, s, http.MethodPut, "/api/v0/users/1002/roles/1", tracker, `{"scope":"`+scope+`"}`))
		}
		if after := rolesOf(t, "1002"); after != before || strings.Contains(after, `"admin"`) {
			t.Fatalf("bob's roles changed: %s → %s", before, after)
		}
		var roles []struct {
			ID           int64
			AppsMayGrant bool
		}
		if commandJSON(t, s, &roles, "users", "roles", "list"); len(roles) == 0 || roles[0].ID != 1 || roles[0].AppsMayGrant {
			t.Fatalf("the operator's role list should show that apps may not grant admin: %+v", roles)
		}
	})
	t.Run("nor take admin from an admin", func(t *testing.T) {
		refused(t, mustSend(t, s, http.MethodDelete, "/api/v0/users/1001/roles/1", tracker, ""))
		if got := rolesOf(t, "1001"); !strings.Contains(got, `"admin"`) {
			t.Fatalf("alice lost admin: %s", got)
		}
	})
	t.Run("a role marked grantable is granted and removed as before", func(t *testing.T) {
		if r := mustSend(t, s, http.MethodPut, "/api/v0/users/1002/roles/2", tracker, `{"scope":"convention"}`); r.status != http.StatusNoContent {
			t.Fatalf("granting staff: %d %s", r.status, r.body)
		}
		if r := mustSend(t, s, http.MethodDelete, "/api/v0/users/1002/roles/2", tracker, ""); r.status != http.StatusNoContent {
			t.Fatalf("removing staff: %d %s", r.status, r.body)
		}
	})
	t.Run("once an operator marks admin grantable, the app may grant it", func(t *testing.T) {
		s.Command(t, "users", "roles", "mark-grantable", "1")
		if r := mustSend(t, s, http.MethodPut, "/api/v0/users/1002/roles/1", tracker, `{"scope":"global"}`); r.status != http.StatusNoContent {
			t.Fatalf("granting admin after marking it: %d %s", r.status, r.body)
		}
		s.Command(t, "users", "roles", "unmark-grantable", "1")
		refused(t, mustSend(t, s, http.MethodDelete, "/api/v0/users/1002/roles/1", tracker, ""))
	})
}

// TestARoleRemovalReachesAuthOnceItIsBack: a role removed while auth is
// unreachable still ends what the role allowed apps to do. carol (1003)
// authorized the Staff Console to read registrations through her staff role;
// auth is stopped, an operator takes the role, auth starts again: the notice
// written with the removal (outbox, decision 0090) reaches auth, which
// revokes the authorization, and her access token is refused at the resource
// services long before it expires (ACCESS_TOKEN_TTL, 1 h), without any refresh.
func TestARoleRemovalReachesAuthOnceItIsBack(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	staff := authApp(s.GatewayURL, authStaffID, authStaffSecret, "pii:basic", "registration:read")
	tok := userToken(t, s.GatewayURL, staff, authCarol, authCarolPass)
	const registration = "/api/v0/users/1003/registration"
	if r := mustSend(t, s, http.MethodGet, registration, tok.AccessToken, ""); r.status != http.StatusOK {
		t.Fatalf("before: %d", r.status)
	}

	auth := s.Services["auth"]
	auth.Stop()
	defer func() {
		if !auth.Running() { // after a failure: leave a working system
			auth.Restart(t)
		}
	}()
	// The command's immediate notice fails (auth is down); the removal stands.
	if out := s.Command(t, "users", "roles", "revoke", "1003", "2"); !strings.Contains(out, "no longer has role 2") {
		t.Fatalf("revoke: %s", out)
	}
	auth.Restart(t)
	took := waitForStatus(t, s, registration, tok.AccessToken, http.StatusUnauthorized, 60*time.Second)
	t.Logf("refused %v after auth came back", took.Round(time.Millisecond))
}
