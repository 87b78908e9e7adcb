package server_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// post sends a form (or JSON when ct says so) and returns status, headers
// and body, checking the response against the OpenAPI document.
func post(t *testing.T, u, ct, body string, basic ...string) (int, http.Header, []byte) {
	t.Helper()
	return send(t, true, u, ct, body, basic...)
}

// postUnchecked is post without the OpenAPI check.
func postUnchecked(t *testing.T, u, ct, body string, basic ...string) (int, http.Header, []byte) {
	t.Helper()
	return send(t, false, u, ct, body, basic...)
}

func send(t *testing.T, check bool, u, ct, body string, basic ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if check {
		validate(t, req, resp, b)
	}
	return resp.StatusCode, resp.Header, b
}

const form = "application/x-www-form-urlencoded"

var specValidator *apispec.Validator

// validate checks a response against the OpenAPI document.
func validate(t *testing.T, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if specValidator == nil {
		v, err := apispec.NewValidator()
		if err != nil {
			t.Fatalf("loading the OpenAPI document: %v", err)
		}
		specValidator = v
	}
	if err := specValidator.ValidateResponse(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("response does not match the OpenAPI document: %v\nbody: %s", err, body)
	}
}

// getValidated GETs u and checks the answer against the OpenAPI document.
func getValidated(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp)
	validate(t, req, resp, body)
	return resp, body
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return m
}

// validator checks tokens the way resource services do.
func validator(t *testing.T, s *authtest.Server) *tokenauth.Validator {
	t.Helper()
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: s.InternalURL + "/.well-known/jwks.json", Issuer: s.URL, Audience: "eventreg-api", MinRefresh: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// browser is a cookie-keeping client that does not follow redirects, so each
// step of the flow can be checked.
type browser struct {
	t  testing.TB
	hc *http.Client
}

func newBrowser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(u string) page {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) postForm(u string, v url.Values) page {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", form)
	return b.do(req)
}

var (
	csrfRe   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	nextRe   = regexp.MustCompile(`name="next" value="([^"]+)"`)
	actionRe = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

func field(t testing.TB, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return html.UnescapeString(m[1])
}

// login fills the login page p with the credentials and returns the answer.
func (b *browser) login(base string, p page, username, password string) page {
	b.t.Helper()
	return b.postForm(base+"/oauth/login", url.Values{"csrf_token": {field(b.t, csrfRe, p.body)}, "next": {field(b.t, nextRe, p.body)},
		"username": {username}, "password": {password}})
}

// decide presses Authorize or Deny on consent page p.
func (b *browser) decide(base string, p page, decision string) page {
	b.t.Helper()
	return b.postForm(base+field(b.t, actionRe, p.body), url.Values{"csrf_token": {field(b.t, csrfRe, p.body)}, "decision": {decision}})
}

// follow GETs the Location of p, which must be on this server.
func (b *browser) follow(base string, p page) page {
	b.t.Helper()
	loc := p.header.Get("Location")
	if !strings.HasPrefix(loc, "/") {
		b.t.Fatalf("redirect to %q leaves the server", loc)
	}
	return b.get(base + loc)
}

// callback parses a redirect to the app's redirect URI.
func callback(t *testing.T, p page) url.Values {
	t.Helper()
	if p.status != http.StatusFound && p.status != http.StatusSeeOther {
		t.Fatalf("want a redirect to the app, got %d:\n%s", p.status, p.body)
	}
	u, err := url.Parse(p.header.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), authtest.RedirectURI) {
		t.Fatalf("redirect to %q", p.header.Get("Location"))
	}
	return u.Query()
}

// oboConfig is an app's golang.org/x/oauth2 configuration.
func oboConfig(s *authtest.Server, id, secret string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: authtest.RedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
}

// authorize runs the browser part for user (logging in when needed and
// authorizing on the consent page when shown) and returns the code.
func authorize(t *testing.T, s *authtest.Server, b *browser, authURL string, user authtest.User) string {
	t.Helper()
	p := b.get(authURL)
	if p.status == http.StatusOK && strings.Contains(p.body, `name="password"`) {
		p = b.login(s.URL, p, user.Username, user.Password)
		if p.status != http.StatusSeeOther {
			t.Fatalf("login: %d\n%s", p.status, p.body)
		}
		p = b.follow(s.URL, p)
	}
	if p.status == http.StatusOK && strings.Contains(p.body, `value="authorize"`) {
		p = b.decide(s.URL, p, "authorize")
	}
	q := callback(t, p)
	if q.Get("code") == "" {
		t.Fatalf("no code: %v", q)
	}
	return q.Get("code")
}

func bg() context.Context { return context.Background() }

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
