package dealerapi_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/dealers/internal/cli"
	"github.com/eventreg/eventreg/services/dealers/internal/dealerapi"
)

func TestEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	token := e.Tokens.Service(t, "vendor:read")
	render := dealerapi.RenderEvents(e.UsersClient())

	// searchOne is the dealer as the search renders it: the events carry it
	// byte for byte.
	searchOne := func(t testing.TB, id int64) []byte {
		t.Helper()
		var p struct{ Data []json.RawMessage }
		e.Search(t, token, `{"limit": 100}`).JSON(t, &p)
		for _, d := range p.Data {
			var head struct{ ID string }
			if err := json.Unmarshal(d, &head); err == nil && head.ID == strconv.FormatInt(id, 10) {
				return d
			}
		}
		t.Fatalf("dealer %d is not in the search", id)
		return nil
	}
	events := resourcetest.NewEvents(e.Env, render, "dealer", e.Store.Get, searchOne)
	expect := events.Expect
	t.Run("an import writes dealer-updated for inserted and changed dealers only", func(t *testing.T) {
		e.importDealers(t, convention, inkwell(), doodles())
		expect(t, "dealer-updated dealer:2026:11", "dealer-updated dealer:2026:12")
		e.importDealers(t, convention, inkwell(), doodles())
		expect(t)
		d := doodles()
		d.Applications[0].TableNumber = ptr("B-3")
		e.importDealers(t, convention, inkwell(), d)
		expect(t, "dealer-updated dealer:2026:12")
	})
	t.Run("set-status and delete-application write dealer-updated; refusals write nothing", func(t *testing.T) {
		if out, err := e.RunCLI(t, cli.Root(), "set-status", "102", "waitlisted"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		expect(t, "dealer-updated dealer:2026:12")
		if out, err := e.RunCLI(t, cli.Root(), "delete-application", "101"); err == nil || !strings.Contains(err.Error(), "logic error 4") {
			t.Fatalf("deleting an approved application: %v %s", err, out)
		}
		if out, err := e.RunCLI(t, cli.Root(), "set-status", "101", "pending"); err == nil || !strings.Contains(err.Error(), "logic error 2") {
			t.Fatalf("approved → pending: %v %s", err, out)
		}
		expect(t)
		if out, err := e.RunCLI(t, cli.Root(), "delete-application", "102"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		expect(t, "dealer-updated dealer:2026:12")
	})
	t.Run("the import command and the relay publish what the search shows", func(t *testing.T) {
		doc := `{"dealers": [{"id": 12, "userId": 1002, "name": "Doodles & Co", "addressLine1": "9 Elm St", "addressCity": "Shelbyville",
			"addressZipcode": "1010", "addressState": "", "addressCountry": "AT"}]}`
		events.ExpectPublished(t, "dealer-updated", 12, func() {
			if out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, doc)); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		})
	})
}

const adminFixture = `{
  "conventionId": "2026",
  "dealers": [
    {"id": 11, "userId": 1001, "name": "Inkwell", "addressLine1": "1 Main St", "addressCity": "Springfield",
     "addressZipcode": "62701", "addressState": "IL", "addressCountry": "US",
     "applications": [{"id": 101, "status": "pending", "tableType": {"id": "31", "name": "table", "paid": true},
                       "dealerArea": {"id": 1, "name": "Dealers' Den"}}]}
  ]
}`

func TestAdminCommands(t *testing.T) {
	e := newEnv(t, envOptions{})
	token := e.Tokens.Service(t, "vendor:read")
	file := resourcetest.WriteFixture(t, adminFixture)
	if out, err := e.RunCLI(t, cli.Root(), "import", file); err != nil || !strings.Contains(out, "1 inserted") {
		t.Fatalf("import: %v %s", err, out)
	}
	e.Users.Add(usersclienttest.User(1001))
	t.Run("importing the same file again changes nothing", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "import", "-o", "json", file)
		var res map[string]any
		if err != nil || json.Unmarshal([]byte(out), &res) != nil || res["unchanged"] != float64(1) {
			t.Fatalf("%v %s", err, out)
		}
	})
	t.Run("list and show print the dealer and its applications", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "list")
		if err != nil || !strings.Contains(out, `dealer 11 "Inkwell" (user 1001)`) || !strings.Contains(out, "application 101: pending, Dealers' Den") {
			t.Fatalf("%v %s", err, out)
		}
		out, err = e.RunCLI(t, cli.Root(), "show", "11", "-o", "json")
		var d struct {
			ID           int64
			Applications []struct{ ID int64 }
		}
		if err != nil || json.Unmarshal([]byte(out), &d) != nil || d.ID != 11 || len(d.Applications) != 1 {
			t.Fatalf("%v %s", err, out)
		}
	})
	t.Run("set-status is visible at once in the search", func(t *testing.T) {
		out, err := e.RunCLI(t, cli.Root(), "set-status", "101", "approved", "-o", "json")
		if err != nil || !strings.Contains(out, `"changed": true`) {
			t.Fatalf("%v %s", err, out)
		}
		if r := e.Search(t, token, `{}`); !strings.Contains(string(r.Body), `"status":"approved"`) {
			t.Fatalf("search: %s", r.Body)
		}
	})
	t.Run("commands refuse bad input and change nothing", func(t *testing.T) {
		for _, args := range [][]string{
			{"set-status", "101", "paid"},
			{"set-status", "abc", "approved"},
			{"set-status", "999", "approved"},
			{"set-status", "101", "waitlisted"},
			{"delete-application", "101"},
			{"delete-application", "0"},
			{"show", "999"},
		} {
			if out, err := e.RunCLI(t, cli.Root(), args...); err == nil {
				t.Errorf("%v passed: %s", args, out)
			}
		}
		if r := e.Search(t, token, `{}`); !strings.Contains(string(r.Body), `"status":"approved"`) {
			t.Fatalf("search: %s", r.Body)
		}
	})
}
