package registrationapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/services/registrations/internal/cli"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationapi"
)

func TestEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	token := e.Tokens.Service(t, "registration:read")
	render := registrationapi.RenderEvents(e.UsersClient())

	// The events carry the registration as the read API shows it.
	events := resourcetest.NewEvents(e.Env, render, "registration", e.Store.Get, func(t testing.TB, uid int64) []byte {
		return e.Get(t, "/api/v0/users/"+strconv.FormatInt(uid, 10)+"/registration", token).Body
	})
	expect := events.Expect
	al := fixture.Registration{UserID: 1001, BadgeName: "Al", Status: "unpaid", ProductID: "7", ProductName: "Sponsor",
		ProductDisplayName: ptr("Sponsor <3"), Options: []fixture.Option{{Name: "Days", Type: "multi", Value: json.RawMessage(`["Fri", "Sat"]`)},
			{Name: "Hours", Type: "number", Value: json.RawMessage(`1.50`)}},
		Flags: []fixture.Flag{{ID: "3", ShortName: "VIP"}}}
	bob := fixture.Registration{UserID: 1002, BadgeName: "Bob", Status: "paid", OrderID: ptr("77"), ProductID: "5", ProductName: "Attendee"}

	t.Run("an import writes registration-updated for inserted and changed registrations only", func(t *testing.T) {
		e.importRegs(t, convention, al, bob)
		expect(t, "registration-updated registration:2026:1001", "registration-updated registration:2026:1002")
		e.importRegs(t, convention, al, bob)
		expect(t)
		b := bob
		b.BadgeName = "Robert"
		e.importRegs(t, convention, al, b)
		expect(t, "registration-updated registration:2026:1002")
		e.importRegs(t, "2025", al)
		expect(t, "registration-updated registration:2025:1001")
	})
	t.Run("a failed import writes no event", func(t *testing.T) {
		regs, err := registration.FromFixture(convention, []fixture.Registration{bob})
		if err != nil {
			t.Fatal(err)
		}
		broken := regs[0]
		broken.UserID, broken.Status = 1003, "refunded" // refused by the database
		if _, err := e.Store.Import(ctx, append(regs, broken)); err == nil {
			t.Fatal("the import passed")
		}
		expect(t)
	})
	t.Run("set-status and record-payment write registration-updated", func(t *testing.T) {
		if out, err := e.RunCLI(t, cli.Root(), "record-payment", "1001", "--order-id", "9001"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		expect(t, "registration-updated registration:2026:1001")
		if out, err := e.RunCLI(t, cli.Root(), "set-status", "1001", "unpaid"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		expect(t, "registration-updated registration:2026:1001")
		if _, err := e.RunCLI(t, cli.Root(), "set-status", "4242", "paid"); err == nil {
			t.Fatal("an unknown registration was changed")
		}
		expect(t)
	})
	t.Run("a user the users service does not know is rendered with its id alone", func(t *testing.T) {
		regs, err := registration.FromFixture(convention, []fixture.Registration{{UserID: 1099, BadgeName: "X", Status: "paid", ProductID: "1", ProductName: "P"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.Import(ctx, regs); err != nil {
			t.Fatal(err)
		}
		if user := outboxtest.RenderedUser(t, e.Pool, render); user["id"] != "1099" || user["email"] != "" || user["preferredName"] != nil {
			t.Fatalf("user %v", user)
		}
		e.Users.Add(usersclienttest.User(1099))
		expect(t, "registration-updated registration:2026:1099")
	})
	t.Run("the import command and the relay publish what the read API shows", func(t *testing.T) {
		doc := `{"registrations": [{"userId": 1002, "badgeName": "Bobby", "status": "paid", "orderId": "77", "productId": "5", "productName": "Attendee"}]}`
		events.ExpectPublished(t, "registration-updated", 1002, func() {
			if out, err := e.RunCLI(t, cli.Root(), "import", resourcetest.WriteFixture(t, doc)); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		})
	})
}
