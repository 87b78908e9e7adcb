package dealerapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/postal"
	"github.com/eventreg/eventreg/libs/resourcetest"
)

type optionBody struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type productBody struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	DisplayName *string `json:"displayName"`
	Paid        bool    `json:"paid"`
}

type dealerBody struct {
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Email *string `json:"email"`
	postal.Address
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Email    string `json:"email"`
	} `json:"user"`
	Options      []optionBody `json:"options"`
	Applications []struct {
		ID                 string        `json:"id"`
		Status             string        `json:"status"`
		SpecialRequests    *string       `json:"specialRequests"`
		TableNumber        *string       `json:"tableNumber"`
		DealerRequestTypes []productBody `json:"dealerRequestTypes"`
		TableType          productBody   `json:"tableType"`
		DealerArea         struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"dealerArea"`
		Options []optionBody `json:"options"`
	} `json:"applications"`
}

type pageBody struct {
	Data     []dealerBody `json:"data"`
	NextPage *string      `json:"nextPage"`
	HasMore  bool         `json:"hasMore"`
}

var (
	den   = fixture.DealerArea{ID: 1, Name: "Dealers' Den"}
	alley = fixture.DealerArea{ID: 2, Name: "Artist Alley"}
)

func fullTable() fixture.Product {
	return fixture.Product{ID: "31", Name: "dealer-table-full", DisplayName: ptr("Full table"), Paid: true}
}

// inkwell is a dealer with every field.
func inkwell() fixture.Dealer {
	return fixture.Dealer{ID: 11, UserID: 1001, Name: "Inkwell Prints", Email: ptr("shop@inkwell.example"),
		AddressLine1: "1 Main St", AddressLine2: ptr("Suite 4"), AddressCity: "Springfield", AddressZipcode: "62701",
		AddressState: "IL", AddressCountry: "US",
		Options: []fixture.DealerOption{
			{ID: 1, Name: "Website", Type: "text", Value: json.RawMessage(`"https://inkwell.example"`)},
			{ID: 2, Name: "Phone", Type: "phone", Value: json.RawMessage(`"+15555550100"`)},
			{ID: 3, Name: "Warehouse", Type: "address", Value: json.RawMessage(`"2 Dock Rd, Springfield"`)},
			{ID: 4, Name: "Categories", Type: "multi", Value: json.RawMessage(`["prints","stickers"]`)},
			{ID: 5, Name: "Staff", Type: "number", Value: json.RawMessage(`2`)},
		},
		Applications: []fixture.DealerApplication{{
			ID: 101, Status: "approved", SpecialRequests: ptr("Near a power outlet"), TableNumber: ptr("A-12"),
			DealerRequestTypes: []fixture.Product{{ID: "41", Name: "extra-chair", Paid: false}, {ID: "42", Name: "power", DisplayName: ptr("Power outlet"), Paid: true}},
			TableType:          fullTable(), DealerArea: den,
			Options: []fixture.DealerOption{{ID: 7, Name: "Assistant badge", Type: "select", Value: json.RawMessage(`"yes"`)}},
		}}}
}

// doodles is a dealer with the optional fields left out.
func doodles() fixture.Dealer {
	return fixture.Dealer{ID: 12, UserID: 1002, Name: "Doodles", AddressLine1: "9 Elm St", AddressCity: "Shelbyville",
		AddressZipcode: "1010", AddressState: "", AddressCountry: "AT",
		Applications: []fixture.DealerApplication{{ID: 102, Status: "pending",
			TableType: fixture.Product{ID: "32", Name: "artist-alley-half", Paid: false}, DealerArea: alley}}}
}

func TestSearchDealers(t *testing.T) {
	e := newEnv(t, envOptions{BodyLimit: 8 << 10})
	e.importDealers(t, convention, inkwell(), doodles(),
		fixture.Dealer{ID: 15, UserID: 1005, Name: "Quills", AddressLine1: "3 Oak St", AddressCity: "Ogdenville",
			AddressZipcode: "3", AddressState: "IL", AddressCountry: "US"})
	// Another convention's application is not shown.
	e.importDealers(t, "2025", fixture.Dealer{ID: 12, UserID: 1002, Name: "Doodles", AddressLine1: "9 Elm St", AddressCity: "Shelbyville",
		AddressZipcode: "1010", AddressState: "", AddressCountry: "AT",
		Applications: []fixture.DealerApplication{{ID: 90, Status: "cancelled", TableType: fullTable(), DealerArea: den}}})
	token := e.Tokens.Service(t, "vendor:read")
	ids := func(p pageBody) string {
		return resourcetest.JoinIDs(p.Data, func(d dealerBody) string { return d.ID })
	}

	t.Run("the literal body {} is a first page of every dealer with every field", func(t *testing.T) {
		r := e.Search(t, token, `{}`)
		var p pageBody
		r.JSON(t, &p)
		if r.Status != 200 || ids(p) != "11,12,15" || p.HasMore || p.NextPage != nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		resourcetest.ExplicitLastPage(t, r)
		d := p.Data[0]
		if d.Name != "Inkwell Prints" || d.Email == nil || *d.Email != "shop@inkwell.example" || d.AddressLine2 == nil ||
			*d.AddressLine2 != "Suite 4" || d.AddressCity != "Springfield" || d.AddressZipcode != "62701" ||
			d.AddressState != "IL" || d.AddressCountry != "US" || d.User.ID != "1001" || d.User.Username != "user1001" {
			t.Fatalf("dealer %+v", d)
		}
		if len(d.Options) != 5 || fmt.Sprint(d.Options[1]) != fmt.Sprint(optionBody{ID: "2", Name: "Phone", Type: "phone", Value: json.RawMessage(`"+15555550100"`)}) ||
			string(d.Options[3].Value) != `["prints","stickers"]` || string(d.Options[4].Value) != `2` {
			t.Fatalf("options %+v", d.Options)
		}
		if len(d.Applications) != 1 {
			t.Fatalf("applications %+v", d.Applications)
		}
		a := d.Applications[0]
		if a.ID != "101" || a.Status != "approved" || *a.SpecialRequests != "Near a power outlet" || *a.TableNumber != "A-12" ||
			a.TableType.ID != "31" || a.TableType.Name != "dealer-table-full" || *a.TableType.DisplayName != "Full table" || !a.TableType.Paid ||
			a.DealerArea.ID != "1" || a.DealerArea.Name != "Dealers' Den" || len(a.DealerRequestTypes) != 2 ||
			a.DealerRequestTypes[0].ID != "41" || a.DealerRequestTypes[0].Paid || a.DealerRequestTypes[0].DisplayName != nil ||
			!a.DealerRequestTypes[1].Paid || len(a.Options) != 1 || a.Options[0].ID != "7" || string(a.Options[0].Value) != `"yes"` {
			t.Fatalf("application %+v", a)
		}
	})
	t.Run("optional fields are null and lists empty arrays; other conventions' applications are left out", func(t *testing.T) {
		r := e.Search(t, token, `{"filter": {"userIds": [1002]}}`)
		var p pageBody
		r.JSON(t, &p)
		if r.Status != 200 || ids(p) != "12" || len(p.Data[0].Applications) != 1 || p.Data[0].Applications[0].ID != "102" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		for _, want := range []string{`"email":null`, `"addressLine2":null`, `"options":[]`, `"specialRequests":null`,
			`"tableNumber":null`, `"dealerRequestTypes":[]`, `"displayName":null`} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("body lacks %s: %s", want, r.Body)
			}
		}
		r = e.Search(t, token, `{"filter": {"userIds": [1005]}}`)
		if !strings.Contains(string(r.Body), `"applications":[]`) {
			t.Fatalf("a dealer without applications: %s", r.Body)
		}
	})
	search := resourcetest.UserIDFilter{Path: "/api/v0/dealers/search", Token: token, Mixed: "11,15", All: "11,12,15",
		Keys: resourcetest.PageKeys(func(d dealerBody) string { return d.ID })}
	e.CheckUserIDFilter(t, search)
	e.CheckUserIDSearchRefusals(t, search, "12",
		resourcetest.BodyRefusal{Name: "garbage token", Body: `{}`, Token: "a.b.c", Status: 401, Category: "authentication"},
		resourcetest.BodyRefusal{Name: "expired token", Body: `{}`, Token: e.Tokens.Expired(t, "vendor:read"), Status: 401, Category: "authentication"},
		resourcetest.BodyRefusal{Name: "wrong scope", Body: `{}`, Token: e.Tokens.Service(t, "registration:read", "user:read"), Status: 403, Category: "access"},
	)
	t.Run("no dealer changed under the refusals", func(t *testing.T) {
		var p pageBody
		e.Search(t, token, `{}`).JSON(t, &p)
		if ids(p) != "11,12,15" {
			t.Fatalf("after the refusals: %s", ids(p))
		}
	})
}

func TestPaginationWalkSeesEachDealerOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	var recs []fixture.Dealer
	for i := int64(1); i <= 230; i++ {
		// Dealer ids and user ids run in different orders: pages are keyed by dealer id.
		recs = append(recs, fixture.Dealer{ID: i * 2, UserID: 9000 - i, Name: fmt.Sprint("D", i), AddressLine1: "x",
			AddressCity: "y", AddressZipcode: "z", AddressState: "s", AddressCountry: "US",
			Applications: []fixture.DealerApplication{{ID: i, Status: "pending", TableType: fullTable(), DealerArea: den}}})
	}
	// One user with two dealers.
	recs = append(recs, fixture.Dealer{ID: 1000, UserID: 9000 - 5, Name: "Second shop", AddressLine1: "x",
		AddressCity: "y", AddressZipcode: "z", AddressState: "s", AddressCountry: "US"})
	e.importDealers(t, convention, recs...)
	token := e.Tokens.Service(t, "vendor:read")

	// walk is the ids of the dealers a walk with pages of limit sees.
	walk := func(t *testing.T, limit int, filter string) []string {
		t.Helper()
		return resourcetest.WalkIDs(t, e.Env, "/api/v0/dealers/search", token, limit, filter, func(d dealerBody) string { return d.ID })
	}
	t.Run("limit 7 sees every dealer exactly once, in id order", func(t *testing.T) {
		resourcetest.SameIDs(t, walk(t, 7, ""), recs, func(d fixture.Dealer) int64 { return d.ID })
	})
	t.Run("a filtered walk sees exactly the filtered users' dealers once", func(t *testing.T) {
		seen := walk(t, 1, `{"userIds": ["8999", 8995, "8990", 1]}`)
		if strings.Join(seen, ",") != "2,10,20,1000" {
			t.Fatalf("saw %v", seen)
		}
	})
	t.Run("a page of 100 costs exactly one users call", func(t *testing.T) {
		e.Users.Reset()
		var p pageBody
		e.Search(t, token, `{}`).JSON(t, &p)
		if len(p.Data) != 100 || !p.HasMore {
			t.Fatalf("page of %d", len(p.Data))
		}
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 100 {
			t.Fatalf("users calls: %v", len(calls))
		}
	})
	t.Run("a dealer whose user is gone is left out and paging goes on", func(t *testing.T) {
		e.Users.Remove(8999)
		seen := walk(t, 1, `{"userIds": [8999, 8998]}`)
		if strings.Join(seen, ",") != "4" {
			t.Fatalf("saw %v", seen)
		}
	})
}

func TestUsersServiceDown(t *testing.T) {
	e := newEnv(t, envOptions{UsersTimeout: 300e6})
	e.importDealers(t, convention, inkwell(), doodles())
	token := e.Tokens.Service(t, "vendor:read")
	e.CheckUsersOutages(t, func(t *testing.T) {
		t.Helper()
		resourcetest.ExpectUsersUnavailable(t, func() response { return e.Search(t, token, `{}`) })
	})
}
