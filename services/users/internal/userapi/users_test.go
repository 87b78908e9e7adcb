package userapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/resourcetest"
)

func TestRootAndDocs(t *testing.T) {
	e := newEnv(t, envOptions{})
	t.Run("GET / is an HTML page linking the API document", func(t *testing.T) {
		r := e.Call(t, "GET", "/", "", "")
		r.Expect(t, 200)
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.Body), `href="/api/docs"`) {
			t.Fatalf("%s %s", r.Header.Get("Content-Type"), r.Body)
		}
	})
	t.Run("GET /api/docs serves the OpenAPI document", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/docs", "", "")
		r.Expect(t, 200)
		if r.Map(t)["openapi"] != "3.1.0" {
			t.Fatalf("%.200s", r.Body)
		}
	})
}

func TestAuthenticationAndScopes(t *testing.T) {
	e := newEnv(t, envOptions{})
	cases := []struct {
		name, method, path, token, body string
		status                          int
		category, message               string
	}{
		{"no token", "GET", "/api/v0/users/1001", "", "", 401, "authentication", "Invalid token."},
		{"garbage token", "GET", "/api/v0/users/1001", "not.a.token", "", 401, "authentication", "Invalid token."},
		{"expired token", "GET", "/api/v0/users/1001", e.Tokens.Expired(t, "user:read"), "", 401, "authentication", "Token expired."},
		{"service token without user:read", "GET", "/api/v0/users/1001", e.Tokens.Service(t, "volunteer:read"), "", 403, "access", ""},
		{"OBO token without user:read on a service endpoint", "GET", "/api/v0/users/1001", e.Tokens.ForUser(t, "1001", "pii:basic", "pii:email"), "", 403, "access", ""},
		{"search without user:read", "POST", "/api/v0/users/search", e.Tokens.Service(t, "registration:read"), "{}", 403, "access", ""},
		{"roles without user:read", "GET", "/api/v0/roles", e.Tokens.Service(t, "user:roles:update"), "", 403, "access", ""},
		{"user roles without user:read", "GET", "/api/v0/users/1001/roles", e.Tokens.Service(t, "user:roles:update"), "", 403, "access", ""},
		{"PUT role with only user:read", "PUT", "/api/v0/users/1002/roles/2", e.Tokens.Service(t, "user:read"), `{"scope":"global"}`, 403, "access", ""},
		{"DELETE role with only user:read", "DELETE", "/api/v0/users/1001/roles/1", e.Tokens.Service(t, "user:read"), "", 403, "access", ""},
		{"current user with a service token", "GET", "/api/users/current", e.Tokens.Service(t, "user:read"), "", 403, "access", ""},
		{"current user without pii:basic", "GET", "/api/users/current", e.Tokens.ForUser(t, "1001", "pii:email"), "", 403, "access", ""},
		{"current user with a service token carrying pii:basic", "GET", "/api/users/current", e.Tokens.Service(t, "pii:basic"), "", 403, "access", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Call(t, tc.method, tc.path, tc.token, tc.body)
			r.ExpectError(t, tc.status, tc.category, tc.message)
			if tc.status == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("an OBO token carrying user:read may use the service endpoints", func(t *testing.T) {
		e.Call(t, "GET", "/api/v0/users/1002", e.Tokens.ForUser(t, "1001", "pii:basic", "user:read"), "").Expect(t, 200)
	})
}

func TestGetUser(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	t.Run("the service view", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/v0/users/1001", tok, "")
		r.Expect(t, 200)
		want := `{"id":"1001","email":"alice@example.org","preferredName":"Al","firstName":"Alice","lastName":"Liddell","username":"alice","verified":true,"phone":"+15555550100","address":{"addressCity":"Springfield","addressCountry":"US","addressLine1":"1 Main St","addressLine2":null,"addressState":"IL","addressZipcode":"62701"}}`
		r.ExpectBody(t, want)
	})
	t.Run("a user without address, phone and preferred name has nulls", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/v0/users/1004", tok, "")
		r.Expect(t, 200)
		m := r.Map(t)
		for _, f := range []string{"address", "phone", "preferredName"} {
			if v, ok := m[f]; !ok || v != nil {
				t.Errorf("%s: %v (present %v)", f, v, ok)
			}
		}
		if m["email"] != "Dave.Mixed@Example.org" || m["verified"] != false {
			t.Errorf("%s", r.Body)
		}
	})
	t.Run("an unknown user is 404", func(t *testing.T) {
		e.Call(t, "GET", "/api/v0/users/999999", tok, "").ExpectError(t, 404, "resource", "No such user.")
	})
	for _, bad := range []string{"abc", "0", "-1", "1e3", "+1001", "99999999999999999999"} {
		t.Run("a non-numeric id "+bad+" is 400", func(t *testing.T) {
			e.Call(t, "GET", "/api/v0/users/"+bad, tok, "").ExpectError(t, 400, "validation", "")
		})
	}
	for _, path := range []string{"/api/v0/users/../1", "/api/v0/users/%2E%2E%2F1", "/api/v0/users/1001%2F..%2F1002"} {
		t.Run("a path escaping the id is refused, never served: "+path, func(t *testing.T) {
			r := e.Send(t, e.URL, "GET", path, tok, nil, nil)
			if r.Status < 400 || r.Status > 499 || strings.Contains(string(r.Body), "alice") {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	t.Run("a wrong method is 405", func(t *testing.T) {
		r := e.Send(t, e.URL, "POST", "/api/v0/users/1001", tok, []byte("{}"), jsonContent)
		r.ExpectError(t, 405, "resource", "")
	})
}

func TestCurrentUser(t *testing.T) {
	e := newEnv(t, envOptions{})
	t.Run("pii:basic alone gives the basic fields and none of the restricted ones", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1003", "pii:basic"), "")
		r.Expect(t, 200)
		m := r.Map(t)
		if m["id"] != float64(1003) || m["sub"] != "1003" || m["username"] != "carol" || m["bornAt"] != "1995-02-14" ||
			m["isVolunteer"] != true || m["isDepartmentLead"] != true || m["preferredName"] != "Cee" ||
			m["profilePictureUrl"] != "https://cdn.example.org/u/1003.png" || m["identityVerified"] != true {
			t.Fatalf("%s", r.Body)
		}
		for _, f := range []string{"email", "phone", "addressLine1", "addressLine2", "addressCity", "addressState", "addressZipcode", "addressCountry"} {
			if _, ok := m[f]; ok {
				t.Errorf("%s present without its scope", f)
			}
		}
		// carol: staff (convention) + user (global).
		perms, _ := json.Marshal(m["permissions"])
		if string(perms) != `["con:read","registration:read","system:login","user:read","volunteer:read"]` {
			t.Errorf("permissions %s", perms)
		}
		roles, _ := json.Marshal(m["userRoles"])
		if string(roles) != `[{"id":"2","name":"staff"},{"id":"4","name":"user"}]` {
			t.Errorf("userRoles %s", roles)
		}
	})
	t.Run("each pii scope adds its fields", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1001", "pii:basic", "pii:address", "pii:email", "pii:phone"), "")
		r.Expect(t, 200)
		m := r.Map(t)
		if m["email"] != "alice@example.org" || m["phone"] != "+15555550100" || m["addressCity"] != "Springfield" ||
			m["addressCountry"] != "US" || m["addressLine1"] != "1 Main St" || m["addressState"] != "IL" || m["addressZipcode"] != "62701" {
			t.Fatalf("%s", r.Body)
		}
		if v, ok := m["addressLine2"]; !ok || v != nil {
			t.Fatalf("addressLine2 %v present=%v", v, ok)
		}
		if m["isVolunteer"] != false || m["isDepartmentLead"] != false {
			t.Fatalf("volunteer flags of a non-volunteer: %s", r.Body)
		}
		r = e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1002", "pii:basic", "pii:email"), "")
		m = r.Map(t)
		if _, ok := m["phone"]; ok || m["email"] != "bob@example.org" {
			t.Fatalf("%s", r.Body)
		}
	})
	t.Run("a user without an address gets null address fields with pii:address", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1004", "pii:basic", "pii:address", "pii:phone"), "")
		r.Expect(t, 200)
		m := r.Map(t)
		for _, f := range []string{"addressLine1", "addressCity", "phone", "profilePictureUrl"} {
			if v, ok := m[f]; !ok || v != nil {
				t.Errorf("%s = %v (present %v)", f, v, ok)
			}
		}
	})
	t.Run("the caller's own id works like current", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/1002", e.Tokens.ForUser(t, "1002", "pii:basic"), "")
		r.Expect(t, 200)
		if r.Map(t)["username"] != "bob" {
			t.Fatalf("%s", r.Body)
		}
	})
	t.Run("another user's id is 403", func(t *testing.T) {
		e.Call(t, "GET", "/api/users/1001", e.Tokens.ForUser(t, "1002", "pii:basic"), "").ExpectError(t, 403, "access", "")
	})
	t.Run("a non-numeric id is 400", func(t *testing.T) {
		e.Call(t, "GET", "/api/users/me", e.Tokens.ForUser(t, "1002", "pii:basic"), "").ExpectError(t, 400, "validation", "")
	})
	t.Run("a token for a user that no longer exists is 404", func(t *testing.T) {
		e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "424242", "pii:basic"), "").ExpectError(t, 404, "resource", "")
	})
}

