package e2e

import (
	"context"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// Demo OBO apps and users (deploy/fixtures/demo.json).
const (
	authBadgeID      = "502" // pii:basic pii:email pii:address pii:phone
	authBadgeSecret  = "another-long-random-demo-secret-of-32-chars"
	authStaffID      = "503" // pii:basic pii:email user:read registration:read
	authStaffSecret  = "a-third-long-random-demo-secret-of-32-chars"
	authCallbackAddr = "127.0.0.1:9999"
	authRedirectURI  = "http://127.0.0.1:9999/callback"
	authAlice        = "alice"
	authAlicePass    = "correct horse battery staple"
	authBob          = "bob"
	authBobPass      = "bob demo password 2026"
)

// authApp is an OBO app's golang.org/x/oauth2 configuration against the gateway.
func authApp(gw, id, secret string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: authRedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: gw + "/oauth/authorize", TokenURL: gw + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
}

// authCallback is the app's redirect endpoint on 127.0.0.1:9999: it hands
// every query it receives to the test.
type authCallback struct {
	got chan url.Values
	srv *http.Server
}

func startAuthCallback(t *testing.T) *authCallback {
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
func (cb *authCallback) wait(t *testing.T) url.Values {
	t.Helper()
	select {
	case q := <-cb.got:
		return q
	case <-time.After(15 * time.Second):
		t.Fatal("the app's redirect URI was never called")
		return nil
	}
}

// none fails if the redirect URI was called.
func (cb *authCallback) none(t *testing.T) {
	t.Helper()
	select {
	case q := <-cb.got:
		t.Fatalf("the browser was redirected to the app: %v", q)
	default:
	}
}

// authHTTPBrowser is a cookie-keeping HTTP client that does not follow
// redirects: the browser flow without a browser, for the token-side tests.
type authHTTPBrowser struct {
	t  *testing.T
	gw string
	hc *http.Client
}

func newAuthHTTPBrowser(t *testing.T, gw string) *authHTTPBrowser {
	jar, _ := cookiejar.New(nil)
	return &authHTTPBrowser{t: t, gw: gw, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var (
	authCSRFRe   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	authNextRe   = regexp.MustCompile(`name="next" value="([^"]+)"`)
	authActionRe = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

func (b *authHTTPBrowser) do(method, u string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

func authField(t *testing.T, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, page)
	}
	return html.UnescapeString(m[1])
}

// code runs login and consent for user and returns the code the app receives.
func (b *authHTTPBrowser) code(authURL, user, password string) string {
	t := b.t
	t.Helper()
	status, h, page := b.do(http.MethodGet, authURL, nil)
	if status == 200 && strings.Contains(page, `name="password"`) {
		status, h, page = b.do(http.MethodPost, b.gw+"/oauth/login", url.Values{"csrf_token": {authField(t, authCSRFRe, page)},
			"next": {authField(t, authNextRe, page)}, "username": {user}, "password": {password}})
		if status != http.StatusSeeOther {
			t.Fatalf("login: %d %s", status, page)
		}
		status, h, page = b.do(http.MethodGet, b.gw+h.Get("Location"), nil)
	}
	if status == 200 && strings.Contains(page, `value="authorize"`) {
		status, h, page = b.do(http.MethodPost, b.gw+authField(t, authActionRe, page), url.Values{"csrf_token": {authField(t, authCSRFRe, page)}, "decision": {"authorize"}})
	}
	u, err := url.Parse(h.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), authRedirectURI) || u.Query().Get("code") == "" {
		t.Fatalf("no code: %d %v\n%s", status, h, page)
	}
	return u.Query().Get("code")
}

func authErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// authParallel runs fn n times at once and counts successes.
func authParallel(n int, fn func() error) (ok int, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else {
				errs = append(errs, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return ok, errs
}

// authCurrentUser calls GET /api/users/current through the gateway.
func authCurrentUser(t *testing.T, s *stack.Stack, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.GatewayURL+"/api/users/current", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// apiRequest sends GET path through the gateway and returns the status.
func apiRequest(t *testing.T, s *stack.Stack, path, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.GatewayURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
