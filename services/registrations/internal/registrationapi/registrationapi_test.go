package registrationapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
)

type registrationBody struct {
	CreatedAt          string  `json:"createdAt"`
	UpdatedAt          string  `json:"updatedAt"`
	BadgeName          string  `json:"badgeName"`
	Status             string  `json:"status"`
	ProductName        string  `json:"productName"`
	ProductDisplayName *string `json:"productDisplayName"`
	ProductID          string  `json:"productId"`
	Options            []struct {
		Name  string          `json:"name"`
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"options"`
	Flags []struct {
		ID        string `json:"id"`
		ShortName string `json:"shortName"`
	} `json:"flags"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Email    string `json:"email"`
	} `json:"user"`
	Order *struct {
		OrderID string `json:"orderId"`
	} `json:"order"`
}

type pageBody struct {
	Data     []registrationBody `json:"data"`
	NextPage *string            `json:"nextPage"`
	HasMore  bool               `json:"hasMore"`
}

func alice() fixture.Registration {
	return fixture.Registration{UserID: 1001, BadgeName: "Al the Great", Status: "paid", OrderID: ptr("601"), ProductID: "7",
		ProductName: "Sponsor", ProductDisplayName: ptr("Sponsor Weekend"),
		Options: []fixture.Option{
			{Name: "Days", Type: "multi", Value: json.RawMessage(`["Fri","Sat"]`)},
			{Name: "Shirt size", Type: "select", Value: json.RawMessage(`"S"`)},
			{Name: "Dinner guests", Type: "number", Value: json.RawMessage(`2`)},
			{Name: "Dietary needs", Type: "text", Value: json.RawMessage(`"vegetarian"`)},
		},
		Flags: []fixture.Flag{{ID: "3", ShortName: "VIP"}}}
}

func bob() fixture.Registration {
	return fixture.Registration{UserID: 1002, BadgeName: "Little Bobby", Status: "unpaid", ProductID: "5", ProductName: "Attendee"}
}

