package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
	"golang.org/x/oauth2"
)

// authCallback is the apps' redirect endpoint on 127.0.0.1:9999: it hands
// every query it receives to the test.
type authCallback struct {
	got chan url.Values
	srv *http.Server
}

func startAuthCallback(t testing.TB) *authCallback {
	t.Helper()
	ln, err := net.Listen("tcp", authCallbackAddr)
	if err != nil {
		t.Fatalf("the demo apps' redirect URI needs %s: %v", authCallbackAddr, err)
	}
	cb := &authCallback{got: make(chan url.Values, 16)}
	cb.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" { // e.g. the browser's /favicon.ico
			http.NotFound(w, r)
			return
		}
		cb.got <- r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>App</title><h1 id="app-callback">Back in the app</h1>`)
	})}
	go func() { _ = cb.srv.Serve(ln) }()
	t.Cleanup(func() { _ = cb.srv.Close() })
	return cb
}

// wait returns the next callback query, failing after a deadline.
func (cb *authCallback) wait(t testing.TB) url.Values {
	t.Helper()
	select {
	case q := <-cb.got:
		return q
	case <-time.After(15 * time.Second):
		t.Fatal("the app's redirect URI was never called")
		return nil
	}
}

// redeem waits for app's redirect, checks that it carries state and a code,
// and exchanges the code (opts: the PKCE verifier) for app's tokens.
func (cb *authCallback) redeem(t testing.TB, app *oauth2.Config, state string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	q := cb.wait(t)
	if q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("callback %v", q)
	}
	tok, err := app.Exchange(context.Background(), q.Get("code"), opts...)
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return tok
}

// none fails if the redirect URI was called.
func (cb *authCallback) none(t testing.TB) {
	t.Helper()
	select {
	case q := <-cb.got:
		t.Fatalf("the browser was redirected to the app: %v", q)
	default:
	}
}

// authHTTPBrowser drives auth's sign-in pages without a browser
// (testkit.PageBrowser), through the gateway gw, for the token-side tests.
type authHTTPBrowser struct {
	*testkit.PageBrowser
	gw string
}

func newAuthHTTPBrowser(t testing.TB, gw string) *authHTTPBrowser {
	return &authHTTPBrowser{PageBrowser: testkit.NewPageBrowser(t), gw: gw}
}

// browserFrom is a browser whose connections leave from the loopback
// address ip (any of 127.0.0.0/8 reaches the listeners on 127.0.0.1).
func browserFrom(t testing.TB, gw, ip string) *authHTTPBrowser {
	b := newAuthHTTPBrowser(t, gw)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	b.Client.Transport = &http.Transport{DialContext: dialer.DialContext}
	return b
}

// do GETs u, or POSTs form to it, and returns the answer's status, header
// and body.
func (b *authHTTPBrowser) do(method, u string, form url.Values) (int, http.Header, string) {
	b.T.Helper()
	var p testkit.Page
	switch method {
	case http.MethodGet:
		p = b.Get(u)
	case http.MethodPost:
		p = b.PostForm(u, form)
	default:
		b.T.Fatalf("authHTTPBrowser does not send %s", method)
	}
	return p.Status, p.Header, p.Body
}

// loginPage GETs the login page (of the gateway, or of auth itself at base).
func (b *authHTTPBrowser) loginPage(base string) string {
	b.T.Helper()
	status, _, page := b.do(http.MethodGet, base+"/oauth/login", nil)
	if status != http.StatusOK {
		b.T.Fatalf("the login page: %d\n%s", status, page)
	}
	return page
}

// login submits the login form of page, a login page got from base, as
// user with password; an empty next is the form's own.
func (b *authHTTPBrowser) login(base, page, next, user, password string) (int, http.Header, string) {
	b.T.Helper()
	p := b.Login(base, testkit.Page{Body: page}, next, user, password)
	return p.Status, p.Header, p.Body
}

// authorize opens authURL and, when it is the login page, signs in as user:
// it returns the answer that follows (the consent page, or the redirect to
// the app when consent is remembered).
func (b *authHTTPBrowser) authorize(authURL, user, password string) (int, http.Header, string) {
	t := b.T
	t.Helper()
	status, h, page := b.do(http.MethodGet, authURL, nil)
	if status == http.StatusOK && strings.Contains(page, `name="password"`) {
		status, h, page = b.login(b.gw, page, "", user, password)
		if status != http.StatusSeeOther {
			t.Fatalf("login: %d %s", status, page)
		}
		status, h, page = b.do(http.MethodGet, b.gw+h.Get("Location"), nil)
	}
	return status, h, page
}

// decide presses decision ("authorize" or "deny") on a consent page.
func (b *authHTTPBrowser) decide(page, decision string) (int, http.Header, string) {
	b.T.Helper()
	p := b.Decide(b.gw, testkit.Page{Body: page}, decision)
	return p.Status, p.Header, p.Body
}

// code runs login and consent for user and returns the code the app receives.
func (b *authHTTPBrowser) code(authURL, user, password string) string {
	t := b.T
	t.Helper()
	status, h, page := b.authorize(authURL, user, password)
	if status == http.StatusOK && strings.Contains(page, `value="authorize"`) {
		status, h, page = b.decide(page, "authorize")
	}
	u, err := url.Parse(h.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), authRedirectURI) || u.Query().Get("code") == "" {
		t.Fatalf("no code: %d %v\n%s", status, h, page)
	}
	return u.Query().Get("code")
}

// token is what app gets acting for user: login, consent, and the code
// redeemed with PKCE.
func (b *authHTTPBrowser) token(app *oauth2.Config, user, password string) *oauth2.Token {
	b.T.Helper()
	verifier := oauth2.GenerateVerifier()
	code := b.code(app.AuthCodeURL("state-"+user, oauth2.S256ChallengeOption(verifier)), user, password)
	tok, err := app.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		b.T.Fatalf("exchanging %s's code: %v", user, err)
	}
	return tok
}

// sessionCounts reports whether b's session cookie still signs it in: the
// authorization request is answered without the login page.
func (b *authHTTPBrowser) sessionCounts(authURL string) bool {
	b.T.Helper()
	status, _, page := b.do(http.MethodGet, authURL, nil)
	if status == http.StatusOK && strings.Contains(page, `name="password"`) {
		return false
	}
	if status != http.StatusFound {
		b.T.Fatalf("authorization request: %d\n%s", status, page)
	}
	return true
}
