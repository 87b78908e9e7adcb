package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/server"
)

// authURL builds an authorization request from raw query parameters.
func authURL(s *authtest.Server, q url.Values) string {
	return s.URL + "/oauth/authorize?" + q.Encode()
}

func goodQuery() url.Values {
	return url.Values{"client_id": {authtest.BadgeID}, "response_type": {"code"}, "redirect_uri": {authtest.RedirectURI},
		"scope": {"pii:basic"}, "state": {"xyz"}}
}

// signedIn returns a browser with alice's session.
func signedIn(t *testing.T, s *authtest.Server, user authtest.User) *browser {
	t.Helper()
	b := newBrowser(t)
	p := b.Get(s.URL + "/oauth/login?next=/oauth/apps")
	if p = b.Login(s.URL, p, "", user.Username, user.Password); p.Status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", p.Status, p.Body)
	}
	return b
}

func TestAuthorizeRequestValidation(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	b := newBrowser(t)

	errorPage := func(t *testing.T, q url.Values) {
		t.Helper()
		p := b.Get(authURL(s, q))
		if p.Status != 400 || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "invalid request") ||
			!strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("want the invalid request page without redirect, got %d %v\n%s", p.Status, p.Header, p.Body)
		}
	}
	t.Run("an unknown client_id shows the error page and never redirects", func(t *testing.T) {
		q := goodQuery()
		q.Set("client_id", "999")
		errorPage(t, q)
		q.Set("client_id", "abc")
		errorPage(t, q)
		q.Del("client_id")
		errorPage(t, q)
	})
	t.Run("a redirect_uri not registered byte for byte shows the error page and never redirects", func(t *testing.T) {
		for _, uri := range []string{"http://127.0.0.1:9999/callback/", "http://127.0.0.1:9999/Callback", "http://127.0.0.1:9999/callback?x=1",
			"http://127.0.0.2:9999/callback", "https://evil.example/callback", "http://localhost:9999/callback", ""} {
			q := goodQuery()
			q.Set("redirect_uri", uri)
			errorPage(t, q)
		}
	})
	t.Run("a service client cannot use the authorization endpoint", func(t *testing.T) {
		q := goodQuery()
		q.Set("client_id", authtest.ServiceID)
		errorPage(t, q)
	})
	redirectError := func(t *testing.T, q url.Values, want string) {
		t.Helper()
		p := b.Get(authURL(s, q))
		got := callback(t, p)
		if got.Get("error") != want || got.Get("state") != "xyz" || got.Get("code") != "" {
			t.Fatalf("want error %s with the state, got %v", want, got)
		}
	}
	for _, c := range []struct{ name, param, value, want string }{
		{"response_type other than code redirects with unsupported_response_type", "response_type", "token", "unsupported_response_type"},
		{"an unknown scope redirects with invalid_scope", "scope", "pii:basic pii:everything", "invalid_scope"},
		{"a scope the app is not approved for redirects with invalid_scope", "scope", "pii:basic user:read", "invalid_scope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := goodQuery()
			q.Set(c.param, c.value)
			redirectError(t, q, c.want)
		})
	}
	t.Run("malformed PKCE redirects with invalid_request", func(t *testing.T) {
		for _, pk := range [][2]string{{"short", "S256"}, {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier()), "plain"}, {"", "S256"},
			{oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier()), ""}} {
			q := goodQuery()
			if pk[0] != "" {
				q.Set("code_challenge", pk[0])
			}
			if pk[1] != "" {
				q.Set("code_challenge_method", pk[1])
			}
			redirectError(t, q, "invalid_request")
		}
	})
	t.Run("validation happens before any login", func(t *testing.T) {
		q := goodQuery()
		q.Set("scope", "nope")
		p := b.Get(authURL(s, q))
		if strings.Contains(p.Body, "password") {
			t.Fatal("login page shown for an invalid request")
		}
	})
}

