package userapi_test

import (
	"context"
	"strings"
	"testing"
)

func TestUserInfo(t *testing.T) {
	e := newEnv(t, envOptions{})
	subOnly := func(t *testing.T, method string) {
		r := e.Call(t, method, "/api/users/userinfo", e.Tokens.ForUser(t, "1003", "openid"), "")
		r.Expect(t, 200)
		if m := r.Map(t); len(m) != 1 || m["sub"] != "1003" || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s %v", r.Body, r.Header)
		}
	}
	t.Run("GET: openid alone gives sub and nothing else (oidcc-userinfo-get)", func(t *testing.T) { subOnly(t, "GET") })
	t.Run("POST: openid alone gives sub and nothing else (oidcc-userinfo-post-header)", func(t *testing.T) { subOnly(t, "POST") })
	t.Run("each OpenID scope adds its standard claims (oidcc-scope-all)", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1001", "openid", "profile", "email", "phone", "address"), "")
		r.Expect(t, 200)
		m := r.Map(t)
		addr, _ := m["address"].(map[string]any)
		if m["sub"] != "1001" || m["preferred_username"] != "alice" || m["email"] != "alice@example.org" || m["email_verified"] == nil ||
			m["phone_number"] != "+15555550100" || m["phone_number_verified"] != false || m["given_name"] == nil || m["family_name"] == nil ||
			m["name"] != m["given_name"].(string)+" "+m["family_name"].(string) || m["birthdate"] == nil {
			t.Fatalf("%s", r.Body)
		}
		if addr["street_address"] != "1 Main St" || addr["locality"] != "Springfield" || addr["region"] != "IL" || addr["postal_code"] != "62701" ||
			addr["country"] != "US" || !strings.Contains(addr["formatted"].(string), "62701 Springfield") {
			t.Fatalf("address %v", addr)
		}
	})
	t.Run("profile gives the profile claims, not the email, phone or address (oidcc-scope-profile)", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1003", "openid", "profile"), "")
		m := r.Map(t)
		if m["preferred_username"] != "carol" || m["nickname"] != "Cee" || m["picture"] != "https://cdn.example.org/u/1003.png" || m["birthdate"] != "1995-02-14" {
			t.Fatalf("%s", r.Body)
		}
		for _, c := range []string{"email", "email_verified", "phone_number", "address"} {
			if _, ok := m[c]; ok {
				t.Errorf("%s present without its scope", c)
			}
		}
	})
	t.Run("profile's updated_at is when the user's record last changed, in seconds since the epoch", func(t *testing.T) {
		if _, err := e.Pool.Exec(context.Background(), `UPDATE users SET updated_at = '2026-03-01T12:00:00.75Z' WHERE id = 1003`); err != nil {
			t.Fatal(err)
		}
		for sc, want := range map[string]any{"openid profile": float64(1772366400), "openid pii:basic": float64(1772366400), "openid email phone address": nil} {
			if m := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1003", strings.Fields(sc)...), "").Map(t); m["updated_at"] != want {
				t.Errorf("%s: updated_at %v, want %v", sc, m["updated_at"], want)
			}
		}
	})
	t.Run("email alone (oidcc-scope-email); the pii: scope the user consented to counts the same", func(t *testing.T) {
		for _, sc := range []string{"openid email", "openid pii:email"} {
			m := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1002", strings.Fields(sc)...), "").Map(t)
			if len(m) != 3 || m["email"] != "bob@example.org" || m["email_verified"] == nil {
				t.Fatalf("%s: %v", sc, m)
			}
		}
	})
	t.Run("unknown claims are left out, never null", func(t *testing.T) {
		m := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1004", "openid", "profile", "phone", "address"), "").Map(t)
		for _, c := range []string{"phone_number", "address", "picture"} {
			if _, ok := m[c]; ok {
				t.Errorf("%s present for a user who has none: %v", c, m)
			}
		}
	})
	t.Run("no token: 401 with a Bearer challenge (oidcc-userinfo-bearer-header only)", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/userinfo", "", "")
		r.Expect(t, 401)
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%v", r.Header)
		}
		r = e.Call(t, "POST", "/api/users/userinfo", "", "access_token="+e.Tokens.ForUser(t, "1001", "openid"))
		r.Expect(t, 401)
	})
	t.Run("a bad token: 401 invalid_token", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/userinfo", "not-a-token", "")
		r.Expect(t, 401)
		if !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("%v", r.Header)
		}
	})
	t.Run("a token without openid: 403 insufficient_scope naming openid", func(t *testing.T) {
		r := e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "1001", "pii:basic", "profile"), "")
		r.Expect(t, 403)
		if h := r.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="openid"`) {
			t.Fatalf("%v", r.Header)
		}
	})
	t.Run("a service token: 403", func(t *testing.T) {
		e.Call(t, "GET", "/api/users/userinfo", e.Tokens.Service(t, "openid"), "").ExpectError(t, 403, "access", "")
	})
	t.Run("a token for a user that no longer exists: 404", func(t *testing.T) {
		e.Call(t, "GET", "/api/users/userinfo", e.Tokens.ForUser(t, "424242", "openid"), "").ExpectError(t, 404, "resource", "")
	})
}
