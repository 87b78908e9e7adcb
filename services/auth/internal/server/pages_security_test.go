package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

var (
	clientIDRe = regexp.MustCompile(`name="client_id" value="([^"]*)"`)
	nextAnyRe  = regexp.MustCompile(`name="next" value="([^"]*)"`)
)

// signedInStill reports whether b's session still opens the apps page.
func signedInStill(t *testing.T, s *authtest.Server, b *browser) bool {
	t.Helper()
	p := b.Get(s.URL + "/oauth/apps")
	switch p.Status {
	case http.StatusOK:
		return true
	case http.StatusFound:
		return false
	}
	t.Fatalf("/oauth/apps: %d %s", p.Status, p.Body)
	return false
}

// jarCookie returns the value of b's cookie name for the pages (empty: none).
func jarCookie(t *testing.T, s *authtest.Server, b *browser, name string) string {
	t.Helper()
	u, _ := url.Parse(s.URL + "/oauth/")
	for _, c := range b.Client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func TestLogoutNeedsConfirmation(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	back := url.Values{"next": {authtest.RedirectURI}, "client_id": {authtest.BadgeID}}

	t.Run("a GET with a session shows a Sign out form carrying next and client_id, and ends nothing", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(s.URL + "/oauth/logout?" + back.Encode())
		if p.Status != http.StatusOK || p.Header.Get("Location") != "" {
			t.Fatalf("want the confirmation page, got %d %v", p.Status, p.Header)
		}
		if testkit.PageField(t, testkit.FormAction, p.Body) != "/oauth/logout" || testkit.PageField(t, testkit.CSRFField, p.Body) == "" ||
			testkit.PageField(t, nextAnyRe, p.Body) != authtest.RedirectURI || testkit.PageField(t, clientIDRe, p.Body) != authtest.BadgeID ||
			strings.Count(p.Body, "<button") != 1 || !strings.Contains(p.Body, ">Sign out</button>") {
			t.Fatalf("confirmation form:\n%s", p.Body)
		}
		if !signedInStill(t, s, b) {
			t.Fatal("a GET of /oauth/logout ended the session")
		}
	})
	t.Run("an image-style GET without parameters ends nothing", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		b.Get(s.URL + "/oauth/logout")
		if !signedInStill(t, s, b) {
			t.Fatal("a GET of /oauth/logout ended the session")
		}
	})
	t.Run("the confirmed POST ends the session and returns to a registered next", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(s.URL + "/oauth/logout?" + back.Encode())
		p = b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "next": {testkit.PageField(t, nextAnyRe, p.Body)},
			"client_id": {testkit.PageField(t, clientIDRe, p.Body)}})

		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != authtest.RedirectURI {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
		if signedInStill(t, s, b) {
			t.Fatal("the session survived the confirmed logout")
		}
	})
	t.Run("the confirmed POST with any other next shows the signed-out page", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(s.URL + "/oauth/logout")
		p = b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "next": {"https://evil.example/"}, "client_id": {authtest.BadgeID}})
		if p.Status != http.StatusOK || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "signed out") {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
		if signedInStill(t, s, b) {
			t.Fatal("the session survived the confirmed logout")
		}
	})
	t.Run("a POST with a bad or missing CSRF token is the form-expired page and ends nothing", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		for _, token := range []string{"", "forged"} {
			p := b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {token}, "next": {authtest.RedirectURI}, "client_id": {authtest.BadgeID}})
			if p.Status != http.StatusForbidden || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "This form has expired") {
				t.Fatalf("%q: %d %v", token, p.Status, p.Header)
			}
		}
		if !signedInStill(t, s, b) {
			t.Fatal("a logout without a valid CSRF token ended the session")
		}
	})
	t.Run("a GET without a session is a finished logout", func(t *testing.T) {
		b := newBrowser(t)
		p := b.Get(s.URL + "/oauth/logout?" + back.Encode())
		if p.Status != http.StatusFound || p.Header.Get("Location") != authtest.RedirectURI {
			t.Fatalf("registered next: %d %v", p.Status, p.Header)
		}
		p = b.Get(s.URL + "/oauth/logout?" + url.Values{"next": {"https://evil.example/"}, "client_id": {authtest.BadgeID}}.Encode())
		if p.Status != http.StatusOK || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "signed out") {
			t.Fatalf("other next: %d %v", p.Status, p.Header)
		}
	})
}

