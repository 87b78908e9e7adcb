package registrationapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
)

// userToken is an OBO token of user (the tests' issuer signs for any subject).
func (e *env) userToken(t *testing.T, user string, scopes ...string) string {
	t.Helper()
	return e.Tokens.Sign(t, user, time.Now().Add(time.Hour), scopes...)
}

// TestSelfScopes: con:read reads the token's own registration and
// pii:finance:read its own orders; another user's id is a 403 whatever the
// other user has, answered before any read.
func TestSelfScopes(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.importRegs(t, convention, alice(), bob())
	e.importRegs(t, "2025", fixture.Registration{UserID: 1001, BadgeName: "Al", Status: "paid", OrderID: ptr("501"), ProductID: "1", ProductName: "Weekend"})
	alice := e.userToken(t, "1001", "pii:basic", "con:read", "pii:finance:read")
	bob := e.userToken(t, "1002", "con:read", "pii:finance:read")

	t.Run("con:read reads the token's own registration", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/registration", alice)
		var got registrationBody
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r.JSON(t, &got)
		if got.BadgeName != "Al the Great" || got.User.ID != "1001" {
			t.Fatalf("%s", r.Body)
		}
	})
	forbidden := func(t *testing.T, r response) {
		t.Helper()
		if r.Status != http.StatusForbidden || !strings.Contains(r.ErrorMessage(t, "access"), "only its own user") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	t.Run("con:read with another user's id is 403, whether that user has a registration or not", func(t *testing.T) {
		reads := len(e.Users.Calls())
		forbidden(t, e.Get(t, "/api/v0/users/1002/registration", alice))
		forbidden(t, e.Get(t, "/api/v0/users/4242/registration", alice))
		forbidden(t, e.Get(t, "/api/v0/users/current/registration", alice))
		if len(e.Users.Calls()) != reads {
			t.Fatal("a refused request reached the users service")
		}
	})
	t.Run("con:read in a service token reads nothing", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/registration", e.Tokens.Service(t, "con:read"))
		if r.Status != http.StatusForbidden || r.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("an OBO token without con:read is refused for its own registration", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/registration", e.userToken(t, "1001", "pii:basic", "pii:finance:read"))
		if r.Status != http.StatusForbidden || !strings.Contains(r.ErrorMessage(t, "access"), "registration:read") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("registration:read still reads any user's", func(t *testing.T) {
		if r := e.Get(t, "/api/v0/users/1002/registration", e.Tokens.Service(t, "registration:read")); r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("con:read does not open the search", func(t *testing.T) {
		if r := e.Search(t, alice, `{}`); r.Status != http.StatusForbidden {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})

	type ordersBody struct {
		Data []struct {
			ID, ConventionID, Status, CreatedAt, UpdatedAt string
			Items                                          []struct {
				ProductID, ProductName string
				ProductDisplayName     *string
			}
		}
	}
	t.Run("pii:finance:read reads the token's own orders in every convention, oldest first", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/orders", alice)
		r.Expect(t, http.StatusOK)
		var got ordersBody
		r.JSON(t, &got)
		if len(got.Data) != 2 {
			t.Fatalf("%s", r.Body)
		}
		ids := map[string]string{}
		for _, o := range got.Data {
			ids[o.ConventionID] = o.ID
			if o.Status != "paid" || len(o.Items) != 1 || o.Items[0].ProductID == "" {
				t.Errorf("order %+v", o)
			}
		}
		if ids["2026"] != "601" || ids["2025"] != "501" {
			t.Fatalf("orders %v", ids)
		}
		if got.Data[0].CreatedAt > got.Data[1].CreatedAt {
			t.Fatalf("not oldest first: %s", r.Body)
		}
	})
	t.Run("a user without orders gets an empty list", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1002/orders", bob)
		if r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != `{"data":[]}` {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("pii:finance:read with another user's id is 403", func(t *testing.T) {
		forbidden(t, e.Get(t, "/api/v0/users/1001/orders", bob))
		forbidden(t, e.Get(t, "/api/v0/users/9999/orders", bob))
	})
	t.Run("con:read does not read orders, pii:finance:read not the registration", func(t *testing.T) {
		if r := e.Get(t, "/api/v0/users/1001/orders", e.userToken(t, "1001", "con:read")); r.Status != http.StatusForbidden {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if r := e.Get(t, "/api/v0/users/1001/registration", e.userToken(t, "1001", "pii:finance:read")); r.Status != http.StatusForbidden {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("order:view reads any user's orders", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/orders", e.Tokens.Service(t, "order:view"))
		var got ordersBody
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r.JSON(t, &got)
		if len(got.Data) != 2 {
			t.Fatalf("%s", r.Body)
		}
	})
	t.Run("registration:read does not read orders", func(t *testing.T) {
		if r := e.Get(t, "/api/v0/users/1001/orders", e.Tokens.Service(t, "registration:read")); r.Status != http.StatusForbidden {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("a malformed id with order:view is 404", func(t *testing.T) {
		if r := e.Get(t, "/api/v0/users/abc/orders", e.Tokens.Service(t, "order:view")); r.Status != http.StatusNotFound {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("no token is 401", func(t *testing.T) {
		if r := e.Get(t, "/api/v0/users/1001/orders", ""); r.Status != http.StatusUnauthorized {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
