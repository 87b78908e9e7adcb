package role_test

import (
	"reflect"
	"testing"

	"github.com/eventreg/eventreg/services/users/internal/role"
)

func TestPermissionsOfIsASortedUnion(t *testing.T) {
	held := []role.Held{
		{Role: role.Role{ID: 2, Permissions: []string{"user:read", "con:read"}}, Scope: role.Convention},
		{Role: role.Role{ID: 4, Permissions: []string{"system:login", "con:read"}}, Scope: role.Global},
		{Role: role.Role{ID: 5, Permissions: []string{}}, Scope: role.Global},
	}
	if got := role.PermissionsOf(held); !reflect.DeepEqual(got, []string{"con:read", "system:login", "user:read"}) {
		t.Fatalf("%v", got)
	}
	if got := role.PermissionsOf(nil); got == nil || len(got) != 0 {
		t.Fatalf("no roles must give an empty list, not null: %#v", got)
	}
}

func TestParseScope(t *testing.T) {
	for s, ok := range map[string]bool{"global": true, "convention": true, "Global": false, "": false, "forever": false} {
		if _, got := role.ParseScope(s); got != ok {
			t.Errorf("ParseScope(%q) = %v", s, got)
		}
	}
}

func TestValidate(t *testing.T) {
	if p := role.Validate(role.Role{ID: 1, Name: "staff", Permissions: []string{"user:read", "registration:read:pii", "con:read"}}); len(p) != 0 {
		t.Fatalf("%v", p)
	}
	for name, r := range map[string]role.Role{
		"no id":              {Name: "x"},
		"empty name":         {ID: 1, Name: " "},
		"permission, spaces": {ID: 1, Name: "x", Permissions: []string{"user read"}},
		"permission, empty":  {ID: 1, Name: "x", Permissions: []string{""}},
		"permission, colon":  {ID: 1, Name: "x", Permissions: []string{"user:"}},
	} {
		if p := role.Validate(r); len(p) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
