package registrationapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/registrations/internal/cli"
)

const demoFixture = `{
  "conventionId": "2026",
  "users": [{"id": 1001, "username": "alice", "email": "a@example.org", "emailVerified": true, "identityVerified": true,
             "firstName": "A", "lastName": "L", "bornAt": "1990-01-01", "newsletter": false}],
  "registrations": [
    {"userId": 1001, "badgeName": "Al", "status": "unpaid", "productId": "7", "productName": "Sponsor",
     "options": [{"name": "Days", "type": "multi", "value": ["Fri"]}]},
    {"userId": 1002, "badgeName": "Bob", "status": "paid", "orderId": "77", "productId": "5", "productName": "Attendee"}
  ]
}`

func TestAdminCommandsAreVisibleAtOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.Users.Add(usersclienttest.User(1001), usersclienttest.User(1002))
	token := e.Tokens.Service(t, "registration:read")
	file := resourcetest.WriteFixture(t, demoFixture)
	if out, err := e.RunCLI(t, cli.Root(), "import", file); err != nil || !strings.Contains(out, "2 inserted") {
		t.Fatalf("import: %v %s", err, out)
	}
	before := e.Get(t, "/api/v0/users/1001/registration", token)
	var reg registrationBody
	before.JSON(t, &reg)

	t.Run("importing the same file again changes nothing", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "import", "-o", "json", file)
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil || res["unchanged"] != float64(2) || res["inserted"] != float64(0) {
			t.Fatalf("%v %s", err, out)
		}
		var again registrationBody
		e.Get(t, "/api/v0/users/1001/registration", token).JSON(t, &again)
		if again.UpdatedAt != reg.UpdatedAt {
			t.Fatalf("updatedAt moved from %s to %s", reg.UpdatedAt, again.UpdatedAt)
		}
	})
	t.Run("record-payment makes it paid with the order and a new updatedAt", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "record-payment", "1001", "--order-id", "9001")
		if err != nil || !strings.Contains(out, "status paid") {
			t.Fatalf("%v %s", err, out)
		}
		var got registrationBody
		e.Get(t, "/api/v0/users/1001/registration", token).JSON(t, &got)
		if got.Status != "paid" || got.Order == nil || got.Order.OrderID != "9001" || !later(t, got.UpdatedAt, reg.UpdatedAt) {
			t.Fatalf("after payment: %+v (before %s)", got, reg.UpdatedAt)
		}
		reg = got
	})
	t.Run("set-status unpaid is visible with a new updatedAt", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "set-status", "1001", "unpaid", "-o", "json")
		if err != nil || !strings.Contains(out, `"status": "unpaid"`) {
			t.Fatalf("%v %s", err, out)
		}
		var got registrationBody
		e.Get(t, "/api/v0/users/1001/registration", token).JSON(t, &got)
		if got.Status != "unpaid" || !later(t, got.UpdatedAt, reg.UpdatedAt) {
			t.Fatalf("after set-status: %+v (before %s)", got, reg.UpdatedAt)
		}
	})
	t.Run("admin commands refuse bad input", func(t *testing.T) {
		for _, args := range [][]string{
			{"set-status", "1001", "refunded"},
			{"set-status", "abc", "paid"},
			{"set-status", "4242", "paid"},
			{"record-payment", "1001", "--order-id", " "},
			{"record-payment", "1001"},
			{"set-status", "1001", "paid", "--convention", "1999"},
		} {
			if out, err := e.RunCLI(t, cli.Root(), args...); err == nil {
				t.Errorf("%v succeeded: %s", args, out)
			}
		}
	})
	t.Run("a file with a bad record is refused whole, naming record and field", func(t *testing.T) {
		bad := strings.Replace(strings.Replace(demoFixture, `"badgeName": "Bob"`, `"badgeName": "Bobby"`, 1),
			`"value": ["Fri"]`, `"value": "Fri"`, 1)
		_, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, bad))
		if err == nil || !strings.Contains(err.Error(), "registrations[0] (userId 1001): options[0].value") {
			t.Fatalf("err %v", err)
		}
		var got registrationBody
		e.Get(t, "/api/v0/users/1002/registration", token).JSON(t, &got)
		if got.BadgeName != "Bob" {
			t.Fatalf("a refused file changed data: badge %q", got.BadgeName)
		}
	})
	t.Run("an unknown field anywhere is refused", func(t *testing.T) {
		bad := strings.Replace(demoFixture, `"badgeName": "Bob"`, `"badgeName": "Bob", "colour": "red"`, 1)
		if _, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, bad)); err == nil || !strings.Contains(err.Error(), "colour") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a changed record is updated in place", func(t *testing.T) {
		changed := strings.Replace(demoFixture, `"badgeName": "Bob"`, `"badgeName": "Robert"`, 1)
		out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, changed))
		// 1001 was changed by the commands above, so the file sets it back too.
		if err != nil || !strings.Contains(out, "0 inserted, 2 updated, 0 unchanged") {
			t.Fatalf("%v %s", err, out)
		}
		var got registrationBody
		e.Get(t, "/api/v0/users/1002/registration", token).JSON(t, &got)
		if got.BadgeName != "Robert" {
			t.Fatalf("badge %q", got.BadgeName)
		}
	})
}

func later(t *testing.T, a, b string) bool {
	t.Helper()
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	if err1 != nil || err2 != nil {
		t.Fatalf("timestamps %q %q", a, b)
	}
	return ta.After(tb)
}
