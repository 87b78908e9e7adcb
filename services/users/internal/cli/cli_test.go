package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokentest"
	"github.com/eventreg/eventreg/services/users/internal/cli"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// run executes `users args...` in-process with stdin and returns stdout.
// internalAuth is the service-token key of the commands the tests run; the
// auth doubles accept only calls signed with it.
var internalAuth = servicetoken.Config{Key: "a-test-internal-auth-key-of-32-characters"}

// authDouble answers handle only for calls carrying a service token for auth
// signed with internalAuth, as auth's internal listener does; else 401.
func authDouble(t *testing.T, handle http.HandlerFunc) *httptest.Server {
	t.Helper()
	v := servicetoken.NewVerifier(internalAuth, "auth")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := v.Verify(tok); !ok || err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "no service token", http.StatusUnauthorized)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	// A secret: loading the configuration removes it from the environment.
	t.Setenv("INTERNAL_AUTH_KEY", internalAuth.Key)
	root := cli.Root()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := run(t, stdin, args...)
	if err != nil {
		t.Fatalf("users %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func newDatabase(t *testing.T) {
	t.Helper()
	t.Setenv("DATABASE_URL", testkit.NewDatabase(t))
	t.Setenv("CONVENTION_ID", "2026")
}

// newDemoDatabase is newDatabase, migrated, with the demo fixture imported.
func newDemoDatabase(t *testing.T) {
	t.Helper()
	newDatabase(t)
	mustRun(t, "", "migrate", "up")
	mustRun(t, "", "import", usertest.DemoPath(t))
}

// takeEvents returns "type resource" of the events waiting in the outbox of
// DATABASE_URL and clears it.
func takeEvents(t *testing.T) []string {
	t.Helper()
	pool, err := pgdb.Open(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	got := outboxtest.Types(outboxtest.Rows(t, pool))
	outboxtest.Clear(t, pool)
	return got
}

func expectEvents(t *testing.T, want ...string) {
	t.Helper()
	if got := takeEvents(t); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestAdminCommands(t *testing.T) {
	newDatabase(t)
	t.Run("admin commands refuse an unmigrated database", func(t *testing.T) {
		_, err := run(t, "", "import", usertest.DemoPath(t))
		if err == nil || !strings.Contains(err.Error(), "users migrate up") {
			t.Fatalf("got %v", err)
		}
	})
	if out := mustRun(t, "", "migrate", "up"); !strings.Contains(out, "database at version 4") {
		t.Fatalf("migrate: %s", out)
	}
	if out := mustRun(t, "", "migrate", "status"); !strings.Contains(out, "current=true") {
		t.Fatalf("status: %s", out)
	}
	t.Run("migrate down and up again", func(t *testing.T) {
		mustRun(t, "", "migrate", "down")
		if out := mustRun(t, "", "migrate", "status"); !strings.Contains(out, "version 3 of 4") {
			t.Fatalf("status: %s", out)
		}
		mustRun(t, "", "migrate", "up")
	})

	t.Run("import, twice", func(t *testing.T) {
		var st map[string]int
		_ = json.Unmarshal([]byte(mustRun(t, "", "import", usertest.DemoPath(t), "-o", "json")), &st)
		if st["usersInserted"] != 5 || st["rolesInserted"] != 5 {
			t.Fatalf("%v", st)
		}
		expectEvents(t, "user-updated user:1001", "user-updated user:1002", "user-updated user:1003", "user-updated user:1004", "user-updated user:1005")
		out := mustRun(t, "", "import", usertest.DemoPath(t))
		if !strings.Contains(out, "users: 0 new, 0 updated, 5 unchanged") || !strings.Contains(out, "passwords hashed: 0") {
			t.Fatalf("%s", out)
		}
		expectEvents(t)
	})
	t.Run("an import that changes or removes a stored password signs the user out", func(t *testing.T) {
		doc := usertest.Demo(t)
		pw := "a new password for bob 2026"
		doc.Users[1].Password = &pw  // bob: changed
		doc.Users[2].Password = nil  // carol: removed
		doc.Users[3].FirstName = "D" // dave: no password change
		var st map[string]int
		if err := json.Unmarshal([]byte(mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc), "-o", "json")), &st); err != nil || st["usersSignedOut"] != 2 {
			t.Fatalf("%v %v", st, err)
		}
		expectEvents(t, "user-updated user:1004", "user-signed-out user:1002", "user-signed-out user:1003")
		mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc))
		expectEvents(t)
		mustRun(t, "", "import", usertest.DemoPath(t)) // back to the demo users
		takeEvents(t)
	})
	t.Run("import of a bad file names the record and stores nothing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.json")
		_ = os.WriteFile(path, []byte(`{"users": [{"id": 7, "username": "x", "email": "nope", "firstName": "X", "lastName": "Y", "bornAt": "2000-01-01"}]}`), 0o600)
		_, err := run(t, "", "import", path)
		if err == nil || !strings.Contains(err.Error(), "users[0] (id 7): email") || !strings.Contains(err.Error(), "nothing was stored") {
			t.Fatalf("got %v", err)
		}
		_ = os.WriteFile(path, []byte(`{"users": [], "unknown": 1}`), 0o600)
		if _, err := run(t, "", "import", path); err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("unknown field: %v", err)
		}
	})
	t.Run("create a user with a password from stdin", func(t *testing.T) {
		out := mustRun(t, "s3cret password\n", "create", "--username", "zoe", "--email", "zoe@example.org", "--first-name", "Zoe",
			"--last-name", "Quinn", "--born-at", "1999-09-09", "--phone", "+15555550199", "--password-stdin", "-o", "json")
		var u map[string]any
		if err := json.Unmarshal([]byte(out), &u); err != nil {
			t.Fatalf("%s", out)
		}
		if u["id"] != float64(1006) || u["hasPassword"] != true || strings.Contains(out, "s3cret") {
			t.Fatalf("%s", out)
		}
		if _, err := run(t, "", "create", "--username", "ZOE", "--email", "z2@example.org", "--first-name", "Z", "--last-name", "Q", "--born-at", "1999-09-09"); err == nil || !strings.Contains(err.Error(), "username") {
			t.Fatalf("duplicate username: %v", err)
		}
		if _, err := run(t, "", "create", "--username", "yan", "--email", "bad", "--first-name", "Y", "--last-name", "Q", "--born-at", "1999-99-09"); err == nil {
			t.Fatal("bad input accepted")
		}
		expectEvents(t, "user-updated user:1006")
	})
	t.Run("set-password", func(t *testing.T) {
		if out := mustRun(t, "another password\n", "set-password", "1006"); !strings.Contains(out, "password of user 1006 set") {
			t.Fatalf("%s", out)
		}
		if _, err := run(t, "short\n", "set-password", "1006"); err == nil || !strings.Contains(err.Error(), "at least 8") {
			t.Fatalf("short: %v", err)
		}
		if _, err := run(t, "another password\n", "set-password", "4242"); err == nil || !strings.Contains(err.Error(), "no user 4242") {
			t.Fatalf("unknown: %v", err)
		}
		if _, err := run(t, "", "set-password", "1006"); err == nil {
			t.Fatal("empty stdin accepted")
		}
		// Not for the webhooks (the service view does not show the
		// password): auth signs the user out everywhere.
		expectEvents(t, "user-signed-out user:1006")
	})
	t.Run("sign-out", func(t *testing.T) {
		if out := mustRun(t, "", "sign-out", "1006", "-o", "json"); !strings.Contains(out, `"signOutQueued": true`) {
			t.Fatalf("%s", out)
		}
		if _, err := run(t, "", "sign-out", "4242"); err == nil || !strings.Contains(err.Error(), "no user 4242") {
			t.Fatalf("unknown: %v", err)
		}
		expectEvents(t, "user-signed-out user:1006")
	})
	t.Run("roles create, grant, revoke", func(t *testing.T) {
		out := mustRun(t, "", "roles", "create", "--name", "dealers", "--permissions", "con:read dealer:manage", "-o", "json")
		if out != "{\n  \"id\": 6,\n  \"name\": \"dealers\",\n  \"permissions\": [\n    \"con:read\",\n    \"dealer:manage\"\n  ],\n  \"grantable\": false,\n  \"appsMayGrant\": true\n}\n" {
			t.Fatalf("%q", out)
		}
		if _, err := run(t, "", "roles", "create", "--name", "dealers"); err == nil || !strings.Contains(err.Error(), "exists") {
			t.Fatalf("duplicate: %v", err)
		}
		expectEvents(t)
		out = mustRun(t, "", "roles", "grant", "1006", "6", "--scope", "convention", "-o", "json")
		if !strings.Contains(out, `"scope": "convention"`) {
			t.Fatalf("%s", out)
		}
		if _, err := run(t, "", "roles", "grant", "1006", "6", "--scope", "global"); err == nil || !strings.Contains(err.Error(), "already has role 6") {
			t.Fatalf("again: %v", err)
		}
		if _, err := run(t, "", "roles", "grant", "1006", "6", "--scope", "forever"); err == nil {
			t.Fatal("bad scope accepted")
		}
		expectEvents(t, "user-updated user:1006")
		mustRun(t, "", "roles", "revoke", "1006", "6")
		if _, err := run(t, "", "roles", "revoke", "1006", "6"); err == nil || !strings.Contains(err.Error(), "does not have role 6") {
			t.Fatalf("again: %v", err)
		}
		expectEvents(t, "user-updated user:1006", "permissions-narrowed user:1006")
	})
	t.Run("roles list, mark-grantable, unmark-grantable; operators grant what apps may not", func(t *testing.T) {
		appsMayGrant := func(t *testing.T) map[int64]bool {
			t.Helper()
			var roles []struct {
				ID           int64
				Grantable    bool
				AppsMayGrant bool
			}
			out := mustRun(t, "", "roles", "list", "-o", "json")
			if err := json.Unmarshal([]byte(out), &roles); err != nil || len(roles) != 6 {
				t.Fatalf("%v %s", err, out)
			}
			m := map[int64]bool{}
			for _, r := range roles {
				m[r.ID] = r.AppsMayGrant
			}
			return m
		}
		// demo.json: admin carries sensitive permissions, unmarked; staff and
		// hr carry them, marked; user, agreement-signed and dealers none.
		want := map[int64]bool{1: false, 2: true, 3: true, 4: true, 5: true, 6: true}
		if got := appsMayGrant(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v", got)
		}
		mustRun(t, "", "roles", "mark-grantable", "1")
		if got := appsMayGrant(t); !got[1] {
			t.Fatalf("marked: %v", got)
		}
		mustRun(t, "", "roles", "unmark-grantable", "1")
		if got := appsMayGrant(t); got[1] {
			t.Fatalf("unmarked: %v", got)
		}
		if _, err := run(t, "", "roles", "mark-grantable", "99"); err == nil || !strings.Contains(err.Error(), "no role 99") {
			t.Fatalf("unknown role: %v", err)
		}
		if out := mustRun(t, "", "roles", "list"); !strings.Contains(out, "1\tadmin\tapps may grant: false") {
			t.Fatalf("%s", out)
		}
		mustRun(t, "", "roles", "grant", "1006", "1", "--scope", "global")
		mustRun(t, "", "roles", "revoke", "1006", "1")
		expectEvents(t, "user-updated user:1006", "user-updated user:1006", "permissions-narrowed user:1006")
	})
	t.Run("import sets the grantable mark as the file says", func(t *testing.T) {
		mustRun(t, "", "roles", "unmark-grantable", "2")
		mustRun(t, "", "import", usertest.DemoPath(t))
		if out := mustRun(t, "", "roles", "list"); !strings.Contains(out, "2\tstaff\tapps may grant: true") {
			t.Fatalf("%s", out)
		}
		mustRun(t, "", "roles", "mark-grantable", "1")
		mustRun(t, "", "import", usertest.DemoPath(t))
		if out := mustRun(t, "", "roles", "list"); !strings.Contains(out, "1\tadmin\tapps may grant: false") {
			t.Fatalf("%s", out)
		}
		expectEvents(t)
	})
	t.Run("generate", func(t *testing.T) {
		out := mustRun(t, "", "generate", "--users", "300", "--roles", "4", "--seed", "9", "-o", "json")
		var res map[string]int64
		_ = json.Unmarshal([]byte(out), &res)
		if res["firstUserId"] != 10_000_001 || res["lastUserId"] != 10_000_300 || res["firstRoleId"] != 7 {
			t.Fatalf("%s", out)
		}
		expectEvents(t) // synthetic benchmark data has no events
	})
}