func TestLoginPage(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"LOGIN_FAILURES_PER_ACCOUNT": "3", "LOGIN_FAILURES_PER_ADDRESS": "6", "LOGIN_FAILURE_DELAY": "150ms"}})
	t.Run("a wrong password and an unknown user get the same generic message", func(t *testing.T) {
		var bodies []string
		for _, c := range [][2]string{{"alice", "wrong"}, {"nobody", "wrong"}} {
			b := newBrowser(t)
			p := b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", c[0], c[1])
			if p.Status != 400 || !strings.Contains(p.Body, "The username or password is incorrect.") {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			bodies = append(bodies, p.Body)
		}
		if strings.Contains(bodies[1], "not found") || strings.Contains(bodies[1], "unknown user") {
			t.Fatal("the message tells unknown users apart")
		}
		s.Redis.FlushAll(bg())
	})
	t.Run("email works as the username", func(t *testing.T) {
		b := newBrowser(t)
		if p := b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "ALICE@example.org", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("%d", p.Status)
		}
	})
	t.Run("repeated failures per account are slowed and then refused", func(t *testing.T) {
		b := newBrowser(t)
		var last page
		var slowest time.Duration
		for i := 0; i < 4; i++ {
			start := time.Now()
			last = b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "alice", "wrong")
			slowest = max(slowest, time.Since(start))
		}
		if last.Status != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
			t.Fatalf("4th failure: %d %s", last.Status, last.Body)
		}
		if slowest < 150*time.Millisecond {
			t.Fatalf("failures were not slowed (slowest %v)", slowest)
		}
		// Refused even with the right password, while the pause lasts.
		p := b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "alice", authtest.Alice.Password)
		if p.Status != http.StatusTooManyRequests {
			t.Fatalf("right password during the pause: %d", p.Status)
		}
		s.Redis.FlushAll(bg())
	})
	t.Run("repeated failures per client address are refused across accounts", func(t *testing.T) {
		b := newBrowser(t)
		var last page
		for i := 0; i < 7; i++ {
			last = b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "user"+string(rune('a'+i)), "wrong")
		}
		if last.Status != http.StatusTooManyRequests {
			t.Fatalf("%d", last.Status)
		}
		s.Redis.FlushAll(bg())
	})
	t.Run("the addresses of one IPv6 64-bit prefix share one budget", func(t *testing.T) {
		var last page
		for i := 0; i < 7; i++ {
			last = loginFrom(t, s, "2001:db8:7:7::"+strconv.Itoa(i+1), "user"+string(rune('h'+i)), "wrong")
		}
		if last.Status != http.StatusTooManyRequests {
			t.Fatalf("the 7th failure from a 7th address of one /64: %d, want 429", last.Status)
		}
		if p := loginFrom(t, s, "2001:db8:7:8::1", "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("the next /64: %d", p.Status)
		}
		s.Redis.FlushAll(bg())
	})
	t.Run("the users service being down is a 503 page", func(t *testing.T) {
		s.Users.SetDown(true)
		defer s.Users.SetDown(false)
		b := newBrowser(t)
		p := b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "alice", authtest.Alice.Password)
		if p.Status != 503 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
}

