package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
)

// The role ledgers of the reliability tests: which users hold a role, as
// acknowledged through the gateway, checked against the users database.

// rolesHeld reads through the gateway, with token, which of ids hold role.
func rolesHeld(t testing.TB, s *stack.Stack, token, role string, ids []int64) map[int64]bool {
	t.Helper()
	held := map[int64]bool{}
	for _, id := range ids {
		r := mustSend(t, s, http.MethodGet, fmt.Sprintf("/api/v0/users/%d/roles", id), token, "")
		if r.status != http.StatusOK {
			t.Fatalf("roles of %d: %d %s", id, r.status, r.body)
		}
		held[id] = holdsRole(r.body, role)
	}
	return held
}

// holdsRole reports whether a role list body holds role.
func holdsRole(body, role string) bool { return strings.Contains(body, `"id":"`+role+`"`) }

// roleChange is the request that toggles role of user id: DELETE when held,
// else PUT (global). Both are idempotent, so either may be resent.
func roleChange(id int64, role string, held bool) (method, path, body string) {
	path = fmt.Sprintf("/api/v0/users/%d/roles/%s", id, role)
	if held {
		return http.MethodDelete, path, ""
	}
	return http.MethodPut, path, `{"scope": "global"}`
}

// checkMemberships compares the users database with the ledger: each user
// holds role exactly when the ledger says so, and never twice.
func checkMemberships(t testing.TB, s *stack.Stack, role string, held map[int64]bool) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DatabaseURL("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for id, want := range held {
		var n int
		if err := conn.QueryRow(context.Background(),
			"SELECT count(*) FROM role_members WHERE user_id = $1 AND role_id = $2::text::bigint", id, role).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (want && n != 1) || (!want && n != 0) {
			t.Fatalf("user %d role %s: %d rows, ledger says held=%v", id, role, n, want)
		}
	}
}
