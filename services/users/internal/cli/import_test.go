package cli_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

// TestImportTellsAuthOfNarrowedPermissions: an import that takes a role
// from a user, or a permission from a role, tells auth about each user
// concerned once it commits, as `roles revoke` does.
func TestImportTellsAuthOfNarrowedPermissions(t *testing.T) {
	newDemoDatabase(t)
	var mu sync.Mutex
	var told []string
	auth := authDouble(t, func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/internal/users/"), "/permissions-changed")
		if r.Method != http.MethodPost || !ok {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		mu.Lock()
		told = append(told, id)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(authapi.UserChanged{Revoked: 1})
	})
	t.Setenv("AUTH_INTERNAL_URL", auth.URL)
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := told
		told = nil
		slices.Sort(out)
		return out
	}

	doc := usertest.Demo(t)
	t.Run("a lost role and a role's lost permission are told, once each", func(t *testing.T) {
		doc.Users[2].Roles = []fixture.RoleGrant{{ID: 4, Scope: "global"}}                         // carol loses staff
		doc.Roles[2].Permissions = []string{"user:read", "registration:read:pii"}                  // hr (erin) loses user:note:read
		doc.Roles[3].Permissions = append(doc.Roles[3].Permissions, "con:read")                    // user gains one: nobody is narrowed
		doc.Users[0].Roles = append(doc.Users[0].Roles, fixture.RoleGrant{ID: 2, Scope: "global"}) // alice gains staff
		var st map[string]int
		if err := json.Unmarshal([]byte(mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc), "-o", "json")), &st); err != nil {
			t.Fatal(err)
		}
		if st["usersNarrowed"] != 2 || st["membershipsRemoved"] != 1 {
			t.Fatalf("%v", st)
		}
		if got := take(); !slices.Equal(got, []string{"1003", "1005"}) {
			t.Fatalf("auth was told about %q, want 1003 and 1005", got)
		}
		t.Run("the same file again narrows nothing and tells nothing", func(t *testing.T) {
			mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc))
			if got := take(); len(got) != 0 {
				t.Fatalf("told %q", got)
			}
		})
	})
	t.Run("auth unreachable: the import stands and says so", func(t *testing.T) {
		t.Setenv("AUTH_INTERNAL_URL", "http://127.0.0.1:1")
		doc.Users[3].Roles = []fixture.RoleGrant{{ID: 4, Scope: "global"}} // dave loses agreement-signed
		out, err := run(t, "", "import", resourcetest.WriteFixtureJSON(t, doc))
		if err != nil || !strings.Contains(out, "users whose permissions narrowed: 1") {
			t.Fatalf("%v %s", err, out)
		}
		if out := mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc)); !strings.Contains(out, "users: 0 new, 0 updated") {
			t.Fatalf("the import did not commit: %s", out)
		}
	})
}