func TestGetUserRegistration(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.importRegs(t, convention, alice(), bob())
	e.importRegs(t, "2025", fixture.Registration{UserID: 1003, BadgeName: "Old", Status: "paid", ProductID: "1", ProductName: "Old"})
	token := e.Tokens.Service(t, "registration:read")

	t.Run("returns every field as the contract has it", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1001/registration", token)
		r.Expect(t, http.StatusOK)
		var got registrationBody
		r.JSON(t, &got)
		if got.BadgeName != "Al the Great" || got.Status != "paid" || got.ProductID != "7" || got.ProductName != "Sponsor" ||
			got.ProductDisplayName == nil || *got.ProductDisplayName != "Sponsor Weekend" || got.Order == nil || got.Order.OrderID != "601" {
			t.Fatalf("registration %s", r.Body)
		}
		if got.User.ID != "1001" || got.User.Username != "user1001" || got.User.Email != "user1001@example.org" {
			t.Fatalf("user %+v", got.User)
		}
		wantValues := map[string]string{"Days": `["Fri","Sat"]`, "Shirt size": `"S"`, "Dinner guests": `2`, "Dietary needs": `"vegetarian"`}
		if len(got.Options) != len(wantValues) {
			t.Fatalf("options %s", r.Body)
		}
		for _, o := range got.Options {
			if wantValues[o.Name] != string(o.Value) {
				t.Errorf("option %s = %s, want %s", o.Name, o.Value, wantValues[o.Name])
			}
		}
		if len(got.Flags) != 1 || got.Flags[0].ID != "3" || got.Flags[0].ShortName != "VIP" {
			t.Fatalf("flags %+v", got.Flags)
		}
		if _, err := time.Parse(time.RFC3339, got.CreatedAt); err != nil || !strings.HasSuffix(got.UpdatedAt, "Z") {
			t.Fatalf("timestamps %q %q", got.CreatedAt, got.UpdatedAt)
		}
	})
	t.Run("stored options and flags render exactly as encoding them would", func(t *testing.T) {
		// Options and flags go out as the database sends them (decision
		// 0078): compacted and HTML-escaped by the encoder, they must be the
		// bytes that decoding and encoding them again gave before.
		tricky := fixture.Registration{UserID: 1010, BadgeName: "Tricky", Status: "paid", ProductID: "9", ProductName: "Odd",
			Options: []fixture.Option{
				{Name: `<b>&"quoted"\back</b>`, Type: "text", Value: json.RawMessage(`"tab\tnew\nline\u0001 \u2028 \u00e9 é 🎉 </script>"`)},
				{Name: "Días ✓", Type: "multi", Value: json.RawMessage(` [ "a" , "b&c" , "" ] `)},
				{Name: "Ratio", Type: "number", Value: json.RawMessage(`1.50`)},
				{Name: "Big", Type: "number", Value: json.RawMessage(`-12e3`)},
			},
			Flags: []fixture.Flag{{ID: "7", ShortName: "<VIP> & co"}, {ID: "8", ShortName: "ünï"}}}
		e.importRegs(t, convention, tricky)
		r := e.Get(t, "/api/v0/users/1010/registration", token)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var got struct {
			Options json.RawMessage `json:"options"`
			Flags   json.RawMessage `json:"flags"`
		}
		r.JSON(t, &got)
		opts, err := eventoption.ParseAll(tricky.Options, eventoption.OnlyKnown)
		if err != nil {
			t.Fatal(err)
		}
		// What the typed path rendered: options as read back (numbers as the
		// database keeps them), encoded by encoding/json.
		wantOpts, _ := json.Marshal(opts)
		wantOpts = []byte(strings.Replace(string(wantOpts), `"value":-12e3`, `"value":-12000`, 1))
		type flag struct {
			ID        string `json:"id"`
			ShortName string `json:"shortName"`
		}
		wantFlags, _ := json.Marshal([]flag{{"7", "<VIP> & co"}, {"8", "ünï"}})
		if string(got.Options) != string(wantOpts) {
			t.Errorf("options\n got %s\nwant %s", got.Options, wantOpts)
		}
		if string(got.Flags) != string(wantFlags) {
			t.Errorf("flags\n got %s\nwant %s", got.Flags, wantFlags)
		}
	})
	t.Run("no order, no display name and no flags render as null and empty arrays", func(t *testing.T) {
		r := e.Get(t, "/api/v0/users/1002/registration", token)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		for _, want := range []string{`"order":null`, `"productDisplayName":null`, `"flags":[]`, `"options":[]`} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("body lacks %s: %s", want, r.Body)
			}
		}
	})
	t.Run("calls the users service once with the one id", func(t *testing.T) {
		e.Users.Reset()
		e.Get(t, "/api/v0/users/1001/registration", token)
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 1 || calls[0][0] != 1001 {
			t.Fatalf("calls %v", calls)
		}
	})
	refusals := []resourcetest.Refusal{
		{Name: "user without a registration is 404", Path: "/api/v0/users/1004/registration", Token: token, Status: 404, Category: "resource"},
		{Name: "registration of another convention is invisible", Path: "/api/v0/users/1003/registration", Token: token, Status: 404, Category: "resource"},
		{Name: "id that is not a number is 404", Path: "/api/v0/users/abc/registration", Token: token, Status: 404, Category: "resource"},
		{Name: "id zero is 404", Path: "/api/v0/users/0/registration", Token: token, Status: 404, Category: "resource"},
		{Name: "no token is 401", Path: "/api/v0/users/1001/registration", Status: 401, Category: "authentication", Message: "Invalid token."},
		{Name: "garbage token is 401", Path: "/api/v0/users/1001/registration", Token: "a.b.c", Status: 401, Category: "authentication", Message: "Invalid token."},
		{Name: "expired token is 401 Token expired.", Path: "/api/v0/users/1001/registration", Token: e.Tokens.Expired(t, "registration:read"), Status: 401, Category: "authentication", Message: "Token expired."},
		{Name: "token without registration:read is 403", Path: "/api/v0/users/1001/registration", Token: e.Tokens.Service(t, "user:read", "volunteer:read"), Status: 403, Category: "access"},
	}
	e.CheckRefusals(t, refusals)
	t.Run("a registration whose user no longer exists is 404", func(t *testing.T) {
		e.importRegs(t, convention, fixture.Registration{UserID: 1009, BadgeName: "Ghost", Status: "paid", ProductID: "5", ProductName: "Attendee"})
		e.Users.Remove(1009)
		if r := e.Get(t, "/api/v0/users/1009/registration", token); r.Status != 404 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestSearchRegistrations(t *testing.T) {
	e := newEnv(t, envOptions{BodyLimit: 8 << 10})
	e.importRegs(t, convention, alice(), bob(),
		fixture.Registration{UserID: 1005, BadgeName: "Rinn", Status: "paid", OrderID: ptr("603"), ProductID: "5", ProductName: "Attendee"})
	e.importRegs(t, "2025", fixture.Registration{UserID: 1003, BadgeName: "Old", Status: "paid", ProductID: "1", ProductName: "Old"})
	token := e.Tokens.Service(t, "registration:read")
	ids := func(p pageBody) string {
		return resourcetest.JoinIDs(p.Data, func(r registrationBody) string { return r.User.ID })
	}

	t.Run("the literal body {} is a first page of everything in the convention", func(t *testing.T) {
		r := e.Search(t, token, `{}`)
		var p pageBody
		r.JSON(t, &p)
		if r.Status != 200 || ids(p) != "1001,1002,1005" || p.HasMore || p.NextPage != nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		resourcetest.ExplicitLastPage(t, r)
	})
	t.Run("an empty body is a first page", func(t *testing.T) {
		r := e.Do(t, http.MethodPost, "/api/v0/registration/search", token, "", nil)
		var p pageBody
		r.JSON(t, &p)
		if r.Status != 200 || ids(p) != "1001,1002,1005" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	search := resourcetest.UserIDFilter{Path: "/api/v0/registration/search", Token: token, Mixed: "1001,1005", All: "1001,1002,1005",
		Keys: resourcetest.PageKeys(func(r registrationBody) string { return r.User.ID })}
	e.CheckUserIDFilter(t, search)
	e.CheckUserIDSearchRefusals(t, search, "1002",
		resourcetest.BodyRefusal{Name: "expired token", Body: `{}`, Token: e.Tokens.Expired(t, "registration:read"), Status: 401, Category: "authentication"},
		resourcetest.BodyRefusal{Name: "wrong scope", Body: `{}`, Token: e.Tokens.Service(t, "volunteer:read"), Status: 403, Category: "access"},
	)
}

func TestPaginationWalkSeesEachRegistrationOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	var recs, other []fixture.Registration
	for i := int64(1); i <= 250; i++ {
		recs = append(recs, fixture.Registration{UserID: 5000 + i*3, BadgeName: fmt.Sprint("B", i), Status: "paid", ProductID: "5", ProductName: "Attendee"})
	}
	for i := int64(1); i <= 40; i++ {
		other = append(other, fixture.Registration{UserID: 5000 + i, BadgeName: "other", Status: "unpaid", ProductID: "5", ProductName: "Attendee"})
	}
	e.importRegs(t, convention, recs...)
	e.importRegs(t, "2025", other...)
	token := e.Tokens.Service(t, "registration:read")

	// walk is the user ids of the registrations a walk with pages of limit sees.
	walk := func(t *testing.T, limit int, filter string) []string {
		t.Helper()
		return resourcetest.WalkIDs(t, e.Env, "/api/v0/registration/search", token, limit, filter, func(r registrationBody) string { return r.User.ID })
	}
	t.Run("limit 7 sees every registration of the convention exactly once, in order", func(t *testing.T) {
		resourcetest.SameIDs(t, walk(t, 7, ""), recs, func(r fixture.Registration) int64 { return r.UserID })
	})
	t.Run("a filtered walk sees exactly the filtered users once", func(t *testing.T) {
		seen := walk(t, 2, `{"userIds": ["5003", 5006, "5009", 5012, "5015", 5001]}`)
		if strings.Join(seen, ",") != "5003,5006,5009,5012,5015" {
			t.Fatalf("saw %v", seen)
		}
	})
	t.Run("a page of 100 costs exactly one users call", func(t *testing.T) {
		e.Users.Reset()
		r := e.Search(t, token, `{}`)
		var p pageBody
		r.JSON(t, &p)
		if len(p.Data) != 100 {
			t.Fatalf("page of %d", len(p.Data))
		}
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 100 {
			t.Fatalf("users calls: %d", len(calls))
		}
	})
}

func TestUsersServiceDown(t *testing.T) {
	e := newEnv(t, envOptions{UsersTimeout: 300 * time.Millisecond})
	e.importRegs(t, convention, alice(), bob())
	token := e.Tokens.Service(t, "registration:read")
	check := func(t *testing.T) {
		t.Helper()
		resourcetest.ExpectUsersUnavailable(t,
			func() response { return e.Get(t, "/api/v0/users/1001/registration", token) },
			func() response { return e.Search(t, token, `{}`) },
		)
	}
	e.CheckUsersOutages(t, check)
}