func TestCookieNamesFollowTheRequestsSecurity(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	// login signs alice in with X-Forwarded-Proto proto (empty: plain http)
	// and returns the cookies set along the way.
	login := func(t *testing.T, proto string) map[string]*http.Cookie {
		t.Helper()
		b := newBrowser(t)
		got := map[string]*http.Cookie{}
		send := func(req *http.Request) page {
			if proto != "" {
				req.Header.Set("X-Forwarded-Proto", proto)
			}
			for _, c := range got {
				req.AddCookie(c)
			}
			p := b.Do(req)
			for _, c := range (&http.Response{Header: p.Header}).Cookies() {
				got[c.Name] = c
			}
			return p
		}
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/oauth/login", nil)
		p := send(req)
		req, _ = http.NewRequest(http.MethodPost, s.URL+"/oauth/login", strings.NewReader(url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)},
			"next": {"/oauth/apps"}, "username": {"alice"}, "password": {authtest.Alice.Password}}.Encode()))
		req.Header.Set("Content-Type", form)
		if p = send(req); p.Status != http.StatusSeeOther {
			t.Fatalf("login: %d %s", p.Status, p.Body)
		}
		req, _ = http.NewRequest(http.MethodGet, s.URL+"/oauth/apps", nil)
		if p = send(req); p.Status != http.StatusOK {
			t.Fatalf("the session cookie was not read back: %d", p.Status)
		}
		return got
	}
	t.Run("over https: __Host- names, Path=/, Secure, no Domain", func(t *testing.T) {
		got := login(t, "https")
		for _, name := range []string{"__Host-eventreg_session", "__Host-eventreg_csrf"} {
			c := got[name]
			if c == nil || c.Path != "/" || !c.Secure || c.Domain != "" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("%s: %+v", name, c)
			}
		}
		if got["eventreg_session"] != nil || got["eventreg_csrf"] != nil {
			t.Fatalf("plain-named cookies set over https: %v", got)
		}
	})
	t.Run("over plain http: the plain names and Path=/oauth", func(t *testing.T) {
		got := login(t, "")
		for _, name := range []string{"eventreg_session", "eventreg_csrf"} {
			if c := got[name]; c == nil || c.Path != "/oauth" || c.Secure {
				t.Fatalf("%s: %+v", name, c)
			}
		}
		if got["__Host-eventreg_session"] != nil {
			t.Fatal("a __Host- cookie set over plain http")
		}
	})
	t.Run("a session cookie is read only under the name of the request's security", func(t *testing.T) {
		secure := login(t, "https")["__Host-eventreg_session"].Value
		plain := login(t, "")["eventreg_session"].Value
		for _, tc := range []struct {
			proto, cookie string
		}{{"", "__Host-eventreg_session=" + secure}, {"https", "eventreg_session=" + plain}} {
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/oauth/apps", nil)
			req.Header.Set("Cookie", tc.cookie)
			if tc.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			if p := newBrowser(t).Do(req); p.Status != http.StatusFound {
				t.Fatalf("proto %q with %s: %d, want the redirect to sign in", tc.proto, strings.SplitN(tc.cookie, "=", 2)[0], p.Status)
			}
		}
	})
}

