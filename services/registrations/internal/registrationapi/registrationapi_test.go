package registrationapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
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
		r := e.get(t, "/api/v0/users/1001/registration", token)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var got registrationBody
		r.json(t, &got)
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
	t.Run("no order, no display name and no flags render as null and empty arrays", func(t *testing.T) {
		r := e.get(t, "/api/v0/users/1002/registration", token)
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
		e.get(t, "/api/v0/users/1001/registration", token)
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 1 || calls[0][0] != 1001 {
			t.Fatalf("calls %v", calls)
		}
	})
	refusals := []struct {
		name, path, token string
		status            int
		category, message string
	}{
		{"user without a registration is 404", "/api/v0/users/1004/registration", token, 404, "resource", ""},
		{"registration of another convention is invisible", "/api/v0/users/1003/registration", token, 404, "resource", ""},
		{"id that is not a number is 404", "/api/v0/users/abc/registration", token, 404, "resource", ""},
		{"id zero is 404", "/api/v0/users/0/registration", token, 404, "resource", ""},
		{"no token is 401", "/api/v0/users/1001/registration", "", 401, "authentication", "Invalid token."},
		{"garbage token is 401", "/api/v0/users/1001/registration", "a.b.c", 401, "authentication", "Invalid token."},
		{"expired token is 401 Token expired.", "/api/v0/users/1001/registration", e.Tokens.Expired(t, "registration:read"), 401, "authentication", "Token expired."},
		{"token without registration:read is 403", "/api/v0/users/1001/registration", e.Tokens.Service(t, "user:read", "volunteer:read"), 403, "access", ""},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := e.get(t, tc.path, tc.token)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if msg := r.errorMessage(t, tc.category); tc.message != "" && msg != tc.message {
				t.Fatalf("message %q, want %q", msg, tc.message)
			}
		})
	}
	t.Run("a registration whose user no longer exists is 404", func(t *testing.T) {
		e.importRegs(t, convention, fixture.Registration{UserID: 1009, BadgeName: "Ghost", Status: "paid", ProductID: "5", ProductName: "Attendee"})
		e.Users.Remove(1009)
		if r := e.get(t, "/api/v0/users/1009/registration", token); r.Status != 404 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestSearchRegistrations(t *testing.T) {
	e := newEnv(t, envOptions{bodyLimit: 8 << 10})
	e.importRegs(t, convention, alice(), bob(),
		fixture.Registration{UserID: 1005, BadgeName: "Rinn", Status: "paid", OrderID: ptr("603"), ProductID: "5", ProductName: "Attendee"})
	e.importRegs(t, "2025", fixture.Registration{UserID: 1003, BadgeName: "Old", Status: "paid", ProductID: "1", ProductName: "Old"})
	token := e.Tokens.Service(t, "registration:read")
	ids := func(p pageBody) string {
		var s []string
		for _, r := range p.Data {
			s = append(s, r.User.ID)
		}
		return strings.Join(s, ",")
	}

	t.Run("the literal body {} is a first page of everything in the convention", func(t *testing.T) {
		r := e.search(t, token, `{}`)
		var p pageBody
		r.json(t, &p)
		if r.Status != 200 || ids(p) != "1001,1002,1005" || p.HasMore || p.NextPage != nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if !strings.Contains(string(r.Body), `"nextPage":null`) || !strings.Contains(string(r.Body), `"hasMore":false`) {
			t.Fatalf("nextPage/hasMore not explicit: %s", r.Body)
		}
	})
	t.Run("an empty body is a first page", func(t *testing.T) {
		r := e.do(t, http.MethodPost, "/api/v0/registration/search", token, "", nil)
		var p pageBody
		r.json(t, &p)
		if r.Status != 200 || ids(p) != "1001,1002,1005" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("filter.userIds takes strings and numbers", func(t *testing.T) {
		r := e.search(t, token, `{"filter": {"userIds": ["1005", 1001, "1003", "9999"]}}`)
		var p pageBody
		r.json(t, &p)
		if r.Status != 200 || ids(p) != "1001,1005" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("an empty userIds list matches nothing", func(t *testing.T) {
		r := e.search(t, token, `{"filter": {"userIds": []}}`)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"data":[]`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("null filter and null userIds are no filter", func(t *testing.T) {
		for _, body := range []string{`{"filter": null}`, `{"filter": {}}`, `{"filter": {"userIds": null}}`} {
			var p pageBody
			r := e.search(t, token, body)
			r.json(t, &p)
			if r.Status != 200 || ids(p) != "1001,1002,1005" {
				t.Fatalf("%s: %d %s", body, r.Status, r.Body)
			}
		}
	})
	t.Run("limit above 100 is treated as 100 and a numeric string is a limit", func(t *testing.T) {
		for _, body := range []string{`{"limit": 1000}`, `{"limit": "2"}`} {
			r := e.search(t, token, body)
			if r.Status != 200 {
				t.Fatalf("%s: %d %s", body, r.Status, r.Body)
			}
		}
	})
	t.Run("100 ids are accepted", func(t *testing.T) {
		var list []string
		for i := 1; i <= 100; i++ {
			list = append(list, fmt.Sprintf(`"%d"`, 1000+i))
		}
		if r := e.search(t, token, `{"filter":{"userIds":[`+strings.Join(list, ",")+`]}}`); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	first := e.search(t, token, `{"limit": 1}`)
	var firstPage pageBody
	first.json(t, &firstPage)
	if firstPage.NextPage == nil {
		t.Fatalf("no cursor: %s", first.Body)
	}
	cursor := *firstPage.NextPage
	tampered := []byte(cursor)
	tampered[5] ^= 1
	var tooMany []string
	for i := 1; i <= 101; i++ {
		tooMany = append(tooMany, fmt.Sprint(i))
	}
	refusals := []struct {
		name, body, contentType, token string
		status                         int
		category                       string
	}{
		{"101 ids is a validation error", `{"filter":{"userIds":[` + strings.Join(tooMany, ",") + `]}}`, "application/json", token, 400, "validation"},
		{"a user id that is not a number", `{"filter":{"userIds":["abc"]}}`, "application/json", token, 400, "validation"},
		{"a negative user id", `{"filter":{"userIds":[-4]}}`, "application/json", token, 400, "validation"},
		{"userIds not an array", `{"filter":{"userIds":"1001"}}`, "application/json", token, 400, "validation"},
		{"filter not an object", `{"filter":[1001]}`, "application/json", token, 400, "validation"},
		{"limit zero", `{"limit":0}`, "application/json", token, 400, "validation"},
		{"limit not a number", `{"limit":"many"}`, "application/json", token, 400, "validation"},
		{"limit a fraction", `{"limit":1.5}`, "application/json", token, 400, "validation"},
		{"nextPage that is not a cursor", `{"nextPage":"garbage"}`, "application/json", token, 400, "validation"},
		{"nextPage edited", `{"nextPage":"` + string(tampered) + `"}`, "application/json", token, 400, "validation"},
		{"nextPage from another filter", `{"nextPage":"` + cursor + `","filter":{"userIds":[1001]}}`, "application/json", token, 400, "validation"},
		{"nextPage not a string", `{"nextPage":5}`, "application/json", token, 400, "validation"},
		{"malformed JSON", `{"limit": 5`, "application/json", token, 400, "validation"},
		{"two JSON values", `{} {}`, "application/json", token, 400, "validation"},
		{"a duplicate key", `{"limit": 5, "limit": 6}`, "application/json", token, 400, "validation"},
		{"not JSON at all", `limit=5`, "application/x-www-form-urlencoded", token, 415, "validation"},
		{"a body over the limit", `{"filter":{"userIds":["` + strings.Repeat("1", 10<<10) + `"]}}`, "application/json", token, 413, "validation"},
		{"no token", `{}`, "application/json", "", 401, "authentication"},
		{"expired token", `{}`, "application/json", e.Tokens.Expired(t, "registration:read"), 401, "authentication"},
		{"wrong scope", `{}`, "application/json", e.Tokens.Service(t, "volunteer:read"), 403, "access"},
	}
	for _, tc := range refusals {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			e.Users.Reset()
			r := e.do(t, http.MethodPost, "/api/v0/registration/search", tc.token, tc.contentType, []byte(tc.body))
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			r.errorMessage(t, tc.category)
			if calls := e.Users.Calls(); len(calls) != 0 {
				t.Fatalf("a refused request called the users service: %v", calls)
			}
		})
	}
	t.Run("the cursor continues with the same filter", func(t *testing.T) {
		r := e.search(t, token, `{"limit": 1, "nextPage": "`+cursor+`"}`)
		var p pageBody
		r.json(t, &p)
		if r.Status != 200 || ids(p) != "1002" || !p.HasMore {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
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

	walk := func(t *testing.T, limit int, filter string) []string {
		t.Helper()
		e.Users.Reset()
		var seen []string
		next := ""
		pages := 0
		for {
			body := fmt.Sprintf(`{"limit": %d%s`, limit, filter)
			if next != "" {
				body += `, "nextPage": "` + next + `"`
			}
			r := e.search(t, token, body+"}")
			if r.Status != 200 {
				t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
			}
			var p pageBody
			r.json(t, &p)
			pages++
			if len(p.Data) > limit {
				t.Fatalf("page of %d for limit %d", len(p.Data), limit)
			}
			for _, reg := range p.Data {
				seen = append(seen, reg.User.ID)
			}
			if !p.HasMore {
				if p.NextPage != nil {
					t.Fatal("nextPage set on the last page")
				}
				break
			}
			next = *p.NextPage
			if pages > 1000 {
				t.Fatal("pagination does not end")
			}
		}
		calls := e.Users.Calls()
		for i, c := range calls {
			if len(c) > limit {
				t.Fatalf("call %d asked for %d users", i, len(c))
			}
		}
		if len(calls) > pages {
			t.Fatalf("%d users calls for %d pages", len(calls), pages)
		}
		return seen
	}
	t.Run("limit 7 sees every registration of the convention exactly once, in order", func(t *testing.T) {
		seen := walk(t, 7, "")
		if len(seen) != len(recs) {
			t.Fatalf("saw %d registrations, want %d", len(seen), len(recs))
		}
		for i, id := range seen {
			if id != fmt.Sprint(recs[i].UserID) {
				t.Fatalf("item %d is user %s, want %d", i, id, recs[i].UserID)
			}
		}
	})
	t.Run("a filtered walk sees exactly the filtered users once", func(t *testing.T) {
		seen := walk(t, 2, `, "filter": {"userIds": ["5003", 5006, "5009", 5012, "5015", 5001]}`)
		if strings.Join(seen, ",") != "5003,5006,5009,5012,5015" {
			t.Fatalf("saw %v", seen)
		}
	})
	t.Run("a page of 100 costs exactly one users call", func(t *testing.T) {
		e.Users.Reset()
		r := e.search(t, token, `{}`)
		var p pageBody
		r.json(t, &p)
		if len(p.Data) != 100 {
			t.Fatalf("page of %d", len(p.Data))
		}
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 100 {
			t.Fatalf("users calls: %d", len(calls))
		}
	})
}

func TestUsersServiceDown(t *testing.T) {
	e := newEnv(t, envOptions{usersTimeout: 300 * time.Millisecond})
	e.importRegs(t, convention, alice(), bob())
	token := e.Tokens.Service(t, "registration:read")
	check := func(t *testing.T) {
		t.Helper()
		for _, send := range []func() response{
			func() response { return e.get(t, "/api/v0/users/1001/registration", token) },
			func() response { return e.search(t, token, `{}`) },
		} {
			start := time.Now()
			r := send()
			if r.Status != http.StatusServiceUnavailable {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("took %v", took)
			}
			if msg := r.errorMessage(t, "server"); !strings.Contains(msg, "users service") {
				t.Fatalf("message %q", msg)
			}
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		}
	}
	t.Run("a users service that hangs gives 503 within the timeout", func(t *testing.T) {
		e.Users.SetDelay(10 * time.Second)
		defer e.Users.SetDelay(0)
		check(t)
	})
	t.Run("a users service answering 500 gives 503", func(t *testing.T) {
		e.Users.SetStatus(http.StatusInternalServerError)
		defer e.Users.SetStatus(0)
		check(t)
	})
	t.Run("a users service that is gone gives 503 at once", func(t *testing.T) {
		e.Users.Close()
		check(t)
	})
}