func TestSessionCookie(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	login := func(t *testing.T, proto string) *http.Cookie {
		b := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/oauth/login", nil)
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		p := b.Do(req)
		var anchor *http.Cookie
		for _, c := range (&http.Response{Header: p.Header}).Cookies() {
			anchor = c
		}
		req, _ = http.NewRequest(http.MethodPost, s.URL+"/oauth/login", strings.NewReader(url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)},
			"next": {"/oauth/apps"}, "username": {"alice"}, "password": {authtest.Alice.Password}}.Encode()))
		req.Header.Set("Content-Type", form)
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
			req.AddCookie(anchor) // the jar keeps a Secure cookie from plain-http URLs
		}
		p = b.Do(req)
		for _, c := range (&http.Response{Header: p.Header}).Cookies() {
			if c.Name == "eventreg_session" || c.Name == "__Host-eventreg_session" {
				return c
			}
		}
		t.Fatalf("no session cookie: %v", p.Header)
		return nil
	}
	t.Run("the session cookie is HttpOnly and SameSite=Lax, a random id", func(t *testing.T) {
		c := login(t, "")
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || len(c.Value) < 40 || c.Secure {
			t.Fatalf("%+v", c)
		}
		keys, _ := s.Redis.Keys(bg(), "auth:sess:*").Result()
		for _, k := range keys {
			if strings.Contains(k, c.Value) {
				t.Fatal("Redis stores the raw session id")
			}
		}
	})
	t.Run("the session cookie is Secure over HTTPS", func(t *testing.T) {
		if c := login(t, "https"); !c.Secure {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("logout ends the session", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		if p := b.Get(s.URL + "/oauth/apps"); p.Status != 200 {
			t.Fatalf("%d", p.Status)
		}
		p := b.Get(s.URL + "/oauth/logout")
		b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}})
		if p := b.Get(s.URL + "/oauth/apps"); p.Status != http.StatusFound {
			t.Fatalf("still signed in: %d", p.Status)
		}
	})
}

func TestPagesSecurityHeaders(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	b := newBrowser(t)
	q := goodQuery()
	bad := goodQuery()
	bad.Set("redirect_uri", "https://evil.example/")
	for name, u := range map[string]string{"login": authURL(s, q), "error": authURL(s, bad), "logout": s.URL + "/oauth/logout",
		"login page": s.URL + "/oauth/login"} {
		t.Run(name+" page refuses framing, sends no referrer and loads nothing from other origins", func(t *testing.T) {
			p := b.Get(u)
			h := p.Header
			csp := h.Get("Content-Security-Policy")
			if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") || h.Get("Referrer-Policy") != "no-referrer" ||
				!strings.Contains(csp, "default-src 'none'") {
				t.Fatalf("headers %v", h)
			}
			for _, attr := range []string{`src="http`, `href="http`, `src="//`, `href="//`, "<script"} {
				if strings.Contains(p.Body, attr) {
					t.Fatalf("page loads from elsewhere (%s):\n%s", attr, p.Body)
				}
			}
		})
	}
	t.Run("the stylesheet is served from the same origin", func(t *testing.T) {
		if p := b.Get(s.URL + "/oauth/static/style.css"); p.Status != 200 || !strings.Contains(p.Body, "body") {
			t.Fatalf("%d", p.Status)
		}
	})
}