func TestForwardedProtoOnlyFromTrustedProxies(t *testing.T) {
	// csrfCookie is the name of the CSRF cookie the login page sets when
	// asked with X-Forwarded-Proto: https.
	csrfCookie := func(t *testing.T, s *authtest.Server) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/oauth/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		p := newBrowser(t).Do(req)
		for _, c := range (&http.Response{Header: p.Header}).Cookies() {
			if strings.HasSuffix(c.Name, "eventreg_csrf") {
				return c.Name
			}
		}
		t.Fatalf("no CSRF cookie: %v", p.Header)
		return ""
	}
	t.Run("from a trusted proxy it makes the cookies __Host- ones", func(t *testing.T) {
		if got := csrfCookie(t, authtest.Start(t, authtest.Options{})); got != "__Host-eventreg_csrf" {
			t.Fatalf("%s", got)
		}
	})
	t.Run("from any other peer it is ignored", func(t *testing.T) {
		s := authtest.Start(t, authtest.Options{Env: map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8"}})
		if got := csrfCookie(t, s); got != "eventreg_csrf" {
			t.Fatalf("%s", got)
		}
	})
}

func TestCSRFTokenBoundToSession(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	revoke := func(b *browser, token string) page {
		return b.PostForm(s.URL+"/oauth/apps/revoke", url.Values{"csrf_token": {token}, "client_id": {authtest.BadgeID}})
	}
	t.Run("a token minted before login is refused after it", func(t *testing.T) {
		b := newBrowser(t)
		p := b.Get(s.URL + "/oauth/login?next=/oauth/apps")
		before := testkit.PageField(t, testkit.CSRFField, p.Body)
		anchor := jarCookie(t, s, b, "eventreg_csrf")
		if p = b.Login(s.URL, p, "", "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("login: %d", p.Status)
		}
		if a := jarCookie(t, s, b, "eventreg_csrf"); a == "" || a == anchor {
			t.Fatal("the CSRF anchor was not rotated at login")
		}
		if p := revoke(b, before); p.Status != http.StatusForbidden {
			t.Fatalf("a pre-login token was accepted: %d", p.Status)
		}
		// The page's own token works (the control).
		if p := revoke(b, testkit.PageField(t, testkit.CSRFField, b.Get(s.URL+"/oauth/apps").Body)); p.Status != http.StatusSeeOther {
			t.Fatalf("the current token was refused: %d", p.Status)
		}
	})
	t.Run("a token from one session is refused with another session's cookie", func(t *testing.T) {
		a, other := signedIn(t, s, authtest.Alice), signedIn(t, s, authtest.Bob)
		token := testkit.PageField(t, testkit.CSRFField, a.Get(s.URL+"/oauth/apps").Body)
		anchor := jarCookie(t, s, a, "eventreg_csrf")
		send := func(session string) page {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/oauth/apps/revoke", strings.NewReader(url.Values{"csrf_token": {token}, "client_id": {authtest.BadgeID}}.Encode()))
			req.Header.Set("Content-Type", form)
			req.Header.Set("Cookie", "eventreg_csrf="+anchor+"; eventreg_session="+session)
			return newBrowser(t).Do(req)
		}
		if p := send(jarCookie(t, s, other, "eventreg_session")); p.Status != http.StatusForbidden {
			t.Fatalf("alice's token with bob's session and alice's anchor: %d", p.Status)
		}
		if p := send(jarCookie(t, s, a, "eventreg_session")); p.Status != http.StatusSeeOther {
			t.Fatalf("alice's token with her own cookies: %d", p.Status)
		}
	})
}

// loginFrom signs in from address (sent as X-Forwarded-For by the loopback
// peer, a trusted proxy) with a fresh browser.
func loginFrom(t *testing.T, s *authtest.Server, address, username, password string) page {
	t.Helper()
	b := newBrowser(t)
	p := b.Get(s.URL + "/oauth/login?next=/oauth/apps")
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/oauth/login", strings.NewReader(url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)},
		"next": {"/oauth/apps"}, "username": {username}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", form)
	req.Header.Set("X-Forwarded-For", address)
	return b.Do(req)
}

// wrongLoginsAtOnce sends n wrong-password logins for username, each from its
// own browser and from addressOf(i), released together; it returns how many
// reached the password check and how many got each status.
func wrongLoginsAtOnce(t *testing.T, s *authtest.Server, n int, username string, addressOf func(i int) string) (int, map[int]int) {
	t.Helper()
	reqs := make([]*http.Request, n)
	browsers := make([]*browser, n)
	for i := range reqs {
		browsers[i] = newBrowser(t)
		p := browsers[i].Get(s.URL + "/oauth/login")
		reqs[i], _ = http.NewRequest(http.MethodPost, s.URL+"/oauth/login", strings.NewReader(url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)},
			"next": {"/oauth/apps"}, "username": {username}, "password": {"wrong"}}.Encode()))
		reqs[i].Header.Set("Content-Type", form)
		reqs[i].Header.Set("X-Forwarded-For", addressOf(i))
	}
	before := s.Users.VerifyCalls()
	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := browsers[i].Client.Do(reqs[i])
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return s.Users.VerifyCalls() - before, statuses
}

