package userapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func mustClosedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func newHangingServer(t *testing.T, release chan struct{}) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func loadSynthetic(t *testing.T, e *env, users, roles int) {
	t.Helper()
	usertest.Generate(t, e.Pool, users, roles)
}

func TestListRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	t.Run("limit=1000&nextPage= is the first page of up to 100", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/v0/roles?limit=1000&nextPage=", tok, "")
		r.Expect(t, 200)
		want := `{"data":[{"id":"1","name":"admin"},{"id":"2","name":"staff"},{"id":"3","name":"hr"},{"id":"4","name":"user"},{"id":"5","name":"agreement-signed"}],"nextPage":null,"hasMore":false}`
		r.ExpectBody(t, want)
	})
	t.Run("pages of 2 see each role once", func(t *testing.T) {
		var names []string
		path := "/api/v0/roles?limit=2"
		for range 10 {
			r := e.Call(t, "GET", path, tok, "")
			r.Expect(t, 200)
			var p struct {
				Data     []struct{ Name string } `json:"data"`
				NextPage *string                 `json:"nextPage"`
				HasMore  bool                    `json:"hasMore"`
			}
			_ = json.Unmarshal(r.Body, &p)
			for _, d := range p.Data {
				names = append(names, d.Name)
			}
			if !p.HasMore {
				break
			}
			path = "/api/v0/roles?limit=2&nextPage=" + *p.NextPage
		}
		if strings.Join(names, ",") != "admin,staff,hr,user,agreement-signed" {
			t.Fatalf("%v", names)
		}
	})
	for _, q := range []string{"limit=0", "limit=abc", "limit=-1", "nextPage=garbage", "nextPage=AQAAAAAAAAAB"} {
		t.Run("400 for "+q, func(t *testing.T) {
			e.Call(t, "GET", "/api/v0/roles?"+q, tok, "").ExpectError(t, 400, "validation", "")
		})
	}
	t.Run("a search cursor is not a roles cursor", func(t *testing.T) {
		loadSynthetic(t, e, 3, 0)
		r := e.Call(t, "POST", "/api/v0/users/search", tok, `{"limit": 1}`)
		cur := r.Map(t)["nextPage"].(string)
		e.Call(t, "GET", "/api/v0/roles?nextPage="+cur, tok, "").ExpectError(t, 400, "validation", "")
	})
}

func TestUserRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	t.Run("the roles held globally and for the current convention", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/v0/users/1001/roles", tok, "")
		r.Expect(t, 200)
		r.ExpectBody(t, `{"data":[{"id":"1","name":"admin","scope":"global"},{"id":"5","name":"agreement-signed","scope":"convention"}]}`)
	})
	t.Run("a membership of another convention is not listed", func(t *testing.T) {
		if _, err := e.Pool.Exec(context.Background(), `INSERT INTO role_members (role_id, user_id, convention_id) VALUES (3, 1002, '2019')`); err != nil {
			t.Fatal(err)
		}
		r := e.Call(t, "GET", "/api/v0/users/1002/roles", tok, "")
		r.ExpectBody(t, `{"data":[{"id":"4","name":"user","scope":"global"}]}`)
	})
	t.Run("a user without roles has an empty list", func(t *testing.T) {
		if _, err := e.Pool.Exec(context.Background(), `DELETE FROM role_members WHERE user_id = 1005`); err != nil {
			t.Fatal(err)
		}
		r := e.Call(t, "GET", "/api/v0/users/1005/roles", tok, "")
		r.ExpectBody(t, `{"data":[]}`)
	})
	t.Run("unknown user 404, bad id 400", func(t *testing.T) {
		e.Call(t, "GET", "/api/v0/users/4242/roles", tok, "").ExpectError(t, 404, "resource", "No such user.")
		e.Call(t, "GET", "/api/v0/users/x1/roles", tok, "").ExpectError(t, 400, "validation", "")
	})
}

