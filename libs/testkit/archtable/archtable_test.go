package archtable

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestHandlerName(t *testing.T) {
	for full, want := range map[string]string{
		"github.com/eventreg/eventreg/services/users/internal/userapi.(*handlers).getUser-fm": "userapi.getUser",
		"github.com/eventreg/eventreg/services/users/internal/userapi.rootPage":               "userapi.rootPage",
		"github.com/eventreg/eventreg/services/auth/internal/server.jwks.func1":               "server.jwks",
		"github.com/gin-gonic/gin.WrapH.func1":                                                "gin.WrapH",
	} {
		if got := HandlerName(full); got != want {
			t.Errorf("HandlerName(%s) = %s, want %s", full, got, want)
		}
	}
	if !handles("github.com/eventreg/eventreg/services/users/internal/userapi.Register.Handler.func1", "apispec.Handler") {
		t.Error("a closure inlined into its caller is not matched by the function that returns it")
	}
}

// usersRoutes registers what the table says users registers, as gin would
// name the handlers; rename maps a handler to another.
func usersRoutes(t *testing.T, doc []byte, rename map[string]string) []gin.RouteInfo {
	t.Helper()
	rows, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	var routes []gin.RouteInfo
	for _, r := range rows {
		if r.Owner != "users" && r.ForwardedBy != "users" {
			continue
		}
		h := r.Handler
		if r.ForwardedBy == "users" {
			h = "gin.WrapH"
		}
		if to, ok := rename[h]; ok {
			h = to
		}
		pkg, fn, _ := strings.Cut(h, ".")
		routes = append(routes, gin.RouteInfo{Method: r.Method, Path: param.ReplaceAllString(r.Path, ":$1"),
			Handler: "github.com/eventreg/eventreg/x/" + pkg + ".(*handlers)." + fn + "-fm"})
	}
	return routes
}

// TestWrongRowsFail: the table as it is passes for users; each wrong row
// makes the check fail, saying why.
func TestWrongRowsFail(t *testing.T) {
	root, err := testkit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if p := Problems(root, doc, "users", usersRoutes(t, doc, nil)); len(p) > 0 {
		t.Fatalf("the table as it is: %q", p)
	}
	mutate := func(old, new string) []byte {
		if !strings.Contains(string(doc), old) {
			t.Fatalf("docs/architecture.md holds no %q", old)
		}
		return []byte(strings.Replace(string(doc), old, new, 1))
	}
	getUser := "| `userapi.getUser` | `user.Service.Get` via `user.Service.fetchByID` | `userdb.Store.Get`, `userdb.Store.GetMany` |"
	cases := []struct {
		name   string
		doc    []byte
		rename map[string]string
		want   string
	}{
		{"a store method the business does not call",
			mutate(getUser, "| `userapi.getUser` | `user.Service.Get` via `user.Service.fetchByID` | `userdb.Store.Search` |"),
			nil, "calls userdb.Store.Search"},
		{"an indirect call without its via",
			mutate(getUser, "| `userapi.getUser` | `user.Service.Get` | `userdb.Store.Get` |"),
			nil, "calls userdb.Store.Get"},
		{"a business method that does not exist",
			mutate("| `user.Service.Search` |", "| `user.Service.Find` |"),
			nil, "user.Service.Find does not exist"},
		{"a business method the handler does not call",
			mutate("| `role.Service.List` | `roledb.Store.List` |", "| `role.Service.Grant` | `roledb.Store.Grant` |"),
			nil, "does not call role.Service.Grant"},
		{"a store method that does not exist",
			mutate("| `roledb.Store.List` |", "| `roledb.Store.Roles` |"),
			nil, "roledb.Store.Roles does not exist"},
		{"another handler registered",
			doc, map[string]string{"userapi.getUser": "userapi.searchUsers"}, "handled by userapi.searchUsers, not userapi.getUser"},
		{"a package that is not in the tree",
			mutate("| `roledb.Store.List` |", "| `rolestore.Store.List` |"),
			nil, "package rolestore: 0 directories"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			routes := usersRoutes(t, doc, c.rename)
			p := Problems(root, c.doc, "users", routes)
			if !strings.Contains(strings.Join(p, "\n"), c.want) {
				t.Errorf("want a problem saying %q, got %q", c.want, p)
			}
		})
	}
}