func TestLoginThrottlingCountsBeforeVerifying(t *testing.T) {
	const perAccount = 3
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"LOGIN_FAILURES_PER_ACCOUNT": "3", "LOGIN_FAILURES_PER_ADDRESS": "50", "LOGIN_FAILURE_DELAY": "150ms"}})

	t.Run("20 parallel wrong logins for one account from one address reach Verify at most LOGIN_FAILURES_PER_ACCOUNT times", func(t *testing.T) {
		if p := loginFrom(t, s, "203.0.113.20", "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("alice from her own address before: %d", p.Status)
		}
		const n = 20
		calls, statuses := wrongLoginsAtOnce(t, s, n, " Alice ", func(int) string { return "198.51.100.7" })
		if calls > perAccount {
			t.Fatalf("%d parallel guesses reached the password check, want at most %d (answers %v)", calls, perAccount, statuses)
		}
		if statuses[http.StatusBadRequest] > perAccount || statuses[http.StatusTooManyRequests] < n-perAccount {
			t.Fatalf("answers %v", statuses)
		}
		t.Run("from that address the account is paused, even with the right password", func(t *testing.T) {
			if p := loginFrom(t, s, "198.51.100.7", "alice", authtest.Alice.Password); p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" {
				t.Fatalf("%d %v", p.Status, p.Header)
			}
		})
		t.Run("the same account from another address it signed in from can still sign in with the right password", func(t *testing.T) {
			if p := loginFrom(t, s, "203.0.113.20", "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
		})
	})
	s.Redis.FlushAll(bg())

	t.Run("parallel wrong guesses for one account from many addresses reach the check at most LOGIN_FAILURES_PER_ACCOUNT times, and the user still signs in from his own address", func(t *testing.T) {
		const home = "203.0.113.50"
		if p := loginFrom(t, s, home, "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("alice from home before the attack: %d", p.Status)
		}
		const n = 20
		calls, statuses := wrongLoginsAtOnce(t, s, n, "alice", func(i int) string { return "192.0.2." + strconv.Itoa(i+1) })
		if calls > perAccount {
			t.Fatalf("%d parallel guesses from %d addresses reached the password check, want at most %d (answers %v)", calls, n, perAccount, statuses)
		}
		if statuses[http.StatusBadRequest] > perAccount || statuses[http.StatusTooManyRequests] < n-perAccount {
			t.Fatalf("answers %v", statuses)
		}
		t.Run("the user signs in from an address he signed in from before", func(t *testing.T) {
			if p := loginFrom(t, s, home, "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
		})
		t.Run("a new address waits, even with the right password", func(t *testing.T) {
			if p := loginFrom(t, s, "198.51.100.77", "alice", authtest.Alice.Password); p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" {
				t.Fatalf("%d %v", p.Status, p.Header)
			}
		})
	})
	s.Redis.FlushAll(bg())

	t.Run("the answers do not tell whether a username and an email are one account", func(t *testing.T) {
		// After the same failures under another name, alice's email is
		// answered alike whether that name was alice's own or bob's.
		answer := func(first string) int {
			s.Redis.FlushAll(bg())
			const addr = "198.51.100.11"
			for i := 0; i < perAccount; i++ {
				if p := loginFrom(t, s, addr, first, "wrong"); p.Status != http.StatusBadRequest {
					t.Fatalf("failure %d (%s): %d", i+1, first, p.Status)
				}
			}
			return loginFrom(t, s, addr, "Alice@Example.org", "wrong").Status
		}
		same, other := answer("alice"), answer("bob")
		if same != other {
			t.Fatalf("alice's email after failures as alice: %d, after failures as bob: %d; the answer tells that alice and alice@example.org are one account", same, other)
		}
		if same != http.StatusBadRequest {
			t.Fatalf("a fresh identifier: %d, want the plain failure", same)
		}
	})
	s.Redis.FlushAll(bg())

	t.Run("each identifier, known or not, is counted under itself, trimmed and lowercased, and answered alike", func(t *testing.T) {
		const addr = "198.51.100.12"
		for _, login := range []string{"alice", "Mallory@Example.org"} {
			for i := 0; i < perAccount; i++ {
				if p := loginFrom(t, s, addr, " "+strings.ToUpper(login)+" ", "wrong"); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "The username or password is incorrect.") {
					t.Fatalf("%s failure %d: %d %s", login, i+1, p.Status, p.Body)
				}
			}
			if p := loginFrom(t, s, addr, strings.ToLower(login), "wrong"); p.Status != http.StatusTooManyRequests {
				t.Fatalf("%s past the allowance: %d", login, p.Status)
			}
		}
	})
	s.Redis.FlushAll(bg())

	t.Run("a successful sign-in gives its attempt back", func(t *testing.T) {
		const addr = "198.51.100.9"
		for i := 0; i < perAccount-1; i++ {
			if p := loginFrom(t, s, addr, "alice", "wrong"); p.Status != http.StatusBadRequest {
				t.Fatalf("failure %d: %d", i+1, p.Status)
			}
		}
		if p := loginFrom(t, s, addr, "alice", authtest.Alice.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("the right password: %d", p.Status)
		}
		// Two failures and one success: one failure is still allowed.
		if p := loginFrom(t, s, addr, "alice", "wrong"); p.Status != http.StatusBadRequest {
			t.Fatalf("the success was counted as a failure: %d", p.Status)
		}
		if p := loginFrom(t, s, addr, "alice", "wrong"); p.Status != http.StatusTooManyRequests {
			t.Fatalf("past the allowance: %d", p.Status)
		}
	})
}

