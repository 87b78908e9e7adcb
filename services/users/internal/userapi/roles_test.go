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
	usertest.Generate(t, e.pool, users, roles)
}

func TestListRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.keys.service(t, "user:read")
	t.Run("limit=1000&nextPage= is the first page of up to 100", func(t *testing.T) {
		r := e.call(t, "GET", "/api/v0/roles?limit=1000&nextPage=", tok, "")
		expect(t, r, 200)
		want := `{"data":[{"id":"1","name":"admin"},{"id":"2","name":"staff"},{"id":"3","name":"hr"},{"id":"4","name":"user"},{"id":"5","name":"agreement-signed"}],"nextPage":null,"hasMore":false}`
		if string(r.body) != want {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("pages of 2 see each role once", func(t *testing.T) {
		var names []string
		path := "/api/v0/roles?limit=2"
		for range 10 {
			r := e.call(t, "GET", path, tok, "")
			expect(t, r, 200)
			var p struct {
				Data     []struct{ Name string } `json:"data"`
				NextPage *string                 `json:"nextPage"`
				HasMore  bool                    `json:"hasMore"`
			}
			_ = json.Unmarshal(r.body, &p)
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
			expectError(t, e.call(t, "GET", "/api/v0/roles?"+q, tok, ""), 400, "validation", "")
		})
	}
	t.Run("a search cursor is not a roles cursor", func(t *testing.T) {
		loadSynthetic(t, e, 3, 0)
		r := e.call(t, "POST", "/api/v0/users/search", tok, `{"limit": 1}`)
		cur := r.json(t)["nextPage"].(string)
		expectError(t, e.call(t, "GET", "/api/v0/roles?nextPage="+cur, tok, ""), 400, "validation", "")
	})
}

func TestUserRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.keys.service(t, "user:read")
	t.Run("the roles held globally and for the current convention", func(t *testing.T) {
		r := e.call(t, "GET", "/api/v0/users/1001/roles", tok, "")
		expect(t, r, 200)
		if string(r.body) != `{"data":[{"id":"1","name":"admin","scope":"global"},{"id":"5","name":"agreement-signed","scope":"convention"}]}` {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("a membership of another convention is not listed", func(t *testing.T) {
		if _, err := e.pool.Exec(context.Background(), `INSERT INTO role_members (role_id, user_id, convention_id) VALUES (3, 1002, '2019')`); err != nil {
			t.Fatal(err)
		}
		r := e.call(t, "GET", "/api/v0/users/1002/roles", tok, "")
		if string(r.body) != `{"data":[{"id":"4","name":"user","scope":"global"}]}` {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("a user without roles has an empty list", func(t *testing.T) {
		if _, err := e.pool.Exec(context.Background(), `DELETE FROM role_members WHERE user_id = 1005`); err != nil {
			t.Fatal(err)
		}
		r := e.call(t, "GET", "/api/v0/users/1005/roles", tok, "")
		if string(r.body) != `{"data":[]}` {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("unknown user 404, bad id 400", func(t *testing.T) {
		expectError(t, e.call(t, "GET", "/api/v0/users/4242/roles", tok, ""), 404, "resource", "No such user.")
		expectError(t, e.call(t, "GET", "/api/v0/users/x1/roles", tok, ""), 400, "validation", "")
	})
}

func TestGrantAndRevoke(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.keys.service(t, "user:roles:update")
	read := e.keys.service(t, "user:read")
	rolesOf := func(t *testing.T, id string) string {
		t.Helper()
		return string(e.call(t, "GET", "/api/v0/users/"+id+"/roles", read, "").body)
	}
	t.Run("PUT gives the role: 204 with no body", func(t *testing.T) {
		r := e.call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "convention"}`)
		expect(t, r, 204)
		if len(r.body) != 0 {
			t.Fatalf("body %q", r.body)
		}
		if got := rolesOf(t, "1002"); !strings.Contains(got, `{"id":"2","name":"staff","scope":"convention"}`) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("the role already held is 409 UserWasAlreadyAdded, in either scope", func(t *testing.T) {
		for _, scope := range []string{"convention", "global"} {
			r := e.call(t, "PUT", "/api/v0/users/1002/roles/2", up, `{"scope": "`+scope+`"}`)
			expect(t, r, 409)
			cat, _, code := r.errorOf(t)
			if cat != "logic" || code != 3 {
				t.Fatalf("%s", r.body)
			}
		}
	})
	t.Run("the permissions follow the role", func(t *testing.T) {
		r := e.callInternal(t, "GET", "/internal/users/1002/permissions", "")
		if !strings.Contains(string(r.body), "con:read") {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("unknown user or role is 404", func(t *testing.T) {
		expectError(t, e.call(t, "PUT", "/api/v0/users/4242/roles/2", up, `{"scope": "global"}`), 404, "resource", "No such user.")
		expectError(t, e.call(t, "PUT", "/api/v0/users/1002/roles/99", up, `{"scope": "global"}`), 404, "resource", "No such role.")
		expectError(t, e.call(t, "DELETE", "/api/v0/users/4242/roles/2", up, ""), 404, "resource", "No such user.")
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1002/roles/99", up, ""), 404, "resource", "No such role.")
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
			before := rolesOf(t, "1003")
			expectError(t, e.call(t, "PUT", tc.path, up, tc.body), 400, "validation", "")
			if after := rolesOf(t, "1003"); after != before {
				t.Fatalf("changed: %s → %s", before, after)
			}
		})
	}
	t.Run("DELETE removes it: 204, then 404 (already removed)", func(t *testing.T) {
		r := e.call(t, "DELETE", "/api/v0/users/1002/roles/2", up, "")
		expect(t, r, 204)
		if got := rolesOf(t, "1002"); strings.Contains(got, `"staff"`) {
			t.Fatalf("%s", got)
		}
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1002/roles/2", up, ""), 404, "resource", "The user does not have this role.")
	})
	t.Run("DELETE removes a global membership too", func(t *testing.T) {
		expect(t, e.call(t, "DELETE", "/api/v0/users/1003/roles/4", up, ""), 204)
		if got := rolesOf(t, "1003"); strings.Contains(got, `"user"`) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("DELETE with a bad id is 400", func(t *testing.T) {
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1002/roles/-2", up, ""), 400, "validation", "")
	})
}

// TestAppsGrantOnlyGrantableRoles: the ceiling of role changes through the
// API (docs/users.md, Roles apps may grant). In demo.json admin (1) carries
// sensitive permissions unmarked, staff (2) carries them marked grantable,
// user (4) carries none.
func TestAppsGrantOnlyGrantableRoles(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.keys.service(t, "user:roles:update")
	read := e.keys.service(t, "user:read")
	rolesOf := func(t *testing.T, id string) string {
		t.Helper()
		return string(e.call(t, "GET", "/api/v0/users/"+id+"/roles", read, "").body)
	}
	const refusal = "Apps may not grant or remove this role: it carries sensitive permissions and an operator has not marked it grantable."
	t.Run("granting an unmarked role with sensitive permissions is 403 access, in either scope, and changes nothing", func(t *testing.T) {
		before := rolesOf(t, "1002")
		for _, scope := range []string{"global", "convention"} {
			expectError(t, e.call(t, "PUT", "/api/v0/users/1002/roles/1", up, `{"scope": "`+scope+`"}`), 403, "access", refusal)
		}
		if after := rolesOf(t, "1002"); after != before {
			t.Fatalf("changed: %s → %s", before, after)
		}
		if r := e.callInternal(t, "GET", "/internal/users/1002/permissions", ""); strings.Contains(string(r.body), "user:roles:update") {
			t.Fatalf("bob got admin's permissions: %s", r.body)
		}
	})
	t.Run("removing it is refused alike, held or not", func(t *testing.T) {
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1001/roles/1", up, ""), 403, "access", refusal)
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1002/roles/1", up, ""), 403, "access", refusal)
		if got := rolesOf(t, "1001"); !strings.Contains(got, `"admin"`) {
			t.Fatalf("alice lost admin: %s", got)
		}
	})
	t.Run("an unknown role is still 404, an unknown user with a refused role 403", func(t *testing.T) {
		expectError(t, e.call(t, "PUT", "/api/v0/users/1002/roles/99", up, `{"scope": "global"}`), 404, "resource", "No such role.")
		expectError(t, e.call(t, "PUT", "/api/v0/users/4242/roles/1", up, `{"scope": "global"}`), 403, "access", refusal)
	})
	t.Run("a role marked grantable, and one without sensitive permissions, are granted and removed", func(t *testing.T) {
		for _, id := range []string{"2", "4"} { // 1005 holds neither
			expect(t, e.call(t, "PUT", "/api/v0/users/1005/roles/"+id, up, `{"scope": "global"}`), 204)
			expect(t, e.call(t, "DELETE", "/api/v0/users/1005/roles/"+id, up, ""), 204)
		}
	})
	t.Run("an operator's mark opens admin to apps, and unmarking closes it again", func(t *testing.T) {
		roles := role.NewService(roledb.New(e.pool), "2026")
		if err := roles.SetGrantable(context.Background(), 1, true); err != nil {
			t.Fatal(err)
		}
		expect(t, e.call(t, "PUT", "/api/v0/users/1002/roles/1", up, `{"scope": "global"}`), 204)
		if err := roles.SetGrantable(context.Background(), 1, false); err != nil {
			t.Fatal(err)
		}
		expectError(t, e.call(t, "DELETE", "/api/v0/users/1002/roles/1", up, ""), 403, "access", refusal)
	})
}

func TestConcurrentRoleChanges(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := e.keys.service(t, "user:roles:update")
	t.Run("concurrent identical PUTs: exactly one 204, the rest 409", func(t *testing.T) {
		const n = 12
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				scope := []string{"global", "convention"}[i%2]
				statuses <- e.call(t, "PUT", "/api/v0/users/1005/roles/2", up, `{"scope": "`+scope+`"}`).status
			}()
		}
		close(start)
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[204] != 1 || count[409] != n-1 {
			t.Fatalf("statuses %v", count)
		}
		var rows int
		_ = e.pool.QueryRow(context.Background(), `SELECT count(*) FROM role_members WHERE user_id = 1005 AND role_id = 2`).Scan(&rows)
		if rows != 1 {
			t.Fatalf("%d memberships", rows)
		}
	})
	t.Run("concurrent grants and revokes stay consistent", func(t *testing.T) {
		const n = 20
		var mu sync.Mutex
		granted, revoked := 0, 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var r response
				if i%2 == 0 {
					r = e.call(t, "PUT", "/api/v0/users/1004/roles/3", up, `{"scope": "global"}`)
				} else {
					r = e.call(t, "DELETE", "/api/v0/users/1004/roles/3", up, "")
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.status == 204 && i%2 == 0:
					granted++
				case r.status == 204:
					revoked++
				case r.status != 409 && r.status != 404:
					t.Errorf("status %d: %s", r.status, r.body)
				}
			}()
		}
		close(start)
		wg.Wait()
		var rows int
		_ = e.pool.QueryRow(context.Background(), `SELECT count(*) FROM role_members WHERE user_id = 1004 AND role_id = 3`).Scan(&rows)
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
		r := e.callInternal(t, "POST", "/internal/users/summaries", `{"ids": [1004, 1001, 999]}`)
		expect(t, r, 200)
		want := `{"data":[{"id":"1001","firstName":"Alice","lastName":"Liddell","username":"alice","preferredName":"Al","phone":"+15555550100","email":"alice@example.org"},{"id":"1004","firstName":"David","lastName":"Jones","username":"dave","preferredName":null,"phone":null,"email":"Dave.Mixed@Example.org"}]}`
		if string(r.body) != want {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("no ids: empty data", func(t *testing.T) {
		r := e.callInternal(t, "POST", "/internal/users/summaries", `{"ids": []}`)
		if string(r.body) != `{"data":[]}` {
			t.Fatalf("%s", r.body)
		}
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
			expectError(t, e.callInternal(t, "POST", "/internal/users/summaries", body), 400, "validation", "")
		})
	}
	t.Run("verify by username, by email in any case", func(t *testing.T) {
		for _, login := range []string{"alice", "ALICE", "Alice@Example.org"} {
			r := e.callInternal(t, "POST", "/internal/credentials/verify", `{"username": "`+login+`", "password": "correct horse battery staple"}`)
			expect(t, r, 200)
			if string(r.body) != `{"userId":1001}` {
				t.Fatalf("%s", r.body)
			}
		}
	})
	for name, body := range map[string]string{
		"a wrong password": `{"username": "alice", "password": "wrong horse battery staple"}`,
		"an unknown user":  `{"username": "mallory", "password": "correct horse battery staple"}`,
		"an empty login":   `{"username": "", "password": "x"}`,
	} {
		t.Run("verify: 401 for "+name, func(t *testing.T) {
			expectError(t, e.callInternal(t, "POST", "/internal/credentials/verify", body), 401, "authentication", "The username or password is wrong.")
		})
	}
	t.Run("account: the id a username or email names, in any case; 404 for none", func(t *testing.T) {
		for _, login := range []string{"alice", " ALICE ", "Alice@Example.org"} {
			r := e.callInternal(t, "POST", "/internal/credentials/account", `{"username": "`+login+`"}`)
			expect(t, r, 200)
			if string(r.body) != `{"userId":1001}` {
				t.Fatalf("%q: %s", login, r.body)
			}
		}
		for _, login := range []string{"mallory", "", "mallory@example.org"} {
			expectError(t, e.callInternal(t, "POST", "/internal/credentials/account", `{"username": "`+login+`"}`), 404, "resource", "No such user.")
		}
		expectError(t, e.callInternal(t, "POST", "/internal/credentials/account", `{"username": 1}`), 400, "validation", "")
	})
	t.Run("verify: 400 for a malformed body", func(t *testing.T) {
		expectError(t, e.callInternal(t, "POST", "/internal/credentials/verify", `{"username": 1}`), 400, "validation", "")
	})
	t.Run("permissions: union of global and current-convention roles", func(t *testing.T) {
		r := e.callInternal(t, "GET", "/internal/users/1003/permissions", "")
		expect(t, r, 200)
		if string(r.body) != `{"userId":1003,"permissions":["con:read","registration:read","system:login","user:read","volunteer:read"]}` {
			t.Fatalf("%s", r.body)
		}
		r = e.callInternal(t, "GET", "/internal/users/1004/permissions", "")
		if string(r.body) != `{"userId":1004,"permissions":["system:login"]}` {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("permissions: unknown user 404, bad id 400", func(t *testing.T) {
		expectError(t, e.callInternal(t, "GET", "/internal/users/4242/permissions", ""), 404, "resource", "")
		expectError(t, e.callInternal(t, "GET", "/internal/users/abc/permissions", ""), 400, "validation", "")
	})
	t.Run("the client reads this service's verdicts as verdicts (they carry its mark)", func(t *testing.T) {
		c := usersclient.NewClient(e.internal, 5*time.Second, e.peer)
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
		r := e.send(t, e.public, false, "POST", "/internal/credentials/verify", "", `{"username": "alice", "password": "correct horse battery staple"}`, nil)
		expect(t, r, 404)
	})
}

func TestDatabaseDownIs503(t *testing.T) {
	if testing.Short() {
		t.Skip("starts listeners")
	}
	e := newEnv(t, envOptions{databaseURL: "postgres://postgres@" + mustClosedPort(t) + "/users?sslmode=disable&connect_timeout=1"})
	for _, tc := range []struct{ method, path, token, body string }{
		{"GET", "/api/v0/users/1001", e.keys.service(t, "user:read"), ""},
		{"POST", "/api/v0/users/search", e.keys.service(t, "user:read"), `{"filter": {"roleId": 1}}`},
		{"GET", "/api/v0/roles", e.keys.service(t, "user:read"), ""},
		{"PUT", "/api/v0/users/1001/roles/2", e.keys.service(t, "user:roles:update"), `{"scope": "global"}`},
		{"GET", "/api/users/current", e.keys.obo(t, "1001", "pii:basic"), ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.call(t, tc.method, tc.path, tc.token, tc.body)
			expectError(t, r, 503, "server", "")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		})
	}
	t.Run("verify answers 503, not 401, so auth does not count a failed login", func(t *testing.T) {
		expectError(t, e.callInternal(t, "POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`), 503, "server", "")
	})
}

func TestRateLimitPerClient(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	e := newEnv(t, envOptions{redisURL: testkit.NewRedis(t), rateLimit: ratelimit.Config{PerSecond: 1, Burst: 4}})
	tok := e.keys.service(t, "user:read")
	for range 4 {
		expect(t, e.call(t, "GET", "/api/v0/users/1001", tok, ""), 200)
	}
	r := e.call(t, "GET", "/api/v0/roles", tok, "")
	expectError(t, r, 429, "rateLimit", "Too many requests.")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	t.Run("the internal API is not limited", func(t *testing.T) {
		expect(t, e.callInternal(t, "GET", "/internal/users/1001/permissions", ""), 200)
	})
}

// Concurrent role lookups share database queries (role.Service coalesces them,
// as user.Service does for Get); each answer is still its own user's, a user
// without roles still has an empty list and an unknown one is still 404.
func TestConcurrentRoleReadsShareQueriesAndKeepTheirAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := e.keys.service(t, "user:read")
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM role_members WHERE user_id = 1005`); err != nil {
		t.Fatal(err)
	}
	ids := []string{"1001", "1002", "1003", "1004", "1005", "4242"}
	want := map[string]response{}
	for _, id := range ids { // one at a time: each its own query
		want[id] = e.call(t, "GET", "/api/v0/users/"+id+"/roles", tok, "")
	}
	if string(want["1001"].body) == string(want["1002"].body) || string(want["1005"].body) != `{"data":[]}` || want["4242"].status != 404 {
		t.Fatalf("the users' roles do not tell them apart: %s / %s / %s / %d",
			want["1001"].body, want["1002"].body, want["1005"].body, want["4242"].status)
	}

	const rounds = 40
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = "/api/v0/users/" + id + "/roles"
	}
	got, queries := e.getConcurrently(t, tok, paths, rounds)
	for i, id := range ids {
		for _, r := range got[paths[i]] {
			if r.status != want[id].status || string(r.body) != string(want[id].body) {
				t.Errorf("user %s: %d %s, want %d %s", id, r.status, r.body, want[id].status, want[id].body)
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
	token := e.serviceToken(t)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, e.internal+"/internal/credentials/verify",
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
	r := e.callInternal(t, "POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`)
	expect(t, r, 200)
}