func TestGrantAndRevoke(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.Tokens.Service(t, "user:roles:update")
	t.Run("PUT gives the role: 204 with no body", func(t *testing.T) {
		r := e.Call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "convention"}`)
		r.Expect(t, 204)
		if len(r.Body) != 0 {
			t.Fatalf("body %q", r.Body)
		}
		if got := e.rolesOf(t, "1002"); !strings.Contains(got, `{"id":"2","name":"staff","scope":"convention"}`) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("the role already held is 409 UserWasAlreadyAdded, in either scope", func(t *testing.T) {
		for _, scope := range []string{"convention", "global"} {
			r := e.Call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "`+scope+`"}`)
			r.Expect(t, 409)
			cat, _, code := r.Error(t)
			if cat != "logic" || code != 3 {
				t.Fatalf("%s", r.Body)
			}
		}
	})
	t.Run("the permissions follow the role", func(t *testing.T) {
		r := e.CallInternal(t, "GET", "/internal/users/1002/permissions", "")
		if !strings.Contains(string(r.Body), "con:read") {
			t.Fatalf("%s", r.Body)
		}
	})
	t.Run("unknown user or role is 404", func(t *testing.T) {
		e.Call(t, "PUT", "/api/v0/users/4242/roles/2", up, `{"scope": "global"}`).ExpectError(t, 404, "resource", "No such user.")
		e.Call(t, "PUT", "/api/v0/users/1002/roles/99", up, `{"scope": "global"}`).ExpectError(t, 404, "resource", "No such role.")
		e.Call(t, "DELETE", "/api/v0/users/4242/roles/2", up, "").ExpectError(t, 404, "resource", "No such user.")
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/99", up, "").ExpectError(t, 404, "resource", "No such role.")
	})
	for _, tc := range []struct{ name, path, body string }{
		{"no body", "/api/v0/users/1003/roles/1", ""},
		{"no scope", "/api/v0/users/1003/roles/1", `{}`},
		{"a bad scope", "/api/v0/users/1003/roles/1", `{"scope": "forever"}`},
		{"scope not a string", "/api/v0/users/1003/roles/1", `{"scope": 1}`},
		{"malformed JSON", "/api/v0/users/1003/roles/1", `{"scope": "global"`},
		{"a body that is an array", "/api/v0/users/1003/roles/1", `["global"]`},
		{"a non-numeric user id", "/api/v0/users/abc/roles/1", `{"scope": "global"}`},
		{"a non-numeric role id", "/api/v0/users/1003/roles/admin", `{"scope": "global"}`},
	} {
		t.Run("400 for "+tc.name+" and nothing changes", func(t *testing.T) {
			before := e.rolesOf(t, "1003")
			e.Call(t, "PUT", tc.path, up, tc.body).ExpectError(t, 400, "validation", "")
			if after := e.rolesOf(t, "1003"); after != before {
				t.Fatalf("changed: %s → %s", before, after)
			}
		})
	}
	t.Run("DELETE removes it: 204, then 404 (already removed)", func(t *testing.T) {
		r := e.Call(t, "DELETE", "/api/v0/users/1002/roles/2", up, "")
		r.Expect(t, 204)
		if got := e.rolesOf(t, "1002"); strings.Contains(got, `"staff"`) {
			t.Fatalf("%s", got)
		}
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/2", up, "").ExpectError(t, 404, "resource", "The user does not have this role.")
	})
	t.Run("DELETE removes a global membership too", func(t *testing.T) {
		e.Call(t, "DELETE", "/api/v0/users/1003/roles/4", up, "").Expect(t, 204)
		if got := e.rolesOf(t, "1003"); strings.Contains(got, `"user"`) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("DELETE with a bad id is 400", func(t *testing.T) {
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/-2", up, "").ExpectError(t, 400, "validation", "")
	})
}

// TestAppsGrantOnlyGrantableRoles: the ceiling of role changes through the
// API (docs/users.md, Roles apps may grant). In demo.json admin (1) carries
// sensitive permissions unmarked, staff (2) carries them marked grantable,
// user (4) carries none.
func TestAppsGrantOnlyGrantableRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.Tokens.Service(t, "user:roles:update")
	const refusal = "Apps may not grant or remove this role: it carries sensitive permissions and an operator has not marked it grantable."
	t.Run("granting an unmarked role with sensitive permissions is 403 access, in either scope, and changes nothing", func(t *testing.T) {
		before := e.rolesOf(t, "1002")
		for _, scope := range []string{"global", "convention"} {
			e.Call(t, "PUT", "/api/v0/users/1002/roles/1", up, `{"scope": "`+scope+`"}`).ExpectError(t, 403, "access", refusal)
		}
		if after := e.rolesOf(t, "1002"); after != before {
			t.Fatalf("changed: %s → %s", before, after)
		}
		if r := e.CallInternal(t, "GET", "/internal/users/1002/permissions", ""); strings.Contains(string(r.Body), "user:roles:update") {
			t.Fatalf("bob got admin's permissions: %s", r.Body)
		}
	})
	t.Run("removing it is refused alike, held or not", func(t *testing.T) {
		e.Call(t, "DELETE", "/api/v0/users/1001/roles/1", up, "").ExpectError(t, 403, "access", refusal)
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/1", up, "").ExpectError(t, 403, "access", refusal)
		if got := e.rolesOf(t, "1001"); !strings.Contains(got, `"admin"`) {
			t.Fatalf("alice lost admin: %s", got)
		}
	})
	t.Run("an unknown role is still 404, an unknown user with a refused role 403", func(t *testing.T) {
		e.Call(t, "PUT", "/api/v0/users/1002/roles/99", up, `{"scope": "global"}`).ExpectError(t, 404, "resource", "No such role.")
		e.Call(t, "PUT", "/api/v0/users/4242/roles/1", up, `{"scope": "global"}`).ExpectError(t, 403, "access", refusal)
	})
	t.Run("a role marked grantable, and one without sensitive permissions, are granted and removed", func(t *testing.T) {
		for _, id := range []string{"2", "4"} { // 1005 holds neither
			e.Call(t, "PUT", "/api/v0/users/1005/roles/"+id, up, `{"scope": "global"}`).Expect(t, 204)
			e.Call(t, "DELETE", "/api/v0/users/1005/roles/"+id, up, "").Expect(t, 204)
		}
	})
	t.Run("an operator's mark opens admin to apps, and unmarking closes it again", func(t *testing.T) {
		roles := role.NewService(roledb.New(e.Pool), "2026")
		if err := roles.SetGrantable(context.Background(), 1, true); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "PUT", "/api/v0/users/1002/roles/1", up, `{"scope": "global"}`).Expect(t, 204)
		if err := roles.SetGrantable(context.Background(), 1, false); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "DELETE", "/api/v0/users/1002/roles/1", up, "").ExpectError(t, 403, "access", refusal)
	})
}