func TestServe(t *testing.T) {
	newDemoDatabase(t)
	tokens := tokentest.New(t)
	// auth's events endpoint: the serve process relays the import's events to it.
	var mu sync.Mutex
	var published []authapi.Event
	auth := authDouble(t, func(w http.ResponseWriter, r *http.Request) {
		var batch authapi.EventBatch
		if r.Method != http.MethodPost || r.URL.Path != authapi.PathEvents || json.NewDecoder(r.Body).Decode(&batch) != nil {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		mu.Lock()
		published = append(published, batch.Events...)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(authapi.EventsAccepted{Accepted: len(batch.Events)})
	})
	pub, _ := testkit.FreePort()
	internal, _ := testkit.FreePort()
	ops, _ := testkit.FreePort()
	for k, v := range map[string]string{
		"PUBLIC_ADDR": fmt.Sprintf("127.0.0.1:%d", pub), "INTERNAL_ADDR": fmt.Sprintf("127.0.0.1:%d", internal),
		"OPS_ADDR":    fmt.Sprintf("127.0.0.1:%d", ops),
		"AUTH_ISSUER": "https://auth.test", "AUTH_JWKS_URL": tokens.JWKSURL, "CURSOR_KEY": strings.Repeat("k", 32),
		"VOLUNTEERS_INTERNAL_URL": "http://127.0.0.1:1", "LOG_LEVEL": "error", "REDIS_URL": testkit.NewRedis(t),
		"VOLUNTEERS_PUBLIC_URL": "http://127.0.0.1:1", "REGISTRATIONS_PUBLIC_URL": "http://127.0.0.1:1",
		"AUTH_INTERNAL_URL": auth.URL,
	} {
		t.Setenv(k, v)
	}
	t.Run("a missing variable is named", func(t *testing.T) {
		t.Setenv("VOLUNTEERS_INTERNAL_URL", "")
		os.Unsetenv("VOLUNTEERS_INTERNAL_URL")
		if _, err := run(t, "", "serve"); err == nil || !strings.Contains(err.Error(), "VOLUNTEERS_INTERNAL_URL") {
			t.Fatalf("got %v", err)
		}
	})
	// CURSOR_KEY and INTERNAL_AUTH_KEY are secrets: loading the
	// configuration removes them from the environment.
	t.Setenv("CURSOR_KEY", strings.Repeat("k", 32))
	t.Setenv("INTERNAL_AUTH_KEY", internalAuth.Key)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := cli.Root()
		root.SetArgs([]string{"serve"})
		done <- root.ExecuteContext(ctx)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", ops)
	err := testkit.Poll(ctx, 20*time.Second, func(ctx context.Context) error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		cancel()
		t.Fatalf("not ready: %v (serve: %v)", err, <-done)
	}
	err = testkit.Poll(ctx, 10*time.Second, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(published) < 5 {
			return fmt.Errorf("%d events published", len(published))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the import's events were not relayed: %v", err)
	}
	mu.Lock()
	if e := published[0]; len(published) != 5 || e.Type != "user-updated" || e.Source != "users" || e.Resource != "user:1001" ||
		!strings.Contains(string(e.Data), `"username":"alice"`) {
		t.Fatalf("published %+v", published)
	}
	mu.Unlock()
	verify := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/internal/credentials/verify", internal),
			strings.NewReader(`{"username":"bob","password":"bob demo password 2026"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	token, _ := servicetoken.NewSigner(internalAuth, "auth").Token("users")
	if st := verify(token); st != 200 {
		t.Fatalf("verify through the served binary with a service token: %d", st)
	}
	if st := verify(""); st != 401 {
		t.Fatalf("verify through the served binary without a service token: %d", st)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v0/users/1001", pub))
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("public route without a token: %v %v", err, resp)
	}
	resp.Body.Close()
	// Wired to the owners' public listeners, where nothing listens here.
	for _, path := range []string{"/api/v0/users/1001/volunteer", "/api/v0/users/1001/registration"} {
		resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", pub, path))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(b), `{"errors":{"server"`) {
			t.Fatalf("%s with its owner away: %d %s", path, resp.StatusCode, b)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}
