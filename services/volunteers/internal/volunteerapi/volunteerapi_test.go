package volunteerapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/volunteersclient"
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
		r := e.Get(t, "/api/v0/users/1003/volunteer", token)
		r.Expect(t, http.StatusOK)
		var v volunteerBody
		r.JSON(t, &v)
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
		r := e.Get(t, "/api/v0/users/1002/volunteer", token)
		for _, want := range []string{`"contactMethods":[]`, `"options":[]`} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("body lacks %s: %s", want, r.Body)
			}
		}
	})
	refusals := []resourcetest.Refusal{
		{Name: "user without a record is 404", Path: "/api/v0/users/1001/volunteer", Token: token, Status: 404, Category: "resource"},
		{Name: "record of another convention is invisible", Path: "/api/v0/users/1004/volunteer", Token: token, Status: 404, Category: "resource"},
		{Name: "id that is not a number is 404", Path: "/api/v0/users/carol/volunteer", Token: token, Status: 404, Category: "resource"},
		{Name: "no token is 401", Path: "/api/v0/users/1003/volunteer", Status: 401, Category: "authentication", Message: "Invalid token."},
		{Name: "expired token is 401 Token expired.", Path: "/api/v0/users/1003/volunteer", Token: e.Tokens.Expired(t, "volunteer:read"), Status: 401, Category: "authentication", Message: "Token expired."},
		{Name: "token without volunteer:read is 403", Path: "/api/v0/users/1003/volunteer", Token: e.Tokens.Service(t, "registration:read"), Status: 403, Category: "access"},
		{Name: "departments without volunteer:read is 403", Path: "/api/v0/volunteers/departments", Token: e.Tokens.Service(t, "user:read"), Status: 403, Category: "access"},
		{Name: "departments without a token is 401", Path: "/api/v0/volunteers/departments", Status: 401, Category: "authentication", Message: "Invalid token."},
	}
	e.CheckRefusals(t, refusals)
	t.Run("a volunteer whose user no longer exists is 404", func(t *testing.T) {
		e.load(t, convention, nil, fixture.Volunteer{UserID: 1009})
		e.Users.Remove(1009)
		if r := e.Get(t, "/api/v0/users/1009/volunteer", token); r.Status != 404 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestDepartments(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.load(t, convention, demoDepartments)
	e.Users.Reset()
	r := e.Get(t, "/api/v0/volunteers/departments", e.Tokens.Service(t, "volunteer:read"))
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
	r.JSON(t, &deps)
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

	t.Run("concurrent lists share reads and each sees the whole list", func(t *testing.T) {
		token := e.Tokens.Service(t, "volunteer:read")
		e.Users.Reset()
		const rounds, callers = 30, 8
		before := e.Pool.Stat().AcquireCount()
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					r := e.Get(t, "/api/v0/volunteers/departments", token)
					var got []struct {
						ID    string        `json:"id"`
						Leads []summaryBody `json:"leads"`
					}
					r.JSON(t, &got)
					if r.Status != 200 || len(got) != 3 || got[1].ID != "11" || len(got[1].Leads) != 2 {
						t.Errorf("%d %s", r.Status, r.Body)
					}
				}
			}()
		}
		wg.Wait()
		queries, calls := e.Pool.Stat().AcquireCount()-before, len(e.Users.Calls())
		if queries >= rounds*callers || calls >= rounds*callers {
			t.Errorf("%d queries and %d users calls for %d concurrent lists: none were shared", queries, calls, rounds*callers)
		}
		t.Logf("%d concurrent lists took %d queries and %d users calls", rounds*callers, queries, calls)
	})

	t.Run("a list asked for after a change sees it", func(t *testing.T) {
		changed := append([]fixture.Department(nil), demoDepartments...)
		changed[0].Name = "Registration desk"
		e.load(t, convention, changed)
		r := e.Get(t, "/api/v0/volunteers/departments", e.Tokens.Service(t, "volunteer:read"))
		if !strings.Contains(string(r.Body), `"name":"Registration desk"`) {
			t.Fatalf("after the change: %s", r.Body)
		}
	})
}