func TestConcurrentRoleChanges(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.Tokens.Service(t, "user:roles:update")
	t.Run("concurrent identical PUTs: exactly one 204, the rest 409", func(t *testing.T) {
		const n = 12
		statuses := make(chan int, n)
		testkit.AtOnce(n, func(i int) {
			scope := []string{"global", "convention"}[i%2]
			statuses <- e.Call(t, "PUT", "/api/v0/users/1005/roles/2", up, `{"scope": "`+scope+`"}`).Status
		})
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[204] != 1 || count[409] != n-1 {
			t.Fatalf("statuses %v", count)
		}
		var rows int
		_ = e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM role_members WHERE user_id = 1005 AND role_id = 2`).Scan(&rows)
		if rows != 1 {
			t.Fatalf("%d memberships", rows)
		}
	})
	t.Run("concurrent grants and revokes stay consistent", func(t *testing.T) {
		const n = 20
		var mu sync.Mutex
		granted, revoked := 0, 0
		testkit.AtOnce(n, func(i int) {
			var r response
			if i%2 == 0 {
				r = e.Call(t, "PUT", "/api/v0/users/1004/roles/3", up, `{"scope": "global"}`)
			} else {
				r = e.Call(t, "DELETE", "/api/v0/users/1004/roles/3", up, "")
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == 204 && i%2 == 0:
				granted++
			case r.Status == 204:
				revoked++
			case r.Status != 409 && r.Status != 404:
				t.Errorf("status %d: %s", r.Status, r.Body)
			}
		})
		var rows int
		_ = e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM role_members WHERE user_id = 1004 AND role_id = 3`).Scan(&rows)
		// Successes alternate grant, revoke, grant...: the final state is their difference.
		if d := granted - revoked; d != rows || (d != 0 && d != 1) {
			t.Fatalf("granted %d, revoked %d, rows %d", granted, revoked, rows)
		}
		if granted == 0 {
			t.Fatal("no grant succeeded")
		}
	})
}