func TestCSRF(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	t.Run("every form carries a CSRF token", func(t *testing.T) {
		b := newBrowser(t)
		p := b.Get(authURL(s, goodQuery()))
		testkit.PageField(t, testkit.CSRFField, p.Body)
		p = b.follow(s.URL, b.Login(s.URL, p, "", "alice", authtest.Alice.Password))
		testkit.PageField(t, testkit.CSRFField, p.Body)
		callback(t, b.Decide(s.URL, p, "authorize"))
		testkit.PageField(t, testkit.CSRFField, b.Get(s.URL+"/oauth/apps").Body)
	})
	t.Run("a login without the CSRF token is refused", func(t *testing.T) {
		b := newBrowser(t)
		b.Get(s.URL + "/oauth/login")
		p := b.PostForm(s.URL+"/oauth/login", url.Values{"username": {"alice"}, "password": {authtest.Alice.Password}, "next": {"/oauth/apps"}})
		if p.Status != http.StatusForbidden || p.Header.Get("Set-Cookie") != "" && strings.Contains(p.Header.Get("Set-Cookie"), "eventreg_session") {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("a consent without the CSRF token is refused and issues no code", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		q := goodQuery()
		q.Set("scope", "pii:phone")
		p := b.PostForm(authURL(s, q), url.Values{"decision": {"authorize"}})
		if p.Status != http.StatusForbidden || p.Header.Get("Location") != "" {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("a token from another browser is refused", func(t *testing.T) {
		other := newBrowser(t)
		token := testkit.PageField(t, testkit.CSRFField, other.Get(s.URL+"/oauth/login").Body)
		b := newBrowser(t)
		b.Get(s.URL + "/oauth/login")
		p := b.PostForm(s.URL+"/oauth/login", url.Values{"csrf_token": {token}, "username": {"alice"}, "password": {authtest.Alice.Password}, "next": {"/oauth/apps"}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("%d", p.Status)
		}
	})
}

func TestLogout(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	// confirm signs alice in, opens the logout page with q and presses Sign out.
	confirm := func(t *testing.T, q url.Values) page {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(s.URL + "/oauth/logout?" + q.Encode())
		v := url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}}
		for k := range q {
			v.Set(k, q.Get(k))
		}
		return b.PostForm(s.URL+"/oauth/logout", v)
	}
	t.Run("redirects to next when it is a registered redirect URI of the client", func(t *testing.T) {
		p := confirm(t, url.Values{"next": {authtest.RedirectURI}, "client_id": {authtest.BadgeID}})
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != authtest.RedirectURI {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("any other next gets the signed-out page", func(t *testing.T) {
		for _, q := range []url.Values{{"next": {"https://evil.example/"}, "client_id": {authtest.BadgeID}}, {"next": {authtest.RedirectURI}},
			{"next": {authtest.RedirectURI}, "client_id": {authtest.ServiceID}}} {
			p := confirm(t, q)
			if p.Status != 200 || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "signed out") {
				t.Fatalf("%v: %d %v", q, p.Status, p.Header)
			}
		}
	})
}

func TestAuthorizedAppsRevocation(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	b := newBrowser(t)
	tok := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("a"), authtest.Alice), "")
	tok2 := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("b"), authtest.Alice), "")
	p := b.Get(s.URL + "/oauth/apps")
	if p.Status != 200 || !strings.Contains(p.Body, "Con Badge Printer") {
		t.Fatalf("%d %s", p.Status, p.Body)
	}
	t.Run("revoking an app deletes the consent and every refresh token of the user and app", func(t *testing.T) {
		r := b.PostForm(s.URL+"/oauth/apps/revoke", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "client_id": {authtest.BadgeID}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("%d", r.Status)
		}
		for _, rt := range []string{tok.RefreshToken, tok2.RefreshToken} {
			if _, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: rt}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
				t.Fatalf("refresh after revocation: %v", err)
			}
		}
		if p := b.Get(cfg.AuthCodeURL("c")); p.Status != 200 || !strings.Contains(p.Body, `value="authorize"`) {
			t.Fatalf("consent not asked again: %d", p.Status)
		}
		if strings.Contains(b.Get(s.URL+"/oauth/apps").Body, "Con Badge Printer") {
			t.Fatal("app still listed")
		}
	})
	t.Run("revoking an app stops its access tokens: inactive at introspection, their sid on the revocation feed", func(t *testing.T) {
		for _, at := range []string{tok.AccessToken, tok2.AccessToken} {
			if m := introspect(t, s, at); m["active"] != false {
				t.Fatalf("an access token of the revoked app is still active: %v", m)
			}
			if sid, _ := claimsOf(t, at)["sid"].(string); sid == "" || !feedHas(t, s, "sid", sid) {
				t.Fatalf("the sid %q of an access token of the revoked app is not on the revocation feed", sid)
			}
		}
	})
}