func TestVolunteerStatusForTheUsersService(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.load(t, convention, demoDepartments, carol(), bob())
	e.load(t, "2025", nil, fixture.Volunteer{UserID: 1004})
	client := volunteersclient.NewClient(e.Internal, time.Second, e.Credentials)
	cases := []struct {
		name string
		user int64
		want volunteersclient.Status
	}{
		{"a volunteer who leads", 1003, volunteersclient.Status{IsVolunteer: true, IsDepartmentLead: true}},
		{"a volunteer who does not lead", 1002, volunteersclient.Status{IsVolunteer: true}},
		{"a lead who does not volunteer", 1005, volunteersclient.Status{IsDepartmentLead: true}},
		{"a volunteer of another convention only", 1004, volunteersclient.Status{}},
		{"an unknown user", 424242, volunteersclient.Status{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.Status(t.Context(), tc.user)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
	t.Run("concurrent lookups share queries and keep their answers", func(t *testing.T) {
		// 8 callers at once, each with its own connection (a burst of
		// hundreds would leave dialled connections unused, which hold the
		// server's shutdown for seconds).
		const rounds, callers = 40, 8
		before := e.Pool.Stat().AcquireCount()
		var wg sync.WaitGroup
		for w := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < rounds*len(cases); i += callers {
					tc := cases[i%len(cases)]
					if got, err := client.Status(t.Context(), tc.user); err != nil || got != tc.want {
						t.Errorf("%s: got %+v %v, want %+v", tc.name, got, err, tc.want)
					}
				}
			}()
		}
		wg.Wait()
		queries := e.Pool.Stat().AcquireCount() - before
		if queries >= rounds*int64(len(cases)) {
			t.Errorf("%d queries for %d concurrent lookups: none were shared", queries, rounds*len(cases))
		}
		t.Logf("%d concurrent lookups took %d queries", rounds*len(cases), queries)
	})
	internalGet := func(t *testing.T, path, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.Internal+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	t.Run("an id that is not a number is 400", func(t *testing.T) {
		tok, _ := e.Credentials.Token("volunteers")
		resp := internalGet(t, "/internal/users/abc/volunteer-status", tok)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"validation"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("a peer without a service token for volunteers is refused", func(t *testing.T) {
		forUsers, _ := e.Credentials.Token("users")
		expired, _ := e.Credentials.TokenAt("volunteers", time.Now().Add(-time.Hour))
		for name, tok := range map[string]string{"no token": "", "a token for users": forUsers, "an expired token": expired} {
			resp := internalGet(t, "/internal/users/1003/volunteer-status", tok)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 || !strings.Contains(string(body), `{"errors":{"authentication":{"code":200`) {
				t.Errorf("%s: %d %s", name, resp.StatusCode, body)
			}
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
	e := newEnv(t, envOptions{BodyLimit: 4 << 10})
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
		r := e.Search(t, token, `{}`)
		var p pageBody
		r.JSON(t, &p)
		if r.Status != 200 || len(p.Data) != 100 || !p.HasMore || p.NextPage == nil || p.Data[0].User.ID != "2002" {
			t.Fatalf("%d %.300s", r.Status, r.Body)
		}
		if calls := e.Users.Calls(); len(calls) != 1 || len(calls[0]) != 100 {
			t.Fatalf("%d users calls for a page of 100", len(calls))
		}
	})
	t.Run("limit above 100 is 100", func(t *testing.T) {
		var p pageBody
		e.Search(t, token, `{"limit": 5000}`).JSON(t, &p)
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
				r := e.Search(t, token, body+"}")
				var p pageBody
				r.JSON(t, &p)
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
	e.Search(t, token, `{"limit": 2}`).JSON(t, &first)
	tampered := []byte(*first.NextPage)
	tampered[3] ^= 1
	refusals := []resourcetest.BodyRefusal{
		{Name: "limit zero", Body: `{"limit": 0}`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "limit negative", Body: `{"limit": -3}`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "limit not a number", Body: `{"limit": [1]}`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "a cursor that is not one", Body: `{"nextPage": "eyJsYXN0SWQiOjEwMDB9"}`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "an edited cursor", Body: `{"nextPage": "` + string(tampered) + `"}`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "malformed JSON", Body: `{"limit":`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "a JSON array", Body: `[]`, ContentType: "application/json", Token: token, Status: 400, Category: "validation"},
		{Name: "a form body", Body: `limit=5`, ContentType: "application/x-www-form-urlencoded", Token: token, Status: 415, Category: "validation"},
		{Name: "a body over the limit", Body: `{"nextPage": "` + strings.Repeat("x", 8<<10) + `"}`, ContentType: "application/json", Token: token, Status: 413, Category: "validation"},
		{Name: "no token", Body: `{}`, ContentType: "application/json", Status: 401, Category: "authentication"},
		{Name: "wrong scope", Body: `{}`, ContentType: "application/json", Token: e.Tokens.Service(t, "registration:read"), Status: 403, Category: "access"},
	}
	e.CheckBodyRefusals(t, "/api/v0/volunteers/search", refusals)
}

func TestUsersServiceDown(t *testing.T) {
	e := newEnv(t, envOptions{UsersTimeout: 300 * time.Millisecond})
	e.load(t, convention, demoDepartments, carol())
	token := e.Tokens.Service(t, "volunteer:read")
	check := func(t *testing.T) {
		t.Helper()
		resourcetest.ExpectUsersUnavailable(t,
			func() response { return e.Get(t, "/api/v0/users/1003/volunteer", token) },
			func() response { return e.Search(t, token, `{}`) },
			func() response { return e.Get(t, "/api/v0/volunteers/departments", token) },
		)
	}
	e.CheckUsersOutages(t, check)
	t.Run("the internal status does not need the users service", func(t *testing.T) {
		st, err := volunteersclient.NewClient(e.Internal, time.Second, e.Credentials).Status(t.Context(), 1003)
		if err != nil || !st.IsVolunteer {
			t.Fatalf("%+v %v", st, err)
		}
	})
}