func TestAuthorizationResponsesCarryIss(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	resp, err := http.Get(s.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	meta := decode(t, readAll(t, resp))
	resp.Body.Close()
	if meta["authorization_response_iss_parameter_supported"] != true {
		t.Fatalf("metadata: %v", meta)
	}
	issuer, _ := meta["issuer"].(string)
	if issuer == "" {
		t.Fatalf("metadata without issuer: %v", meta)
	}
	b := signedIn(t, s, authtest.Alice)
	check := func(t *testing.T, p page, want string) {
		t.Helper()
		q := callback(t, p)
		if q.Get(want) == "" {
			t.Fatalf("no %s: %v", want, q)
		}
		if got := q["iss"]; len(got) != 1 || got[0] != issuer {
			t.Fatalf("iss %q, want exactly the metadata's issuer %q", got, issuer)
		}
	}
	t.Run("a code", func(t *testing.T) {
		p := b.Get(authURL(s, goodQuery()))
		if p.Status == http.StatusOK {
			p = b.Decide(s.URL, p, "authorize")
		}
		check(t, p, "code")
	})
	t.Run("every error redirect", func(t *testing.T) {
		for name, change := range map[string]func(url.Values){
			"unsupported_response_type": func(q url.Values) { q.Set("response_type", "token") },
			"invalid_scope":             func(q url.Values) { q.Set("scope", "pii:basic user:read") },
			"invalid_request":           func(q url.Values) { q.Set("code_challenge", "short"); q.Set("code_challenge_method", "S256") },
		} {
			q := goodQuery()
			change(q)
			p := b.Get(authURL(s, q))
			check(t, p, "error")
			if got := callback(t, p).Get("error"); got != name {
				t.Fatalf("error %q, want %q", got, name)
			}
		}
		q := goodQuery()
		q.Set("scope", "pii:phone")
		p := b.Get(authURL(s, q))
		check(t, b.Decide(s.URL, p, "deny"), "error")
	})
}

func TestAuthorizeLoopbackRedirectURIAnyPort(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	b := newBrowser(t)
	const other = "http://127.0.0.1:51234/callback" // 502 registered :9999
	cfg := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	cfg.RedirectURL = other
	p := b.Get(cfg.AuthCodeURL("s"))
	if p.Status != http.StatusOK || !strings.Contains(p.Body, `name="password"`) {
		t.Fatalf("want the sign-in page for a registered loopback URI on another port, got %d %v", p.Status, p.Header)
	}
	p = b.Decide(s.URL, b.follow(s.URL, b.Login(s.URL, p, "", "alice", authtest.Alice.Password)), "authorize")
	loc, err := url.Parse(p.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), other+"?") || loc.Query().Get("code") == "" {
		t.Fatalf("want the code at %s, got %d %v", other, p.Status, p.Header)
	}
	code := loc.Query().Get("code")
	t.Run("the code is bound to the port presented", func(t *testing.T) {
		wrong := *cfg
		wrong.RedirectURL = authtest.RedirectURI
		if _, err := exchange(t, &wrong, code, ""); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("redeemed with the registered port: %v", err)
		}
		if _, err := exchange(t, cfg, code, ""); err != nil {
			t.Fatalf("redeemed with the presented port: %v", err)
		}
	})
	t.Run("a localhost URI on another port is not registered", func(t *testing.T) {
		q := goodQuery()
		q.Set("client_id", authtest.StaffID)
		q.Set("redirect_uri", "http://localhost:9998/staff/callback")
		if p := b.Get(authURL(s, q)); p.Status != http.StatusBadRequest || p.Header.Get("Location") != "" {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
}

func TestPKCERequiredByDefault(t *testing.T) {
	// Client records are not cached: a subtest re-imports one.
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"CLIENT_CACHE_TTL": "0"}})
	secret := "a-fifth-long-random-demo-secret-of-32-chars"
	no := false
	if _, err := s.Clients.Import(bg(), []fixture.Client{
		{ID: 505, Name: "New App", Kind: "obo", Secret: &secret, RedirectURIs: []string{authtest.RedirectURI}, Scopes: []string{"pii:basic"}},
		{ID: 506, Name: "Old App", Kind: "obo", Secret: &secret, RedirectURIs: []string{authtest.RedirectURI}, Scopes: []string{"pii:basic"}, RequirePKCE: &no},
	}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	query := func(id string, withPKCE bool) url.Values {
		q := goodQuery()
		q.Set("client_id", id)
		if withPKCE {
			q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier()))
			q.Set("code_challenge_method", "S256")
		}
		return q
	}
	t.Run("a new obo client without code_challenge gets invalid_request", func(t *testing.T) {
		q := callback(t, b.Get(authURL(s, query("505", false))))
		if q.Get("error") != "invalid_request" || q.Get("error_description") != "code_challenge required" || q.Get("state") != "xyz" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("with a code_challenge it goes on to sign-in", func(t *testing.T) {
		if p := b.Get(authURL(s, query("505", true))); p.Status != http.StatusOK || !strings.Contains(p.Body, `name="password"`) {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("a client registered with requirePkce false may omit it", func(t *testing.T) {
		if p := b.Get(authURL(s, query("506", false))); p.Status != http.StatusOK || !strings.Contains(p.Body, `name="password"`) {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("re-importing without requirePkce keeps the stored setting", func(t *testing.T) {
		if _, err := s.Clients.Import(bg(), []fixture.Client{
			{ID: 506, Name: "Old App", Kind: "obo", RedirectURIs: []string{authtest.RedirectURI}, Scopes: []string{"pii:basic"}},
		}); err != nil {
			t.Fatal(err)
		}
		if c, err := s.Clients.Get(bg(), 506); err != nil || c.RequirePKCE {
			t.Fatalf("%+v %v", c, err)
		}
	})
}