func TestCodeRules(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"AUTH_CODE_TTL": "1s"}})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:email")
	b := newBrowser(t)

	t.Run("a replayed code is invalid_grant and revokes what the first redemption issued", func(t *testing.T) {
		code := authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
		tok := mustExchange(t, cfg, code, "")
		if _, err := exchange(t, cfg, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("replay: %v", err)
		}
		if _, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("refresh token of the first redemption still works: %v", err)
		}
		if m := introspect(t, s, tok.AccessToken); m["active"] != false {
			t.Fatalf("access token of the first redemption still active: %v", m)
		}
	})
	t.Run("a code expires", func(t *testing.T) {
		code := authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
		key := "auth:code:{" + randtoken.Hash(code) + "}"
		if err := testkit.Poll(bg(), 5*time.Second, func(ctx context.Context) error {
			if n, _ := s.Redis.Exists(ctx, key).Result(); n != 0 {
				return context.DeadlineExceeded
			}
			return nil
		}); err != nil {
			t.Fatal("code did not expire")
		}
		if _, err := exchange(t, cfg, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a code is bound to client, redirect URI and PKCE verifier, and a mismatch does not consume it", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, b, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), authtest.Alice)
		other := oboConfig(s, authtest.StaffID, authtest.StaffSecret)
		if _, err := exchange(t, other, code, verifier); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("other client: %v", err)
		}
		wrongRedirect := *cfg
		wrongRedirect.RedirectURL = "http://localhost:9999/staff/callback"
		if _, err := exchange(t, &wrongRedirect, code, verifier); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("other redirect: %v", err)
		}
		if _, err := exchange(t, cfg, code, oauth2.GenerateVerifier()); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("wrong verifier: %v", err)
		}
		if _, err := exchange(t, cfg, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("missing verifier: %v", err)
		}
		if _, err := exchange(t, cfg, code, verifier); err != nil {
			t.Fatalf("the right client could not redeem: %v", err)
		}
	})
	t.Run("a verifier for a code issued without PKCE is refused", func(t *testing.T) {
		code := authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
		if _, err := exchange(t, cfg, code, oauth2.GenerateVerifier()); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("scope at exchange may narrow, never widen", func(t *testing.T) {
		code := authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
		st, _, body := post(t, s.URL+"/api/oauth/token", form, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {authtest.RedirectURI}, "scope": {"pii:basic"}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 || decode(t, body)["scope"] != "pii:basic" {
			t.Fatalf("%d %s", st, body)
		}
		code = authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
		st, _, body = post(t, s.URL+"/api/oauth/token", form, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {authtest.RedirectURI}, "scope": {"pii:basic pii:phone"}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if st != 400 || decode(t, body)["error"] != "invalid_scope" {
			t.Fatalf("%d %s", st, body)
		}
	})
}

func TestRefreshRules(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:email")
	b := newBrowser(t)
	fresh := func(t *testing.T) string {
		tok := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice), "")
		return tok.RefreshToken
	}
	refresh := func(t *testing.T, rt string, extra url.Values, id, secret string) (int, map[string]any) {
		v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "redirect_uri": {authtest.RedirectURI}}
		for k, vs := range extra {
			v[k] = vs
		}
		st, _, body := post(t, s.URL+"/api/oauth/token", form, v.Encode(), id, secret)
		return st, decode(t, body)
	}
	t.Run("scope may narrow on refresh, and omitted means the previous token's", func(t *testing.T) {
		st, m := refresh(t, fresh(t), url.Values{"scope": {"pii:email"}}, authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 || m["scope"] != "pii:email" {
			t.Fatalf("%d %v", st, m)
		}
		st, m = refresh(t, m["refresh_token"].(string), nil, authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 || m["scope"] != "pii:email" {
			t.Fatalf("%d %v", st, m)
		}
		t.Run("and a scope of the original grant can come back", func(t *testing.T) {
			st, m := refresh(t, m["refresh_token"].(string), url.Values{"scope": {"pii:basic pii:email"}}, authtest.BadgeID, authtest.BadgeSecret)
			if st != 200 || m["scope"] != "pii:basic pii:email" {
				t.Fatalf("%d %v", st, m)
			}
		})
	})
	t.Run("a wider scope on refresh is invalid_scope and changes nothing", func(t *testing.T) {
		rt := fresh(t)
		st, m := refresh(t, rt, url.Values{"scope": {"pii:basic pii:phone"}}, authtest.BadgeID, authtest.BadgeSecret)
		if st != 400 || m["error"] != "invalid_scope" {
			t.Fatalf("%d %v", st, m)
		}
		if st, m := refresh(t, rt, nil, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("the token stopped working: %d %v", st, m)
		}
	})
	t.Run("a refresh token of another client is invalid_grant", func(t *testing.T) {
		rt := fresh(t)
		if st, m := refresh(t, rt, nil, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
		if st, m := refresh(t, rt, nil, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("the owner's token was harmed: %d %v", st, m)
		}
	})
	t.Run("garbage refresh tokens are invalid_grant", func(t *testing.T) {
		for _, rt := range []string{"x", strings.Repeat("a", 22) + "." + strings.Repeat("b", 43), ""} {
			st, m := refresh(t, rt, nil, authtest.BadgeID, authtest.BadgeSecret)
			if st != 400 || (m["error"] != "invalid_grant" && m["error"] != "invalid_request") {
				t.Fatalf("%q: %d %v", rt, st, m)
			}
		}
	})
	t.Run("a service client may not use the refresh grant", func(t *testing.T) {
		if st, m := refresh(t, fresh(t), nil, authtest.ServiceID, authtest.ServiceSecret); st != 400 || m["error"] != "unauthorized_client" {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("refresh tokens survive a Redis restart", func(t *testing.T) {
		rt := fresh(t)
		s.KillRedis()
		s.StartRedis(t)
		if err := testkit.Poll(bg(), 10*time.Second, func(ctx context.Context) error { return s.Redis.Ping(ctx).Err() }); err != nil {
			t.Fatal(err)
		}
		if st, m := refresh(t, rt, nil, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("%d %v", st, m)
		}
	})
}

func introspect(t *testing.T, s *authtest.Server, token string) map[string]any {
	t.Helper()
	st, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {token}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
	if st != 200 {
		t.Fatalf("introspect: %d %s", st, body)
	}
	return decode(t, body)
}

func TestRevocationAndIntrospection(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	b := newBrowser(t)
	tok := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice), "")
	t.Run("an active access token is described", func(t *testing.T) {
		m := introspect(t, s, tok.AccessToken)
		if m["active"] != true || m["sub"] != "1001" || m["client_id"] != "502" || m["scope"] != "pii:basic" || m["token_type"] != "Bearer" {
			t.Fatalf("%v", m)
		}
	})
	t.Run("an active refresh token is described", func(t *testing.T) {
		// Not checked against the document: its ActiveToken schema requires
		// exp, iat and aud, which a refresh token (never expiring) lacks.
		st, _, body := postUnchecked(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {tok.RefreshToken}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if m := decode(t, body); st != 200 || m["active"] != true || m["sub"] != "1001" {
			t.Fatalf("%v", m)
		}
	})
	inactive := func(t *testing.T, body []byte) {
		t.Helper()
		if strings.TrimSpace(string(body)) != `{"active":false}` {
			t.Fatalf("want exactly {\"active\": false}, got %s", body)
		}
	}
	t.Run("unknown tokens and tokens of another client are exactly inactive", func(t *testing.T) {
		for _, tk := range []string{"garbage", tok.AccessToken + "x"} {
			_, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {tk}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
			inactive(t, body)
		}
		_, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {tok.AccessToken}}.Encode(), authtest.StaffID, authtest.StaffSecret)
		inactive(t, body)
	})
	t.Run("introspection requires client authentication", func(t *testing.T) {
		st, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {tok.AccessToken}}.Encode())
		if st != 401 || decode(t, body)["error"] != "invalid_client" {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("revoking a refresh token ends its family; unknown tokens are a 200 too", func(t *testing.T) {
		st, _, _ := post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {"unknown"}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 {
			t.Fatalf("%d", st)
		}
		st, _, _ = post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}}.Encode(), authtest.StaffID, authtest.StaffSecret)
		if st != 200 {
			t.Fatalf("%d", st)
		}
		if _, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
			t.Fatalf("another client revoked the token: %v", err)
		}
		tok2 := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice), "")
		st, _, _ = post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {tok2.RefreshToken}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 {
			t.Fatalf("%d", st)
		}
		if _, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok2.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("%v", err)
		}
		_, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {tok2.AccessToken}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		inactive(t, body)
	})
	t.Run("revoking an access token makes introspection inactive", func(t *testing.T) {
		tok3 := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice), "")
		post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {tok3.AccessToken}}.Encode(), authtest.BadgeID, authtest.BadgeSecret)
		if m := introspect(t, s, tok3.AccessToken); m["active"] != false {
			t.Fatalf("%v", m)
		}
	})
}

