package userapi_test

import (
	"context"
	"strings"
	"testing"
)

func TestUserInfo(t *testing.T) {
	e := newEnv(t, envOptions{})
	k := e.keys
	subOnly := func(t *testing.T, method string) {
		r := e.call(t, method, "/api/users/userinfo", k.obo(t, "1003", "openid"), "")
		expect(t, r, 200)
		if m := r.json(t); len(m) != 1 || m["sub"] != "1003" || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s %v", r.body, r.header)
		}
	}
	t.Run("GET: openid alone gives sub and nothing else (oidcc-userinfo-get)", func(t *testing.T) { subOnly(t, "GET") })
	t.Run("POST: openid alone gives sub and nothing else (oidcc-userinfo-post-header)", func(t *testing.T) { subOnly(t, "POST") })
	t.Run("each OpenID scope adds its standard claims (oidcc-scope-all)", func(t *testing.T) {
		r := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1001", "openid profile email phone address"), "")
		expect(t, r, 200)
		m := r.json(t)
		addr, _ := m["address"].(map[string]any)
		if m["sub"] != "1001" || m["preferred_username"] != "alice" || m["email"] != "alice@example.org" || m["email_verified"] == nil ||
			m["phone_number"] != "+15555550100" || m["phone_number_verified"] != false || m["given_name"] == nil || m["family_name"] == nil ||
			m["name"] != m["given_name"].(string)+" "+m["family_name"].(string) || m["birthdate"] == nil {
			t.Fatalf("%s", r.body)
		}
		if addr["street_address"] != "1 Main St" || addr["locality"] != "Springfield" || addr["region"] != "IL" || addr["postal_code"] != "62701" ||
			addr["country"] != "US" || !strings.Contains(addr["formatted"].(string), "62701 Springfield") {
			t.Fatalf("address %v", addr)
		}
	})
	t.Run("profile gives the profile claims, not the email, phone or address (oidcc-scope-profile)", func(t *testing.T) {
		r := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1003", "openid profile"), "")
		m := r.json(t)
		if m["preferred_username"] != "carol" || m["nickname"] != "Cee" || m["picture"] != "https://cdn.example.org/u/1003.png" || m["birthdate"] != "1995-02-14" {
			t.Fatalf("%s", r.body)
		}
		for _, c := range []string{"email", "email_verified", "phone_number", "address"} {
			if _, ok := m[c]; ok {
				t.Errorf("%s present without its scope", c)
			}
		}
	})
	t.Run("profile's updated_at is when the user's record last changed, in seconds since the epoch", func(t *testing.T) {
		if _, err := e.pool.Exec(context.Background(), `UPDATE users SET updated_at = '2026-03-01T12:00:00.75Z' WHERE id = 1003`); err != nil {
			t.Fatal(err)
		}
		for sc, want := range map[string]any{"openid profile": float64(1772366400), "openid pii:basic": float64(1772366400), "openid email phone address": nil} {
			if m := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1003", sc), "").json(t); m["updated_at"] != want {
				t.Errorf("%s: updated_at %v, want %v", sc, m["updated_at"], want)
			}
		}
	})
	t.Run("email alone (oidcc-scope-email); the pii: scope the user consented to counts the same", func(t *testing.T) {
		for _, sc := range []string{"openid email", "openid pii:email"} {
			m := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1002", sc), "").json(t)
			if len(m) != 3 || m["email"] != "bob@example.org" || m["email_verified"] == nil {
				t.Fatalf("%s: %v", sc, m)
			}
		}
	})
	t.Run("unknown claims are left out, never null", func(t *testing.T) {
		m := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1004", "openid profile phone address"), "").json(t)
		for _, c := range []string{"phone_number", "address", "picture"} {
			if _, ok := m[c]; ok {
				t.Errorf("%s present for a user who has none: %v", c, m)
			}
		}
	})
	t.Run("no token: 401 with a Bearer challenge (oidcc-userinfo-bearer-header only)", func(t *testing.T) {
		r := e.call(t, "GET", "/api/users/userinfo", "", "")
		expect(t, r, 401)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%v", r.header)
		}
		r = e.call(t, "POST", "/api/users/userinfo", "", "access_token="+k.obo(t, "1001", "openid"))
		expect(t, r, 401)
	})
	t.Run("a bad token: 401 invalid_token", func(t *testing.T) {
		r := e.call(t, "GET", "/api/users/userinfo", "not-a-token", "")
		expect(t, r, 401)
		if !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("%v", r.header)
		}
	})
	t.Run("a token without openid: 403 insufficient_scope naming openid", func(t *testing.T) {
		r := e.call(t, "GET", "/api/users/userinfo", k.obo(t, "1001", "pii:basic profile"), "")
		expect(t, r, 403)
		if h := r.header.Get("WWW-Authenticate"); !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="openid"`) {
			t.Fatalf("%v", r.header)
		}
	})
	t.Run("a service token: 403", func(t *testing.T) {
		expectError(t, e.call(t, "GET", "/api/users/userinfo", k.service(t, "openid"), ""), 403, "access", "")
	})
	t.Run("a token for a user that no longer exists: 404", func(t *testing.T) {
		expectError(t, e.call(t, "GET", "/api/users/userinfo", k.obo(t, "424242", "openid"), ""), 404, "resource", "")
	})
}