func TestInternalAPI(t *testing.T) {
	e := newEnv(t, envOptions{})
	t.Run("summaries of known ids, unknown left out", func(t *testing.T) {
		r := e.CallInternal(t, "POST", "/internal/users/summaries", `{"ids": [1004, 1001, 999]}`)
		r.Expect(t, 200)
		want := `{"data":[{"id":"1001","firstName":"Alice","lastName":"Liddell","username":"alice","preferredName":"Al","phone":"+15555550100","email":"alice@example.org"},{"id":"1004","firstName":"David","lastName":"Jones","username":"dave","preferredName":null,"phone":null,"email":"Dave.Mixed@Example.org"}]}`
		r.ExpectBody(t, want)
	})
	t.Run("no ids: empty data", func(t *testing.T) {
		r := e.CallInternal(t, "POST", "/internal/users/summaries", `{"ids": []}`)
		r.ExpectBody(t, `{"data":[]}`)
	})
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	for name, body := range map[string]string{
		"101 ids":      `{"ids": [` + strings.Join(ids, ",") + `]}`,
		"a zero id":    `{"ids": [0]}`,
		"string ids":   `{"ids": ["abc"]}`,
		"bad JSON":     `{"ids": [`,
		"missing body": ``,
	} {
		t.Run("summaries: 400 for "+name, func(t *testing.T) {
			e.CallInternal(t, "POST", "/internal/users/summaries", body).ExpectError(t, 400, "validation", "")
		})
	}
	t.Run("verify by username, by email in any case", func(t *testing.T) {
		for _, login := range []string{"alice", "ALICE", "Alice@Example.org"} {
			r := e.CallInternal(t, "POST", "/internal/credentials/verify", `{"username": "`+login+`", "password": "correct horse battery staple"}`)
			r.Expect(t, 200)
			r.ExpectBody(t, `{"userId":1001}`)
		}
	})
	for name, body := range map[string]string{
		"a wrong password": `{"username": "alice", "password": "wrong horse battery staple"}`,
		"an unknown user":  `{"username": "mallory", "password": "correct horse battery staple"}`,
		"an empty login":   `{"username": "", "password": "x"}`,
	} {
		t.Run("verify: 401 for "+name, func(t *testing.T) {
			e.CallInternal(t, "POST", "/internal/credentials/verify", body).ExpectError(t, 401, "authentication", "The username or password is wrong.")
		})
	}
	t.Run("account: the id a username or email names, in any case; 404 for none", func(t *testing.T) {
		for _, login := range []string{"alice", " ALICE ", "Alice@Example.org"} {
			r := e.CallInternal(t, "POST", "/internal/credentials/account", `{"username": "`+login+`"}`)
			r.Expect(t, 200)
			r.ExpectBody(t, `{"userId":1001}`)
		}
		for _, login := range []string{"mallory", "", "mallory@example.org"} {
			e.CallInternal(t, "POST", "/internal/credentials/account", `{"username": "`+login+`"}`).ExpectError(t, 404, "resource", "No such user.")
		}
		e.CallInternal(t, "POST", "/internal/credentials/account", `{"username": 1}`).ExpectError(t, 400, "validation", "")
	})
	t.Run("verify: 400 for a malformed body", func(t *testing.T) {
		e.CallInternal(t, "POST", "/internal/credentials/verify", `{"username": 1}`).ExpectError(t, 400, "validation", "")
	})
	t.Run("permissions: union of global and current-convention roles", func(t *testing.T) {
		r := e.CallInternal(t, "GET", "/internal/users/1003/permissions", "")
		r.Expect(t, 200)
		r.ExpectBody(t, `{"userId":1003,"permissions":["con:read","registration:read","system:login","user:read","volunteer:read"]}`)
		r = e.CallInternal(t, "GET", "/internal/users/1004/permissions", "")
		r.ExpectBody(t, `{"userId":1004,"permissions":["system:login"]}`)
	})
	t.Run("permissions: unknown user 404, bad id 400", func(t *testing.T) {
		e.CallInternal(t, "GET", "/internal/users/4242/permissions", "").ExpectError(t, 404, "resource", "")
		e.CallInternal(t, "GET", "/internal/users/abc/permissions", "").ExpectError(t, 400, "validation", "")
	})
	t.Run("the client reads this service's verdicts as verdicts (they carry its mark)", func(t *testing.T) {
		c := usersclient.NewClient(e.Internal, 5*time.Second, e.Credentials)
		ctx := context.Background()
		if _, err := c.Verify(ctx, "alice", "wrong horse battery staple"); !errors.Is(err, usersclient.ErrBadCredentials) {
			t.Errorf("wrong password: %v", err)
		}
		if _, err := c.Account(ctx, "mallory"); !errors.Is(err, usersclient.ErrNotFound) {
			t.Errorf("unknown account: %v", err)
		}
		if _, err := c.Permissions(ctx, 4242); !errors.Is(err, usersclient.ErrNotFound) {
			t.Errorf("unknown user: %v", err)
		}
	})
	t.Run("the internal routes are not on the public listener", func(t *testing.T) {
		r := e.Send(t, e.URL, "POST", "/internal/credentials/verify", "", []byte(`{"username": "alice", "password": "correct horse battery staple"}`), jsonContent)
		r.Expect(t, 404)
	})
}

