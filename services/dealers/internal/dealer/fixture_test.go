package dealer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

func ptr[T any](v T) *T { return &v }

func valid() fixture.Dealer {
	return fixture.Dealer{ID: 1, UserID: 1001, Name: "Inkwell", Email: ptr("a@b.example"), AddressLine1: "1 Main St",
		AddressCity: "Springfield", AddressZipcode: "62701", AddressState: "IL", AddressCountry: "US",
		Options: []fixture.DealerOption{{ID: 1, Name: "Phone", Type: "phone", Value: json.RawMessage(` "+1555" `)}},
		Applications: []fixture.DealerApplication{{ID: 10, Status: "pending",
			TableType:          fixture.Product{ID: "5", Name: "table", Paid: true},
			DealerRequestTypes: []fixture.Product{{ID: "6", Name: "chair"}},
			DealerArea:         fixture.DealerArea{ID: 1, Name: "Dealers' Den"}}}}
}

func TestFromFixture(t *testing.T) {
	t.Run("a valid dealer comes back with its stored JSON", func(t *testing.T) {
		out, err := dealer.FromFixture("2026", []fixture.Dealer{valid()})
		if err != nil {
			t.Fatal(err)
		}
		d := out[0]
		if string(d.Options) != `[{"id":"1","name":"Phone","type":"phone","value":"+1555"}]` || d.ConventionID != "2026" {
			t.Fatalf("dealer %+v %s", d, d.Options)
		}
		a := d.Applications[0]
		if string(a.TableType) != `{"id":"5","name":"table","paid":true,"displayName":null}` ||
			string(a.DealerRequestTypes) != `[{"id":"6","name":"chair","paid":false,"displayName":null}]` ||
			string(a.Options) != `[]` || a.DealerID != 1 || a.ConventionID != "2026" || a.AreaName != "Dealers' Den" {
			t.Fatalf("application %+v", a)
		}
	})
	t.Run("no applications list is nil, an empty one is empty", func(t *testing.T) {
		absent, empty := valid(), valid()
		absent.Applications, empty.Applications = nil, []fixture.DealerApplication{}
		empty.ID = 2
		out, err := dealer.FromFixture("2026", []fixture.Dealer{absent, empty})
		if err != nil || out[0].Applications != nil || out[1].Applications == nil {
			t.Fatalf("%v %+v", err, out)
		}
	})
	cases := map[string]struct {
		edit func(*fixture.Dealer)
		want string
	}{
		"no name":              {func(d *fixture.Dealer) { d.Name = " " }, "dealers[0] (id 1): name must not be empty"},
		"no user":              {func(d *fixture.Dealer) { d.UserID = 0 }, "userId must be a positive integer"},
		"a country of three":   {func(d *fixture.Dealer) { d.AddressCountry = "USA" }, "addressCountry must be two capital letters"},
		"a lower-case country": {func(d *fixture.Dealer) { d.AddressCountry = "us" }, "addressCountry must be two capital letters"},
		"an email without @":   {func(d *fixture.Dealer) { d.Email = ptr("nope") }, "email must be an address"},
		"an unknown option":    {func(d *fixture.Dealer) { d.Options[0].Type = "colour" }, "options[0].type: must be one of"},
		"a phone as a number":  {func(d *fixture.Dealer) { d.Options[0].Value = json.RawMessage(`5`) }, "options[0].value"},
		"an option without id": {func(d *fixture.Dealer) { d.Options[0].ID = 0 }, "options[0].id"},
		"a bad status":         {func(d *fixture.Dealer) { d.Applications[0].Status = "paid" }, "applications[0] (id 10): status must be one of"},
		"no table type":        {func(d *fixture.Dealer) { d.Applications[0].TableType = fixture.Product{} }, "tableType.id must not be empty"},
		"an add-on twice": {func(d *fixture.Dealer) {
			d.Applications[0].DealerRequestTypes = append(d.Applications[0].DealerRequestTypes, fixture.Product{ID: "6", Name: "x"})
		}, `dealerRequestTypes[1].id "6" appears twice`},
		"no area":               {func(d *fixture.Dealer) { d.Applications[0].DealerArea = fixture.DealerArea{} }, "dealerArea.id must be a positive integer"},
		"an empty table number": {func(d *fixture.Dealer) { d.Applications[0].TableNumber = ptr("") }, "tableNumber must not be empty when given"},
		"a phone option on an application": {func(d *fixture.Dealer) {
			d.Applications[0].Options = []fixture.DealerOption{{ID: 1, Name: "p", Type: "phone", Value: json.RawMessage(`"1"`)}}
		}, "options[0].type: must be one of select, multi, text, number"},
		"an application id twice": {func(d *fixture.Dealer) {
			d.Applications = append(d.Applications, d.Applications[0])
		}, "id appears twice"},
	}
	for name, tc := range cases {
		t.Run(name+" rejects the section", func(t *testing.T) {
			d := valid()
			tc.edit(&d)
			_, err := dealer.FromFixture("2026", []fixture.Dealer{d})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("one area with two names in the file is refused", func(t *testing.T) {
		a, b := valid(), valid()
		b.ID, b.Applications[0].ID, b.Applications[0].DealerArea.Name = 2, 11, "Den"
		if _, err := dealer.FromFixture("2026", []fixture.Dealer{a, b}); err == nil || !strings.Contains(err.Error(), "is named both") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a dealer id twice and no convention are refused", func(t *testing.T) {
		_, err := dealer.FromFixture("", []fixture.Dealer{valid(), valid()})
		if err == nil || !strings.Contains(err.Error(), "conventionId") || !strings.Contains(err.Error(), "id appears twice") {
			t.Fatalf("got %v", err)
		}
	})
}
