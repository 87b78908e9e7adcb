package volunteerapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/volunteersapi"
)

type summaryBody struct {
	ID        string `json:"id"`
	Username  string `json:"username"`
	FirstName string `json:"firstName"`
	Email     string `json:"email"`
}

type volunteerBody struct {
	CreatedAt      string `json:"createdAt"`
	UpdatedAt      string `json:"updatedAt"`
	ContactMethods []struct {
		Name      string `json:"name"`
		IsPrimary bool   `json:"isPrimary"`
		Value     string `json:"value"`
	} `json:"contactMethods"`
	Departments []struct {
		ID     string   `json:"id"`
		Name   string   `json:"name"`
		States []string `json:"states"`
	} `json:"departments"`
	User    summaryBody `json:"user"`
	Options []struct {
		Name  string          `json:"name"`
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"options"`
}

type pageBody struct {
	Data     []volunteerBody `json:"data"`
	NextPage *string         `json:"nextPage"`
	HasMore  bool            `json:"hasMore"`
}

var demoDepartments = []fixture.Department{
	{ID: 10, Name: "Registration", Email: "reg@example.org", PubliclyVisible: true, Leads: []int64{1003}},
	{ID: 11, Name: "Security", Email: "security@example.org", PubliclyVisible: true, Leads: []int64{1005, 1003}},
	{ID: 12, Name: "Dealers' Den", Email: "dealers@example.org"},
}

func carol() fixture.Volunteer {
	return fixture.Volunteer{UserID: 1003,
		ContactMethods: []fixture.ContactMethod{{Name: "discord", Value: "carol#0003", IsPrimary: true}, {Name: "email", Value: "carol@example.org"}},
		Departments:    []fixture.DepartmentChoice{{ID: 11, States: []string{"interest"}}, {ID: 10, States: []string{"experience", "assignment"}}},
		Options: []fixture.Option{
			{Name: "Shirt size", Type: "select", Value: json.RawMessage(`"M"`)},
			{Name: "Hours available", Type: "number", Value: json.RawMessage(`12`)},
			{Name: "Languages", Type: "multi", Value: json.RawMessage(`["English","Spanish"]`)},
		}}
}

func bob() fixture.Volunteer {
	return fixture.Volunteer{UserID: 1002, Departments: []fixture.DepartmentChoice{{ID: 12, States: []string{"avoid"}}}}
}

func TestGetUserVolunteer(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.load(t, convention, demoDepartments, carol(), bob())
	e.load(t, "2025", nil, fixture.Volunteer{UserID: 1004})
	token := e.Tokens.Service(t, "volunteer:read")

	t.Run("returns every field as the contract has it", func(t *testing.T) {
		r := e.get(t, "/api/v0/users/1003/volunteer", token)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var v volunteerBody
		r.json(t, &v)
		if v.User.ID != "1003" || v.User.Username != "user1003" || v.User.Email != "user1003@example.org" {
			t.Fatalf("user %+v", v.User)
		}
		if len(v.ContactMethods) != 2 || v.ContactMethods[0].Name != "discord" || !v.ContactMethods[0].IsPrimary || v.ContactMethods[1].IsPrimary {
			t.Fatalf("contact methods %+v", v.ContactMethods)
		}
		if len(v.Departments) != 2 || v.Departments[0].ID != "11" || v.Departments[0].Name != "Security" ||
			v.Departments[1].Name != "Registration" || strings.Join(v.Departments[1].States, ",") != "experience,assignment" {
			t.Fatalf("departments %+v", v.Departments)
		}
		want := map[string]string{"Shirt size": `"M"`, "Hours available": `12`, "Languages": `["English","Spanish"]`}
		for _, o := range v.Options {
			if want[o.Name] != string(o.Value) {
				t.Errorf("option %s = %s", o.Name, o.Value)
			}
		}
		if _, err := time.Parse(time.RFC3339, v.CreatedAt); err != nil || len(v.Options) != 3 {
			t.Fatalf("createdAt %q, options %d", v.CreatedAt, len(v.Options))
		}
	})
	t.Run("empty lists render as arrays", func(t *testing.T) {
		r := e.get(t, "/api/v0/users/1002/volunteer", token)
		for _, want := range []string{`"contactMethods":[]`, `"options":[]`} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("body lacks %s: %s", want, r.Body)
			}
		}
	})
	refusals := []struct {
		name, path, token string
		status            int
		category, message string
	}{
		{"user without a record is 404", "/api/v0/users/1001/volunteer", token, 404, "resource", ""},
		{"record of another convention is invisible", "/api/v0/users/1004/volunteer", token, 404, "resource", ""},
		{"id that is not a number is 404", "/api/v0/users/carol/volunteer", token, 404, "resource", ""},
		{"no token is 401", "/api/v0/users/1003/volunteer", "", 401, "authentication", "Invalid token."},
		{"expired token is 401 Token expired.", "/api/v0/users/1003/volunteer", e.Tokens.Expired(t, "volunteer:read"), 401, "authentication", "Token expired."},
		{"token without volunteer:read is 403", "/api/v0/users/1003/volunteer", e.Tokens.Service(t, "registration:read"), 403, "access", ""},
		{"departments without volunteer:read is 403", "/api/v0/volunteers/departments", e.Tokens.Service(t, "user:read"), 403, "access", ""},
		{"departments without a token is 401", "/api/v0/volunteers/departments", "", 401, "authentication", "Invalid token."},
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
	t.Run("a volunteer whose user no longer exists is 404", func(t *testing.T) {
		e.load(t, convention, nil, fixture.Volunteer{UserID: 1009})
		e.Users.Remove(1009)
		if r := e.get(t, "/api/v0/users/1009/volunteer", token); r.Status != 404 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestDepartments(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.load(t, convention, demoDepartments)
	e.Users.Reset()
	r := e.get(t, "/api/v0/volunteers/departments", e.Tokens.Service(t, "volunteer:read"))
	if r.Status != 200 || !strings.HasPrefix(string(r.Body), "[") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var deps []struct {
		ID              string        `json:"id"`
		Email           string        `json:"email"`
		Name            string        `json:"name"`
		PubliclyVisible bool          `json:"publiclyVisible"`
		Leads           []summaryBody `json:"leads"`
	}
	r.json(t, &deps)
	if len(deps) != 3 || deps[0].ID != "10" || deps[0].Email != "reg@example.org" || !deps[0].PubliclyVisible || deps[2].PubliclyVisible {
		t.Fatalf("departments %s", r.Body)
	}
	if len(deps[1].Leads) != 2 || deps[1].Leads[0].ID != "1005" || deps[1].Leads[1].ID != "1003" || deps[1].Leads[0].FirstName != "First1005" {
		t.Fatalf("leads %+v", deps[1].Leads)
	}
	if deps[2].Leads == nil || len(deps[2].Leads) != 0 {
		t.Fatalf("a department without leads: %+v", deps[2])
	}
	if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 2 {
		t.Fatalf("users calls %v, want one call for the 2 distinct leads", calls)
	}
}

func TestVolunteerStatusForTheUsersService(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.load(t, convention, demoDepartments, carol(), bob())
	e.load(t, "2025", nil, fixture.Volunteer{UserID: 1004})
	client := volunteersapi.NewClient(e.Internal, time.Second)
	cases := []struct {
		name string
		user int64
		want volunteersapi.Status
	}{
		{"a volunteer who leads", 1003, volunteersapi.Status{IsVolunteer: true, IsDepartmentLead: true}},
		{"a volunteer who does not lead", 1002, volunteersapi.Status{IsVolunteer: true}},
		{"a lead who does not volunteer", 1005, volunteersapi.Status{IsDepartmentLead: true}},
		{"a volunteer of another convention only", 1004, volunteersapi.Status{}},
		{"an unknown user", 424242, volunteersapi.Status{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.Status(t.Context(), tc.user)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
	t.Run("an id that is not a number is 400", func(t *testing.T) {
		resp, err := http.Get(e.Internal + "/internal/users/abc/volunteer-status")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"validation"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("the internal route is not on the public listener", func(t *testing.T) {
		resp, err := http.Get(e.URL + "/internal/users/1003/volunteer-status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestSearchVolunteers(t *testing.T) {
	e := newEnv(t, envOptions{bodyLimit: 4 << 10})
	var vols []fixture.Volunteer
	for i := int64(1); i <= 230; i++ {
		vols = append(vols, fixture.Volunteer{UserID: 2000 + 2*i, Departments: []fixture.DepartmentChoice{{ID: 10 + i%3, States: []string{"interest"}}}})
	}
	e.load(t, convention, demoDepartments, vols...)
	var other []fixture.Volunteer
	for i := int64(1); i <= 30; i++ {
		other = append(other, fixture.Volunteer{UserID: 2001 + 2*i})
	}
	e.load(t, "2025", nil, other...)
	token := e.Tokens.Service(t, "volunteer:read")

	t.Run("the literal body {} is a first page of 100", func(t *testing.T) {
		e.Users.Reset()
		r := e.search(t, token, `{}`)
		var p pageBody
		r.json(t, &p)
		if r.Status != 200 || len(p.Data) != 100 || !p.HasMore || p.NextPage == nil || p.Data[0].User.ID != "2002" {
			t.Fatalf("%d %.300s", r.Status, r.Body)
		}
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 100 {
			t.Fatalf("%d users calls for a page of 100", len(calls))
		}
	})
	t.Run("limit above 100 is 100", func(t *testing.T) {
		var p pageBody
		e.search(t, token, `{"limit": 5000}`).json(t, &p)
		if len(p.Data) != 100 {
			t.Fatalf("page of %d", len(p.Data))
		}
	})
	for _, limit := range []int{1, 7, 100} {
		t.Run(fmt.Sprintf("a walk with limit %d sees each volunteer of the convention exactly once", limit), func(t *testing.T) {
			e.Users.Reset()
			var seen []string
			next, pages := "", 0
			for {
				body := fmt.Sprintf(`{"limit": %d`, limit)
				if next != "" {
					body += `, "nextPage": "` + next + `"`
				}
				r := e.search(t, token, body+"}")
				var p pageBody
				r.json(t, &p)
				if r.Status != 200 || len(p.Data) > limit {
					t.Fatalf("%d %.300s", r.Status, r.Body)
				}
				pages++
				for _, v := range p.Data {
					seen = append(seen, v.User.ID)
				}
				if !p.HasMore {
					break
				}
				next = *p.NextPage
			}
			if len(seen) != len(vols) {
				t.Fatalf("saw %d, want %d", len(seen), len(vols))
			}
			for i, id := range seen {
				if id != fmt.Sprint(vols[i].UserID) {
					t.Fatalf("item %d is %s, want %d", i, id, vols[i].UserID)
				}
			}
			if calls := e.Users.Calls(); len(calls) != pages {
				t.Fatalf("%d users calls for %d pages", len(calls), pages)
			}
		})
	}
	var first pageBody
	e.search(t, token, `{"limit": 2}`).json(t, &first)
	tampered := []byte(*first.NextPage)
	tampered[3] ^= 1
	refusals := []struct {
		name, body, contentType, token string
		status                         int
		category                       string
	}{
		{"limit zero", `{"limit": 0}`, "application/json", token, 400, "validation"},
		{"limit negative", `{"limit": -3}`, "application/json", token, 400, "validation"},
		{"limit not a number", `{"limit": [1]}`, "application/json", token, 400, "validation"},
		{"a cursor that is not one", `{"nextPage": "eyJsYXN0SWQiOjEwMDB9"}`, "application/json", token, 400, "validation"},
		{"an edited cursor", `{"nextPage": "` + string(tampered) + `"}`, "application/json", token, 400, "validation"},
		{"malformed JSON", `{"limit":`, "application/json", token, 400, "validation"},
		{"a JSON array", `[]`, "application/json", token, 400, "validation"},
		{"a form body", `limit=5`, "application/x-www-form-urlencoded", token, 415, "validation"},
		{"a body over the limit", `{"nextPage": "` + strings.Repeat("x", 8<<10) + `"}`, "application/json", token, 413, "validation"},
		{"no token", `{}`, "application/json", "", 401, "authentication"},
		{"wrong scope", `{}`, "application/json", e.Tokens.Service(t, "registration:read"), 403, "access"},
	}
	for _, tc := range refusals {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			e.Users.Reset()
			r := e.do(t, http.MethodPost, "/api/v0/volunteers/search", tc.token, tc.contentType, []byte(tc.body))
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			r.errorMessage(t, tc.category)
			if calls := e.Users.Calls(); len(calls) != 0 {
				t.Fatalf("a refused request called the users service")
			}
		})
	}
}

func TestUsersServiceDown(t *testing.T) {
	e := newEnv(t, envOptions{usersTimeout: 300 * time.Millisecond})
	e.load(t, convention, demoDepartments, carol())
	token := e.Tokens.Service(t, "volunteer:read")
	check := func(t *testing.T) {
		t.Helper()
		for _, send := range []func() response{
			func() response { return e.get(t, "/api/v0/users/1003/volunteer", token) },
			func() response { return e.search(t, token, `{}`) },
			func() response { return e.get(t, "/api/v0/volunteers/departments", token) },
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
		}
	}
	t.Run("a users service that hangs gives 503 within the timeout", func(t *testing.T) {
		e.Users.SetDelay(10 * time.Second)
		defer e.Users.SetDelay(0)
		check(t)
	})
	t.Run("a users service that is gone gives 503 at once", func(t *testing.T) {
		e.Users.Close()
		check(t)
	})
	t.Run("the internal status does not need the users service", func(t *testing.T) {
		st, err := volunteersapi.NewClient(e.Internal, time.Second).Status(t.Context(), 1003)
		if err != nil || !st.IsVolunteer {
			t.Fatalf("%+v %v", st, err)
		}
	})
}