func TestDatabaseDownIs503(t *testing.T) {
	if testing.Short() {
		t.Skip("starts listeners")
	}
	e := newEnv(t, envOptions{databaseURL: "postgres://postgres@" + mustClosedPort(t) + "/users?sslmode=disable&connect_timeout=1"})
	for _, tc := range []struct{ method, path, token, body string }{
		{"GET", "/api/v0/users/1001", e.Tokens.Service(t, "user:read"), ""},
		{"POST", "/api/v0/users/search", e.Tokens.Service(t, "user:read"), `{"filter": {"roleId": 1}}`},
		{"GET", "/api/v0/roles", e.Tokens.Service(t, "user:read"), ""},
		{"PUT", "/api/v0/users/1001/roles/2", e.Tokens.Service(t, "user:roles:update"), `{"scope": "global"}`},
		{"GET", "/api/users/current", e.Tokens.ForUser(t, "1001", "pii:basic"), ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.Call(t, tc.method, tc.path, tc.token, tc.body)
			r.ExpectError(t, 503, "server", "")
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		})
	}
	t.Run("verify answers 503, not 401, so auth does not count a failed login", func(t *testing.T) {
		e.CallInternal(t, "POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`).ExpectError(t, 503, "server", "")
	})
}

func TestRateLimitPerClient(t *testing.T) {
	e := newEnv(t, envOptions{redisURL: testkit.NewRedis(t), rateLimit: ratelimit.Config{PerSecond: 1, Burst: 4}})
	tok := e.Tokens.Service(t, "user:read")
	for range 4 {
		e.Call(t, "GET", "/api/v0/users/1001", tok, "").Expect(t, 200)
	}
	r := e.Call(t, "GET", "/api/v0/roles", tok, "")
	r.ExpectError(t, 429, "rateLimit", "Too many requests.")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	t.Run("the internal API is not limited", func(t *testing.T) {
		e.CallInternal(t, "GET", "/internal/users/1001/permissions", "").Expect(t, 200)
	})
}

