package volunteerapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/volunteers/internal/cli"
)

const fixtureDoc = `{
  "registrations": [{"userId": 1001, "badgeName": "Al", "status": "paid", "productId": "7", "productName": "Sponsor"}],
  "departments": [
    {"id": 10, "name": "Registration", "email": "reg@example.org", "publiclyVisible": true, "leads": [1003]},
    {"id": 11, "name": "Security", "email": "security@example.org", "publiclyVisible": true}
  ],
  "volunteers": [
    {"userId": 1003, "contactMethods": [{"name": "discord", "value": "carol#0003", "isPrimary": true}],
     "departments": [{"id": 10, "states": ["experience", "assignment"]}],
     "options": [{"name": "Shirt size", "type": "select", "value": "M"}, {"name": "Pronouns", "type": "free", "value": "she/her"}]},
    {"userId": 1002, "departments": [{"id": 11, "states": ["interest", "request"]}]}
  ]
}`

func TestImportCommand(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.Users.Add(usersclienttest.User(1002), usersclienttest.User(1003))
	token := e.Tokens.Service(t, "volunteer:read")
	file := resourcetest.WriteFixture(t, fixtureDoc)
	out, err := e.RunCLI(t, cli.Root(), "import", file)
	if err != nil || !strings.Contains(out, "departments: 2 inserted") || !strings.Contains(out, "volunteers of convention 2026: 2 inserted") {
		t.Fatalf("%v %s", err, out)
	}
	var before volunteerBody
	e.Get(t, "/api/v0/users/1003/volunteer", token).JSON(t, &before)

	t.Run("importing the same file again changes nothing", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "import", "-o", "json", file)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Departments, Volunteers map[string]int
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Volunteers["unchanged"] != 2 || res.Departments["unchanged"] != 2 {
			t.Fatalf("%v %s", err, out)
		}
		var after volunteerBody
		e.Get(t, "/api/v0/users/1003/volunteer", token).JSON(t, &after)
		if after.UpdatedAt != before.UpdatedAt {
			t.Fatalf("updatedAt moved: %s → %s", before.UpdatedAt, after.UpdatedAt)
		}
	})
	t.Run("the conventionId of the file decides the convention", func(t *testing.T) {
		doc := strings.Replace(fixtureDoc, `{`, `{"conventionId": "2030",`, 1)
		if out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, doc)); err != nil || !strings.Contains(out, "convention 2030: 2 inserted") {
			t.Fatalf("%v %s", err, out)
		}
	})
	bad := []struct{ name, from, to, want string }{
		{"an unknown department", `{"id": 11, "states": ["interest", "request"]}`, `{"id": 99, "states": ["interest"]}`, "volunteers[1] (userId 1002): departments[0].id 99"},
		{"an unknown state", `["interest", "request"]`, `["interest", "bored"]`, "volunteers[1] (userId 1002): departments[0].states[1]"},
		{"a bad option value", `"value": "M"`, `"value": {"size": "M"}`, "volunteers[0] (userId 1003): options[0].value"},
		{"a known option type with the wrong value", `"value": "M"`, `"value": 3`, "volunteers[0] (userId 1003): options[0].value"},
		{"a department without email", `"email": "security@example.org"`, `"email": ""`, "departments[1] (id 11): email"},
		{"a duplicate volunteer", `{"userId": 1002,`, `{"userId": 1003,`, "volunteers[1] (userId 1003): userId appears twice"},
	}
	for _, tc := range bad {
		t.Run("refuses the whole file for "+tc.name, func(t *testing.T) {
			doc := strings.Replace(strings.Replace(fixtureDoc, `"name": "Registration"`, `"name": "Changed"`, 1), tc.from, tc.to, 1)
			if doc == fixtureDoc {
				t.Fatal("the test did not change the file")
			}
			_, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
			var deps []struct{ Name string }
			e.Get(t, "/api/v0/volunteers/departments", token).JSON(t, &deps)
			if deps[0].Name != "Registration" {
				t.Fatal("a refused file changed a department")
			}
		})
	}
}
