package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// secrets are set again before each command: configuration loading unsets
// them from the environment (they must not leak to child processes).
var secrets = map[string]string{}

// run executes the auth command tree with args and returns stdout.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	for k, v := range secrets {
		if _, set := os.LookupEnv(k); !set {
			t.Setenv(k, v)
		}
	}
	root := Root()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("auth %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func setup(t *testing.T) {
	t.Setenv("DATABASE_URL", testkit.NewDatabase(t))
	secrets["CLIENT_SECRET_KEY"] = strings.Repeat("k", 32)
	secrets["KEY_ENCRYPTION_KEY"] = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	_, redisURL := testkit.StartRedisT(t, false)
	secrets["REDIS_URL"] = redisURL
	t.Cleanup(func() { delete(secrets, "REDIS_URL") })
	must(t, "migrate", "up")
}

func TestClientsCommands(t *testing.T) {
	setup(t)
	var created struct {
		ClientID     int64  `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	out := must(t, "clients", "create", "--name", "Shift Planner", "--description", "Plans shifts", "--kind", "service", "--scopes", "volunteer:read user:read", "-o", "json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ClientID < 1000 || len(created.ClientSecret) < 43 {
		t.Fatalf("create printed %q", out)
	}
	id := jsonNumber(created.ClientID)

	t.Run("get and list show the client, never the secret", func(t *testing.T) {
		for _, out := range []string{must(t, "clients", "get", id, "-o", "json"), must(t, "clients", "list", "-o", "json"), must(t, "clients", "list")} {
			if !strings.Contains(out, "Shift Planner") || strings.Contains(out, created.ClientSecret) {
				t.Fatalf("%s", out)
			}
		}
	})
	t.Run("rotate-secret prints a new secret", func(t *testing.T) {
		out := must(t, "clients", "rotate-secret", id, "-o", "json")
		if !strings.Contains(out, `"client_secret"`) || strings.Contains(out, created.ClientSecret) {
			t.Fatalf("%s", out)
		}
	})
	t.Run("bad definitions are refused with the reason", func(t *testing.T) {
		cases := map[string][]string{
			"OBO scope for a service client": {"--name", "x", "--kind", "service", "--scopes", "pii:basic"},
			"http redirect off loopback":     {"--name", "x", "--kind", "obo", "--scopes", "pii:basic", "--redirect-uri", "http://example.org/cb"},
			"obo without redirect URI":       {"--name", "x", "--kind", "obo", "--scopes", "pii:basic"},
			"unknown scope":                  {"--name", "x", "--kind", "service", "--scopes", "user:write"},
			"unknown kind":                   {"--name", "x", "--kind", "robot", "--scopes", "user:read"},
		}
		for name, args := range cases {
			if _, err := run(t, append([]string{"clients", "create"}, args...)...); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
	t.Run("without REDIS_URL delete is refused: the client's tokens could not be revoked", func(t *testing.T) {
		url := secrets["REDIS_URL"]
		delete(secrets, "REDIS_URL")
		defer func() { secrets["REDIS_URL"] = url }()
		if _, err := run(t, "clients", "delete", id); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
			t.Fatalf("%v", err)
		}
		must(t, "clients", "get", id)
	})
	t.Run("delete removes it", func(t *testing.T) {
		must(t, "clients", "delete", id)
		if _, err := run(t, "clients", "get", id); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("%v", err)
		}
	})
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestImport(t *testing.T) {
	setup(t)
	dir := t.TempDir()
	write := func(doc string) string {
		p := filepath.Join(dir, "f.json")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("a client without secret gets one generated and printed once", func(t *testing.T) {
		p := write(`{"clients":[
		  {"id": 601, "name": "A", "kind": "service", "secret": "a-long-random-demo-secret-of-at-least-32-chars", "scopes": ["user:read"]},
		  {"id": 602, "name": "B", "kind": "obo", "redirectUris": ["https://b.example/cb"], "scopes": ["pii:basic"]}]}`)
		out := must(t, "import", p)
		if !strings.Contains(out, "2 created") || !strings.Contains(out, "client 602: generated secret") {
			t.Fatalf("%s", out)
		}
		t.Run("importing the same file again changes nothing", func(t *testing.T) {
			out := must(t, "import", p)
			if !strings.Contains(out, "0 created, 0 updated, 2 unchanged") || strings.Contains(out, "generated") {
				t.Fatalf("%s", out)
			}
		})
	})
	t.Run("a secret shorter than 32 characters rejects the whole file", func(t *testing.T) {
		p := write(`{"clients":[
		  {"id": 603, "name": "C", "kind": "service", "secret": "a-long-random-demo-secret-of-at-least-32-chars", "scopes": ["user:read"]},
		  {"id": 604, "name": "D", "kind": "service", "secret": "short", "scopes": ["user:read"]}]}`)
		_, err := run(t, "import", p)
		if err == nil || !strings.Contains(err.Error(), "clients[1] (id 604): secret") {
			t.Fatalf("%v", err)
		}
		if _, err := run(t, "clients", "get", "603"); err == nil {
			t.Fatal("part of a rejected file was stored")
		}
	})
	t.Run("idTokenSignedResponseAlg: as the file says, ES256 when absent for a new client, kept when absent on re-import", func(t *testing.T) {
		alg := func(id string) string {
			var c struct {
				Alg string `json:"id_token_signed_response_alg"`
			}
			_ = json.Unmarshal([]byte(must(t, "clients", "get", id, "-o", "json")), &c)
			return c.Alg
		}
		must(t, "import", write(`{"clients":[
		  {"id": 606, "name": "F", "kind": "obo", "redirectUris": ["https://f.example/cb"], "scopes": ["openid"], "idTokenSignedResponseAlg": "RS256"},
		  {"id": 607, "name": "G", "kind": "obo", "redirectUris": ["https://g.example/cb"], "scopes": ["openid"]}]}`))
		if alg("606") != "RS256" || alg("607") != "ES256" {
			t.Fatalf("606 %s, 607 %s", alg("606"), alg("607"))
		}
		// An app registered for RS256 (as every app was before ES256 became
		// the default) keeps it when a file without the field is imported.
		must(t, "import", write(`{"clients":[{"id": 606, "name": "F", "kind": "obo", "redirectUris": ["https://f.example/cb"], "scopes": ["openid"]}]}`))
		if alg("606") != "RS256" {
			t.Fatalf("re-import without the field changed it to %s", alg("606"))
		}
		_, err := run(t, "import", write(`{"clients":[{"id": 606, "name": "F", "kind": "obo", "redirectUris": ["https://f.example/cb"], "scopes": ["openid"], "idTokenSignedResponseAlg": "none"}]}`))
		if err == nil || !strings.Contains(err.Error(), "ID token algorithm") || alg("606") != "RS256" {
			t.Fatalf("%v; stored %s", err, alg("606"))
		}
	})
	t.Run("unknown fields are an error", func(t *testing.T) {
		if _, err := run(t, "import", write(`{"clients":[{"id": 605, "name": "E", "kind": "service", "scopes": ["user:read"], "colour": "red"}]}`)); err == nil {
			t.Fatal("accepted")
		}
	})
}

func TestKeysCommands(t *testing.T) {
	setup(t)
	if out := must(t, "keys", "list", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("%s", out)
	}
	out := must(t, "keys", "rotate", "-o", "json")
	var k struct{ Kid string }
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.Kid == "" {
		t.Fatalf("%s", out)
	}
	if out := must(t, "keys", "list"); !strings.Contains(out, k.Kid) || !strings.Contains(out, "pending") {
		t.Fatalf("%s", out)
	}
	t.Run("--alg RS256 makes an RS256 key; another algorithm is refused", func(t *testing.T) {
		var rk struct{ Kid, Alg string }
		if err := json.Unmarshal([]byte(must(t, "keys", "rotate", "--alg", "RS256", "-o", "json")), &rk); err != nil || rk.Alg != "RS256" || rk.Kid == "" {
			t.Fatalf("%+v %v", rk, err)
		}
		if _, err := run(t, "keys", "rotate", "--alg", "HS256"); err == nil || !strings.Contains(err.Error(), "unsupported signing algorithm") {
			t.Fatalf("%v", err)
		}
		if out := must(t, "keys", "list"); !strings.Contains(out, rk.Kid) || !strings.Contains(out, "RS256") {
			t.Fatalf("%s", out)
		}
	})
	t.Run("a wrong KEY_ENCRYPTION_KEY is named", func(t *testing.T) {
		old := secrets["KEY_ENCRYPTION_KEY"]
		secrets["KEY_ENCRYPTION_KEY"] = "not base64!"
		defer func() { secrets["KEY_ENCRYPTION_KEY"] = old }()
		if _, err := run(t, "keys", "list"); err == nil || !strings.Contains(err.Error(), "KEY_ENCRYPTION_KEY") {
			t.Fatalf("%v", err)
		}
	})
}

func TestClientsCreateRequiresPKCE(t *testing.T) {
	setup(t)
	create := func(t *testing.T, extra ...string) bool {
		t.Helper()
		var created struct {
			ClientID int64 `json:"client_id"`
		}
		args := append([]string{"clients", "create", "--name", "Badge App", "--kind", "obo", "--scopes", "pii:basic",
			"--redirect-uri", "https://badges.example/cb", "-o", "json"}, extra...)
		if err := json.Unmarshal([]byte(must(t, args...)), &created); err != nil {
			t.Fatal(err)
		}
		var got struct {
			RequirePKCE *bool `json:"require_pkce"`
		}
		if err := json.Unmarshal([]byte(must(t, "clients", "get", jsonNumber(created.ClientID), "-o", "json")), &got); err != nil || got.RequirePKCE == nil {
			t.Fatalf("get shows no require_pkce: %v", err)
		}
		return *got.RequirePKCE
	}
	t.Run("an obo client requires PKCE by default", func(t *testing.T) {
		if !create(t) {
			t.Fatal("created without the PKCE requirement")
		}
	})
	t.Run("--allow-no-pkce registers one that may omit it", func(t *testing.T) {
		if create(t, "--allow-no-pkce") {
			t.Fatal("--allow-no-pkce ignored")
		}
	})
	t.Run("--id-token-alg RS256 registers RS256 ID tokens; ES256 by default; anything else is refused", func(t *testing.T) {
		for flag, want := range map[string]string{"": "ES256", "RS256": "RS256"} {
			args := []string{"clients", "create", "--name", "Wiki", "--kind", "obo", "--scopes", "openid profile", "--redirect-uri", "https://wiki.example/cb", "-o", "json"}
			if flag != "" {
				args = append(args, "--id-token-alg", flag)
			}
			var created struct {
				ClientID int64 `json:"client_id"`
			}
			_ = json.Unmarshal([]byte(must(t, args...)), &created)
			var got struct {
				Alg string `json:"id_token_signed_response_alg"`
			}
			if err := json.Unmarshal([]byte(must(t, "clients", "get", jsonNumber(created.ClientID), "-o", "json")), &got); err != nil || got.Alg != want {
				t.Fatalf("--id-token-alg %q: %q %v", flag, got.Alg, err)
			}
		}
		if _, err := run(t, "clients", "create", "--name", "x", "--kind", "obo", "--scopes", "openid", "--redirect-uri", "https://x.example/cb", "--id-token-alg", "HS256"); err == nil ||
			!strings.Contains(err.Error(), "ID token algorithm") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("--post-logout-redirect-uri registers RP-initiated logout targets; a bad one or a service client's is refused", func(t *testing.T) {
		var created struct {
			ClientID int64 `json:"client_id"`
		}
		_ = json.Unmarshal([]byte(must(t, "clients", "create", "--name", "Wiki", "--kind", "obo", "--scopes", "openid", "--redirect-uri", "https://wiki.example/cb",
			"--post-logout-redirect-uri", "https://wiki.example/bye", "-o", "json")), &created)
		var got struct {
			URIs []string `json:"post_logout_redirect_uris"`
		}
		if err := json.Unmarshal([]byte(must(t, "clients", "get", jsonNumber(created.ClientID), "-o", "json")), &got); err != nil ||
			len(got.URIs) != 1 || got.URIs[0] != "https://wiki.example/bye" {
			t.Fatalf("%+v %v", got, err)
		}
		if _, err := run(t, "clients", "create", "--name", "x", "--kind", "obo", "--scopes", "openid", "--redirect-uri", "https://x.example/cb",
			"--post-logout-redirect-uri", "http://x.example/bye"); err == nil || !strings.Contains(err.Error(), "post-logout redirect URI") {
			t.Fatalf("%v", err)
		}
		if _, err := run(t, "clients", "create", "--name", "x", "--kind", "service", "--scopes", "user:read",
			"--post-logout-redirect-uri", "https://x.example/bye"); err == nil || !strings.Contains(err.Error(), "post-logout") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("--allow-no-pkce on a service client is refused", func(t *testing.T) {
		if _, err := run(t, "clients", "create", "--name", "x", "--kind", "service", "--scopes", "user:read", "--allow-no-pkce"); err == nil {
			t.Fatal("accepted")
		}
	})
}

func TestKeysRevoke(t *testing.T) {
	setup(t)
	type revocation struct {
		Kid         string
		RevokedAt   time.Time
		Replacement *struct {
			Kid         string
			ActivatesAt time.Time
		}
	}
	revoke := func(t *testing.T, kid string) revocation {
		t.Helper()
		out := must(t, "keys", "revoke", "-o", "json", "--", kid) // a kid may start with '-'

		var r revocation
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Kid != kid || r.RevokedAt.IsZero() {
			t.Fatalf("%s", out)
		}
		return r
	}
	states := func(t *testing.T) map[string]string {
		t.Helper()
		var list []struct{ Kid, State string }
		out := must(t, "keys", "list", "-o", "json")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%s", out)
		}
		m := map[string]string{}
		for _, k := range list {
			m[k.Kid] = k.State
		}
		return m
	}
	var pending struct{ Kid string }
	_ = json.Unmarshal([]byte(must(t, "keys", "rotate", "-o", "json")), &pending)

	t.Run("an unknown kid is refused", func(t *testing.T) {
		if _, err := run(t, "keys", "revoke", "no-such-kid"); err == nil || !strings.Contains(err.Error(), `no signing key has kid "no-such-kid"`) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("revoking the last usable key makes one that signs at once", func(t *testing.T) {
		r := revoke(t, pending.Kid)
		if r.Replacement == nil || r.Replacement.ActivatesAt.After(time.Now()) {
			t.Fatalf("%+v", r)
		}
		if st := states(t); st[pending.Kid] != "revoked" || st[r.Replacement.Kid] != "active" {
			t.Fatalf("%v", st)
		}
		t.Run("revoking the signing key puts a new key in its place", func(t *testing.T) {
			next := revoke(t, r.Replacement.Kid)
			// the same activation (PostgreSQL keeps microseconds)
			if next.Replacement == nil || next.Replacement.ActivatesAt.Sub(r.Replacement.ActivatesAt).Abs() >= time.Microsecond {
				t.Fatalf("%+v", next)
			}
			if st := states(t); st[r.Replacement.Kid] != "revoked" || st[next.Replacement.Kid] != "active" || len(st) != 3 {
				t.Fatalf("%v", st)
			}
		})
	})
	t.Run("revoking a revoked key again is refused", func(t *testing.T) {
		if _, err := run(t, "keys", "revoke", "--", pending.Kid); err == nil || !strings.Contains(err.Error(), "already revoked") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("text output says what happens and when", func(t *testing.T) {
		var k struct{ Kid string }
		_ = json.Unmarshal([]byte(must(t, "keys", "rotate", "-o", "json")), &k)
		out := must(t, "keys", "revoke", "--", k.Kid)
		if !strings.Contains(out, "key "+k.Kid+" revoked") || !strings.Contains(out, "KEY_REFRESH_INTERVAL") || strings.Contains(out, "new key") {
			t.Fatalf("%s", out)
		}
	})
}