// Concurrent role lookups share database queries (role.Service coalesces them,
// as user.Service does for Get); each answer is still its own user's, a user
// without roles still has an empty list and an unknown one is still 404.
func TestConcurrentRoleReadsShareQueriesAndKeepTheirAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.Tokens.Service(t, "user:read")
	if _, err := e.Pool.Exec(context.Background(), `DELETE FROM role_members WHERE user_id = 1005`); err != nil {
		t.Fatal(err)
	}
	ids := []string{"1001", "1002", "1003", "1004", "1005", "4242"}
	want := map[string]response{}
	for _, id := range ids { // one at a time: each its own query
		want[id] = e.Call(t, "GET", "/api/v0/users/"+id+"/roles", tok, "")
	}
	if string(want["1001"].Body) == string(want["1002"].Body) || string(want["1005"].Body) != `{"data":[]}` || want["4242"].Status != 404 {
		t.Fatalf("the users' roles do not tell them apart: %s / %s / %s / %d",
			want["1001"].Body, want["1002"].Body, want["1005"].Body, want["4242"].Status)
	}

	const rounds = 40
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = "/api/v0/users/" + id + "/roles"
	}
	got, queries := e.getConcurrently(t, tok, paths, rounds)
	for i, id := range ids {
		for _, r := range got[paths[i]] {
			if diff := testkit.BytesDiff(want[id].Body, r.Body); r.Status != want[id].Status || diff != "" {
				t.Errorf("user %s: %d, want %d; body (-want +got):\n%s", id, r.Status, want[id].Status, diff)
			}
		}
	}
	if queries >= rounds*int64(len(ids)) {
		t.Errorf("%d queries for %d concurrent reads: none were shared", queries, rounds*len(ids))
	}
	t.Logf("%d concurrent role reads took %d queries", rounds*len(ids), queries)
}

// A login burst beyond what the password hasher's slots get through before
// the request deadline: the excess waits, then answers 503 with Retry-After
// (auth shows "try again", and does not count a failed login); nothing else
// fails and every login that got a slot is checked correctly.
func TestLoginFloodQueuesThen503(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes for seconds")
	}
	e := newEnv(t, envOptions{passwordSlots: 1})
	// One slot, ~25 ms a check, a 3 s deadline: about 120 get through.
	const n = 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	var problems []string
	token := e.ServiceToken(t)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, e.Internal+"/internal/credentials/verify",
				strings.NewReader(`{"username": "alice", "password": "correct horse battery staple"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, err.Error())
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			counts[resp.StatusCode]++
			switch {
			case resp.StatusCode == 200 && string(body) != `{"userId":1001}`:
				problems = append(problems, "200 with "+string(body))
			case resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "":
				problems = append(problems, "503 without Retry-After")
			case resp.StatusCode != 200 && resp.StatusCode != 503:
				problems = append(problems, fmt.Sprintf("%d: %s", resp.StatusCode, body))
			}
		})
	}
	wg.Wait()
	t.Logf("answers: %v", counts)
	if len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), problems[0])
	}
	if counts[200] == 0 || counts[503] == 0 {
		t.Fatalf("want both checked logins and 503s for the excess, got %v", counts)
	}
	// The slot is free again: the next login is checked at once.
	r := e.CallInternal(t, "POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`)
	r.Expect(t, 200)
}