func TestCurrentUserWhenVolunteersIsDown(t *testing.T) {
	// A port nothing listens on: connections are refused.
	ln := mustClosedPort(t)
	e := newEnv(t, envOptions{volunteersURL: "http://" + ln})
	start := time.Now()
	r := e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1003", "pii:basic"), "")
	r.ExpectError(t, 503, "server", "The volunteers service is temporarily unavailable; try again shortly.")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	t.Run("the service view does not depend on volunteers", func(t *testing.T) {
		e.Call(t, "GET", "/api/v0/users/1003", e.Tokens.Service(t, "user:read"), "").Expect(t, 200)
	})
}

func TestCurrentUserWhenVolunteersHangs(t *testing.T) {
	hang := make(chan struct{})
	srv := newHangingServer(t, hang)
	e := newEnv(t, envOptions{volunteersURL: srv})
	start := time.Now()
	r := e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1003", "pii:basic"), "")
	close(hang)
	r.ExpectError(t, 503, "server", "")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v: the call to volunteers is not bounded", d)
	}
}

func TestSearchUsers(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	// 150 synthetic users: ids 10000001..10000150, roles 6..8.
	loadSynthetic(t, e, 150, 3)

	// walk is the ids of the users a walk with pages of limit sees; every
	// page before the last is full.
	walk := func(t *testing.T, filter string, limit int) []string {
		t.Helper()
		pages := resourcetest.WalkSearch[struct{ ID string }](t, e.Env, "/api/v0/users/search", tok, limit, filter)
		var ids []string
		for i, page := range pages {
			if i < len(pages)-1 && len(page) != limit {
				t.Fatalf("a page of %d before the end", len(page))
			}
			for _, u := range page {
				ids = append(ids, u.ID)
			}
		}
		return ids
	}
	onceEach := func(t *testing.T, ids []string, want int) {
		t.Helper()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("user %s seen twice", id)
			}
			seen[id] = true
		}
		if len(ids) != want {
			t.Fatalf("%d users, want %d", len(ids), want)
		}
	}

	t.Run("a walk with small pages sees every user exactly once, in id order", func(t *testing.T) {
		ids := walk(t, "", 7)
		onceEach(t, ids, 155)
		if ids[0] != "1001" || ids[154] != "10000150" {
			t.Fatalf("order: %s ... %s", ids[0], ids[154])
		}
	})
	t.Run("roleId as a number and as a string walk the same members", func(t *testing.T) {
		var want int
		_ = e.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT user_id) FROM role_members WHERE role_id = 6 AND convention_id IN ('', '2026')`).Scan(&want)
		a := walk(t, `{"roleId": 6}`, 5)
		b := walk(t, `{"roleId": "6"}`, 5)
		onceEach(t, a, want)
		if strings.Join(a, ",") != strings.Join(b, ",") || want == 0 {
			t.Fatalf("number %v, string %v", a, b)
		}
	})
	t.Run("roleId of the demo: global and current-convention members", func(t *testing.T) {
		if got := walk(t, `{"roleId": 5}`, 1); strings.Join(got, ",") != "1001,1004" {
			t.Fatalf("%v", got)
		}
		if got := walk(t, `{"roleId": 999}`, 10); len(got) != 0 {
			t.Fatalf("unknown role: %v", got)
		}
	})
	t.Run("email matches exactly, ignoring case", func(t *testing.T) {
		r := e.Call(t, "POST", "/api/v0/users/search", tok, `{"filter": {"email": "DAVE.mixed@example.ORG"}, "limit": 1}`)
		r.Expect(t, 200)
		if !strings.Contains(string(r.Body), `"id":"1004"`) || r.Map(t)["hasMore"] != false {
			t.Fatalf("%s", r.Body)
		}
		if got := walk(t, `{"email": "dave.mixed@example"}`, 10); len(got) != 0 {
			t.Fatalf("a prefix matched: %v", got)
		}
	})
	t.Run("email and roleId together", func(t *testing.T) {
		if got := walk(t, `{"email": "alice@example.org", "roleId": 1}`, 10); strings.Join(got, ",") != "1001" {
			t.Fatalf("%v", got)
		}
		if got := walk(t, `{"email": "alice@example.org", "roleId": 2}`, 10); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	t.Run("no body, {} and no limit: first page of 100", func(t *testing.T) {
		for _, body := range []string{"", "{}", `{"limit": null, "nextPage": null, "filter": null}`, `{"nextPage": ""}`} {
			r := e.Call(t, "POST", "/api/v0/users/search", tok, body)
			r.Expect(t, 200)
			m := r.Map(t)
			if n := len(m["data"].([]any)); n != 100 || m["hasMore"] != true {
				t.Fatalf("body %q: %d users, hasMore %v", body, n, m["hasMore"])
			}
		}
	})
	t.Run("limit above 100 is 100", func(t *testing.T) {
		r := e.Call(t, "POST", "/api/v0/users/search", tok, `{"limit": 1000}`)
		r.Expect(t, 200)
		if n := len(r.Map(t)["data"].([]any)); n != 100 {
			t.Fatalf("%d", n)
		}
	})
	t.Run("an empty result has an empty array, hasMore false and nextPage null", func(t *testing.T) {
		r := e.Call(t, "POST", "/api/v0/users/search", tok, `{"filter": {"email": "nobody@example.org"}}`)
		r.Expect(t, 200)
		r.ExpectBody(t, `{"data":[],"nextPage":null,"hasMore":false}`)
	})

	first := e.Call(t, "POST", "/api/v0/users/search", tok, `{"limit": 2, "filter": {"roleId": 6}}`)
	cursor, _ := first.Map(t)["nextPage"].(string)
	if cursor == "" {
		t.Fatal("no cursor")
	}
	tampered := []byte(cursor)
	tampered[5] ^= 1
	bad := []struct{ name, body string }{
		{"malformed JSON", `{"limit": 2`},
		{"two JSON values", `{} {}`},
		{"duplicate keys", `{"limit": 1, "limit": 2}`},
		{"limit 0", `{"limit": 0}`},
		{"negative limit", `{"limit": -5}`},
		{"limit as text", `{"limit": "ten"}`},
		{"fractional limit", `{"limit": 2.5}`},
		{"filter not an object", `{"filter": "roleId=6"}`},
		{"roleId not numeric", `{"filter": {"roleId": "abc"}}`},
		{"roleId zero", `{"filter": {"roleId": 0}}`},
		{"roleId boolean", `{"filter": {"roleId": true}}`},
		{"email not a string", `{"filter": {"email": 42}}`},
		{"empty email", `{"filter": {"email": ""}}`},
		{"nextPage not a string", `{"nextPage": 12}`},
		{"a garbage cursor", `{"nextPage": "eyJsYXN0SWQiOjEwMDB9"}`},
		{"a tampered cursor", fmt.Sprintf(`{"limit": 2, "filter": {"roleId": 6}, "nextPage": %q}`, tampered)},
		{"a cursor reused with another role", fmt.Sprintf(`{"limit": 2, "filter": {"roleId": 7}, "nextPage": %q}`, cursor)},
		{"a cursor reused without the filter", fmt.Sprintf(`{"limit": 2, "nextPage": %q}`, cursor)},
		{"a cursor reused with an email added", fmt.Sprintf(`{"limit": 2, "filter": {"roleId": 6, "email": "a@b.c"}, "nextPage": %q}`, cursor)},
	}
	for _, tc := range bad {
		t.Run("400 for "+tc.name, func(t *testing.T) {
			e.Call(t, "POST", "/api/v0/users/search", tok, tc.body).ExpectError(t, 400, "validation", "")
		})
	}
	t.Run("the cursor still works with its own filter, in any spelling of the role id", func(t *testing.T) {
		e.Call(t, "POST", "/api/v0/users/search", tok, fmt.Sprintf(`{"limit": 2, "filter": {"roleId": "6"}, "nextPage": %q}`, cursor)).Expect(t, 200)
	})
	t.Run("413 for a huge body", func(t *testing.T) {
		body := `{"filter": {"email": "` + strings.Repeat("x", 2<<20) + `"}}`
		e.Call(t, "POST", "/api/v0/users/search", tok, body).ExpectError(t, 413, "validation", "")
	})
	t.Run("415 for a body that is not JSON", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/v0/users/search", tok, "application/x-www-form-urlencoded", []byte("limit=2"))
		r.ExpectError(t, 415, "validation", "")
	})
}

func TestCurrentUserWhenVolunteersAnswersAnError(t *testing.T) {
	for _, status := range []int{404, 500} {
		t.Run(fmt.Sprintf("volunteers answers %d: 503, never a guess", status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no", status)
			}))
			defer srv.Close()
			e := newEnv(t, envOptions{volunteersURL: srv.URL})
			e.Call(t, "GET", "/api/users/current", e.Tokens.ForUser(t, "1003", "pii:basic"), "").ExpectError(t, 503, "server", "")
		})
	}
}

// Concurrent reads share database queries (user.Service coalesces them); each
// answer is still its own user's, and an unknown id among them is still 404.
func TestConcurrentGetsShareQueriesAndKeepTheirAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	ids := []string{"1001", "1002", "1003", "1004", "1005", "999999"}
	const rounds = 40
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = "/api/v0/users/" + id
	}
	got, queries := e.getConcurrently(t, tok, paths, rounds)
	for i, id := range ids {
		for _, r := range got[paths[i]] {
			var body struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(r.Body, &body)
			switch {
			case id == "999999" && r.Status != 404:
				t.Errorf("unknown user: %d", r.Status)
			case id != "999999" && (r.Status != 200 || body.ID != id):
				t.Errorf("user %s: status %d, body id %q", id, r.Status, body.ID)
			}
		}
	}
	if queries >= rounds*int64(len(ids)) {
		t.Errorf("%d queries for %d concurrent reads: none were shared", queries, rounds*len(ids))
	}
	t.Logf("%d concurrent reads took %d queries", rounds*len(ids), queries)
}
