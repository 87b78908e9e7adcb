package userapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userapi"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
	"github.com/eventreg/eventreg/services/users/internal/userimport/userimportdb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func TestEvents(t *testing.T) {
	e := newEnv(t, envOptions{}) // the demo fixture imported
	ctx := context.Background()
	up := e.Tokens.Service(t, "user:roles:update")
	read := e.Tokens.Service(t, "user:read")

	// expectEvents checks the waiting events against want ("type resource"),
	// each payload against the user as the store reads it and each rendering
	// against GET /api/v0/users/{id}; then it clears the outbox.
	expectEvents := func(t *testing.T, want ...string) {
		t.Helper()
		outboxtest.Expect(t, e.Pool, userapi.RenderEvents, func(r outbox.Row, data json.RawMessage) {
			id, _ := strconv.ParseInt(strings.TrimPrefix(r.Resource, "user:"), 10, 64)
			if r.Type == role.NarrowedEventType { // a notice for auth, rendered as stored
				if n, err := role.ParseNarrowed(data); err != nil || n.UserID != id {
					t.Fatalf("notice %s: %s %v", r.Resource, data, err)
				}
				return
			}
			stored, err := userdb.New(e.Pool).Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			outboxtest.SamePayload(t, r, stored)
			body := e.Call(t, "GET", "/api/v0/users/"+strconv.FormatInt(id, 10), read, "")
			outboxtest.SameAsRead(t, r.Resource, data, body.Body)
		}, want...)
	}
	load := func(t *testing.T, doc *fixture.Document) (userimport.Stats, error) {
		t.Helper()
		return userimport.Import(ctx, userimportdb.New(e.Pool), doc, usertest.ConventionID, usertest.Fast, nil, nil)
	}

	t.Run("the import of new users wrote one event each", func(t *testing.T) {
		expectEvents(t, "user-updated user:1001", "user-updated user:1002", "user-updated user:1003", "user-updated user:1004", "user-updated user:1005")
	})
	t.Run("PUT and DELETE of a role write user-updated, DELETE the notice for auth; refusals write nothing", func(t *testing.T) {
		e.Call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "convention"}`).Expect(t, 204)
		expectEvents(t, "user-updated user:1002")
		e.Call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "global"}`).Expect(t, 409)
		e.Call(t, "PUT", "/api/v0/users/4242/roles/2", up, `{"scope": "global"}`).Expect(t, 404)
		e.Call(t, "PUT", "/api/v0/users/1002/roles/99", up, `{"scope": "global"}`).Expect(t, 404)
		expectEvents(t)
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/2", up, "").Expect(t, 204)
		expectEvents(t, "user-updated user:1002", "permissions-narrowed user:1002")
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/2", up, "").Expect(t, 404)
		expectEvents(t)
	})
	t.Run("an import writes one event per user whose service view or roles it changes", func(t *testing.T) {
		doc := usertest.Demo(t)
		phone := "+15555550111"
		doc.Users[0].Phone = &phone                                                                // 1001: shown
		doc.Users[1].Newsletter = !doc.Users[1].Newsletter                                         // 1002: not shown
		doc.Users[2].Roles = append(doc.Users[2].Roles, fixture.RoleGrant{ID: 1, Scope: "global"}) // 1003: a role
		doc.Users[3].FirstName += "x"                                                              // 1004: shown, and a role
		doc.Users[3].Roles = []fixture.RoleGrant{}
		doc.Roles[4].Name = "agreement-signed-2" // a role renamed: no user event
		st, err := load(t, doc)
		if err != nil {
			t.Fatal(err)
		}
		if st.UsersUpdated != 3 || st.RolesUpdated != 1 {
			t.Fatalf("stats %+v", st)
		}
		// 1004 lost a membership: auth is told, after the events.
		expectEvents(t, "user-updated user:1001", "user-updated user:1003", "user-updated user:1004", "permissions-narrowed user:1004")
		if _, err := load(t, doc); err != nil {
			t.Fatal(err)
		}
		expectEvents(t)
	})
	t.Run("a refused import writes nothing", func(t *testing.T) {
		doc := usertest.Demo(t)
		doc.Users[0].FirstName = "Changed"
		doc.Users[1].Roles = []fixture.RoleGrant{{ID: 99, Scope: "global"}} // no such role
		if _, err := load(t, doc); err == nil {
			t.Fatal("the import passed")
		}
		expectEvents(t)
	})
	t.Run("the relay publishes what the read API shows", func(t *testing.T) {
		resourcetest.ExpectPublished(t, e.Pool, "users", userapi.RenderEvents, func() {
			e.Call(t, "PUT", "/api/v0/users/1005/roles/2", up, `{"scope": "global"}`).Expect(t, 204)
		}, "user-updated", "user:1005", func() []byte { return e.Call(t, "GET", "/api/v0/users/1005", read, "").Body })
	})
}
