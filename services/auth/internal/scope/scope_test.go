package scope

import (
	"slices"
	"testing"

	"github.com/eventreg/eventreg/libs/apispec"
)

func TestParse(t *testing.T) {
	t.Run("repeated fields and spaces mean the same set", func(t *testing.T) {
		a := Parse("user:read registration:read")
		b := Parse("registration:read", "user:read", "user:read")
		if !a.Equal(b) || a.String() != "registration:read user:read" {
			t.Fatalf("%v %v", a, b)
		}
	})
	t.Run("empty input is an empty set", func(t *testing.T) {
		if s := Parse("", "  "); len(s) != 0 {
			t.Fatalf("%v", s)
		}
	})
}

func TestSetRules(t *testing.T) {
	approved := Parse("pii:basic pii:email user:read")
	t.Run("subset", func(t *testing.T) {
		if !Parse("pii:basic").SubsetOf(approved) || Parse("pii:basic volunteer:read").SubsetOf(approved) {
			t.Fatal("subset logic wrong")
		}
	})
	t.Run("unknown scopes are named", func(t *testing.T) {
		if got := Parse("user:write pii:basic").Unknown(); !slices.Equal(got, []string{"user:write"}) {
			t.Fatal(got)
		}
	})
	t.Run("OBO-only scopes are found and removed for client credentials", func(t *testing.T) {
		if got := approved.OBOOnly(); !slices.Equal(got, []string{"pii:basic", "pii:email"}) {
			t.Fatal(got)
		}
		if got := approved.WithoutOBO(); !got.Equal(Set{"user:read"}) {
			t.Fatal(got)
		}
	})
	t.Run("a sensitive scope needs the permission of the same name", func(t *testing.T) {
		if got := approved.Missing([]string{"system:login"}); !slices.Equal(got, []string{"user:read"}) {
			t.Fatal(got)
		}
		if got := approved.Missing([]string{"user:read"}); len(got) != 0 {
			t.Fatal(got)
		}
	})
	t.Run("standing scopes: still approved for the client and, when sensitive, still permitted to the user", func(t *testing.T) {
		granted := Parse("pii:basic registration:read user:read")
		if got := granted.Standing(Parse("pii:basic registration:read user:read"), []string{"registration:read"}); !got.Equal(Set{"pii:basic", "registration:read"}) {
			t.Fatal(got)
		}
		if got := granted.Standing(Parse("pii:basic user:read"), []string{"registration:read", "user:read"}); !got.Equal(Set{"pii:basic", "user:read"}) {
			t.Fatal(got)
		}
		if got := Parse("registration:read").Standing(Parse("registration:read"), nil); got == nil || len(got) != 0 {
			t.Fatalf("nothing left must be an empty set: %#v", got)
		}
	})
	t.Run("catalog is the route table's, mode and sensitivity", func(t *testing.T) {
		// users reads sensitivity from the table (apispec.RouteTable.SensitiveScope)
		// to keep apps from granting roles that carry sensitive permissions.
		table := apispec.Routes().Scopes
		if len(table) != len(catalog) {
			t.Fatalf("endpoints.json has %d scopes, the catalog %d", len(table), len(catalog))
		}
		for _, s := range catalog {
			e, ok := table[s.Name]
			if !ok || e.Mode != string(s.Mode) || e.Sensitive != s.Sensitive || apispec.Routes().SensitiveScope(s.Name) != s.Sensitive {
				t.Errorf("%s: catalog %+v, endpoints.json %+v", s.Name, s, e)
			}
		}
	})
	t.Run("catalog matches the spec's sensitivity", func(t *testing.T) {
		for _, n := range []string{"user:read", "user:roles:update", "volunteer:read", "registration:read"} {
			if s, _ := Lookup(n); !s.Sensitive || s.Mode != ModeService {
				t.Fatalf("%s: %+v", n, s)
			}
		}
		for _, n := range []string{"pii:basic", "pii:address", "pii:email", "pii:phone"} {
			if s, _ := Lookup(n); s.Sensitive || s.Mode != ModeOBO {
				t.Fatalf("%s: %+v", n, s)
			}
		}
		if s, ok := Lookup("webhook:manage"); !ok || s.Sensitive || s.Mode != ModeService || s.Description != "Manage this app's webhook subscriptions" {
			t.Fatalf("webhook:manage: %+v", s)
		}
	})
}