func TestClientAuthenticationFailuresAreRateLimited(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"CLIENT_AUTH_FAILURES": "3"}})
	var st int
	var h http.Header
	var body []byte
	for i := 0; i < 4; i++ {
		st, h, body = post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, "wrong-secret-wrong-secret-wrong-secret")
	}
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" || decode(t, body)["error"] != "slow_down" {
		t.Fatalf("%d %v %s", st, h, body)
	}
	t.Run("another client is not affected", func(t *testing.T) {
		if st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ReaderID, authtest.ReaderSecret); st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	})
}

func TestRedisDown(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	b := newBrowser(t)
	tok := mustExchange(t, cfg, authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice), "")
	s.StopRedis()
	t.Run("the token endpoint answers 503 temporarily_unavailable in JSON, quickly", func(t *testing.T) {
		start := time.Now()
		st, h, body := post(t, s.URL+"/api/oauth/token", form, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}.Encode(),
			authtest.BadgeID, authtest.BadgeSecret)
		if st != 503 || decode(t, body)["error"] != "temporarily_unavailable" || h.Get("Retry-After") == "" {
			t.Fatalf("%d %s", st, body)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("took %v", time.Since(start))
		}
	})
	t.Run("the login answers a 503 page", func(t *testing.T) {
		nb := newBrowser(t)
		p := nb.Get(authURL(s, goodQuery()))
		if p.Status == 200 {
			p = nb.Login(s.URL, p, "", "alice", authtest.Alice.Password)
		}
		if p.Status != 503 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("client credentials keep working without Redis", func(t *testing.T) {
		if st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret); st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("readiness stays 200: the outage is answered per request, not by leaving the load balancer", func(t *testing.T) {
		resp, err := http.Get(s.OpsURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/readyz with Redis down: %d %s", resp.StatusCode, body)
		}
	})
}

func TestNoSecretsInLogs(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	b := newBrowser(t)
	code := authorize(t, s, b, cfg.AuthCodeURL("s"), authtest.Alice)
	tok := mustExchange(t, cfg, code, "")
	b.Login(s.URL, b.Get(s.URL+"/oauth/login"), "", "alice", "a-wrong-password-123")
	post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret+"x")
	logs := s.Logs.String()
	for _, secret := range []string{authtest.Alice.Password, "a-wrong-password-123", authtest.BadgeSecret, authtest.ServiceSecret, code, tok.AccessToken, tok.RefreshToken} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a secret appears in the logs")
		}
	}
	if !strings.Contains(logs, `"route":"/api/oauth/token"`) {
		t.Fatal("no request log at all: the test proves nothing")
	}
}

// TestStartupSaysWhereClientAddressesComeFrom: where no proxy is trusted,
// the per-address sign-in limit would pause everyone behind a proxy at once;
// start-up says so, and otherwise says what the limit depends on.
func TestStartupSaysWhereClientAddressesComeFrom(t *testing.T) {
	logged := func(trusted []string) string {
		var buf bytes.Buffer
		server.LogClientAddresses(slog.New(slog.NewJSONHandler(&buf, nil)), trusted, 20)
		return buf.String()
	}
	t.Run("no trusted proxy: a warning that the per-address limit pauses everyone behind a proxy", func(t *testing.T) {
		out := logged([]string{" "})
		if !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "everyone at once") {
			t.Fatalf("%s", out)
		}
	})
	t.Run("trusted proxies: named, with what the limit depends on", func(t *testing.T) {
		out := logged([]string{"10.42.0.0/16"})
		if !strings.Contains(out, `"trusted_proxies":"10.42.0.0/16"`) || !strings.Contains(out, "does not keep client addresses") {
			t.Fatalf("%s", out)
		}
	})
}
