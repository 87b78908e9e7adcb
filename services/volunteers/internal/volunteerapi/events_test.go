package volunteerapi_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/volunteers/internal/cli"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerapi"
)

func TestEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	token := e.Tokens.Service(t, "volunteer:read")
	render := volunteerapi.RenderEvents(e.UsersClient())

	// The events carry the record as the read API shows it.
	events := resourcetest.NewEvents(e.Env, render, "volunteer", e.Store.Get, func(t testing.TB, uid int64) []byte {
		return e.Get(t, "/api/v0/users/"+strconv.FormatInt(uid, 10)+"/volunteer", token).Body
	})
	expect := events.Expect

	t.Run("an import writes submitted for new records", func(t *testing.T) {
		e.load(t, convention, demoDepartments, carol(), bob())
		expect(t, "volunteer-submitted volunteer:2026:1002", "volunteer-submitted volunteer:2026:1003")
	})
	t.Run("importing the same records again writes nothing", func(t *testing.T) {
		e.load(t, convention, demoDepartments, carol(), bob())
		expect(t)
	})
	t.Run("assignment gained, lost, both, and other changes", func(t *testing.T) {
		c := carol() // 11 interest, 10 experience+assignment
		c.Departments = []fixture.DepartmentChoice{{ID: 11, States: []string{"interest", "assignment"}}, {ID: 10, States: []string{"experience"}}}
		b := bob()
		b.ContactMethods = []fixture.ContactMethod{{Name: "email", Value: "bob@example.org", IsPrimary: true}}
		dave := fixture.Volunteer{UserID: 1004, Departments: []fixture.DepartmentChoice{{ID: 12, States: []string{"assignment"}}}}
		res := e.load(t, convention, demoDepartments, c, b, dave)
		if res.Inserted != 1 || res.Updated != 2 {
			t.Fatalf("%+v", res)
		}
		expect(t, "volunteer-updated volunteer:2026:1002",
			"volunteer-unassigned volunteer:2026:1003", "volunteer-assigned volunteer:2026:1003",
			"volunteer-submitted volunteer:2026:1004")

		b.Departments = []fixture.DepartmentChoice{{ID: 12, States: []string{"avoid"}}, {ID: 10, States: []string{"assignment"}}}
		dave.Departments = nil
		e.load(t, convention, demoDepartments, c, b, dave)
		expect(t, "volunteer-assigned volunteer:2026:1002", "volunteer-unassigned volunteer:2026:1004")
	})
	t.Run("a failed import writes no event", func(t *testing.T) {
		changed := carol()
		d, v, err := volunteer.FromFixture(convention, nil, []fixture.Volunteer{changed}, []int64{10, 11, 12})
		if err != nil {
			t.Fatal(err)
		}
		broken := v[0]
		broken.ConventionID = "" // refused by the database, after the change to carol
		if _, err := e.Store.Import(ctx, d, append(v, broken)); err == nil {
			t.Fatal("the import passed")
		}
		expect(t)
	})
	t.Run("a user the users service does not know is rendered with its id alone", func(t *testing.T) {
		_, v, err := volunteer.FromFixture(convention, nil, []fixture.Volunteer{{UserID: 1099}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.Import(ctx, nil, v); err != nil {
			t.Fatal(err)
		}
		if user := outboxtest.RenderedUser(t, e.Pool, render); user["id"] != "1099" || user["username"] != "" || user["phone"] != nil {
			t.Fatalf("user %v", user)
		}
		e.Users.Add(usersclienttest.User(1099))
		expect(t, "volunteer-submitted volunteer:2026:1099")
	})
	t.Run("volunteers delete writes volunteer-deleted with the last state", func(t *testing.T) {
		before := e.Get(t, "/api/v0/users/1003/volunteer", token)
		last, err := e.Store.Get(ctx, convention, 1003)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.RunCLI(t, cli.Root(), "delete", "1003")
		if err != nil || !strings.Contains(out, "deleted the volunteer record of user 1003 in convention 2026") {
			t.Fatalf("%v %s", err, out)
		}
		rows := outboxtest.Rows(t, e.Pool)
		if got := outboxtest.Types(rows); !slices.Equal(got, []string{"volunteer-deleted volunteer:2026:1003"}) {
			t.Fatalf("events %q", got)
		}
		outboxtest.SamePayload(t, rows[0], last)
		data, err := render(ctx, rows)
		if err != nil {
			t.Fatal(err)
		}
		outboxtest.SameAsRead(t, rows[0].Resource, data[0], before.Body)
		if r := e.Get(t, "/api/v0/users/1003/volunteer", token); r.Status != 404 {
			t.Fatalf("status %d after delete", r.Status)
		}
		outboxtest.Clear(t, e.Pool)

		for _, args := range [][]string{{"delete", "1003"}, {"delete", "4242", "--convention", "2025"}, {"delete", "abc"}} {
			if _, err := e.RunCLI(t, cli.Root(), args...); err == nil {
				t.Fatalf("%v succeeded", args)
			}
		}
		if _, err := e.RunCLI(t, cli.Root(), "delete", "1003"); err == nil || !strings.Contains(err.Error(), "user 1003 has no volunteer record in convention 2026") {
			t.Fatalf("err %v", err)
		}
		expect(t)
	})
	t.Run("the relay publishes what the read API shows", func(t *testing.T) {
		events.ExpectPublished(t, "volunteer-submitted", 1003, func() {
			e.load(t, convention, demoDepartments, carol())
		})
	})
}
