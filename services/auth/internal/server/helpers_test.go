package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/testkit"
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

// browser drives auth's pages one step at a time (testkit.PageBrowser).
type browser struct{ *testkit.PageBrowser }

type page = testkit.Page

func newBrowser(t testing.TB) *browser { return &browser{testkit.NewPageBrowser(t)} }

// follow GETs the Location of p, which must be on this server.
func (b *browser) follow(base string, p page) page {
	b.T.Helper()
	loc := p.Header.Get("Location")
	if !strings.HasPrefix(loc, "/") {
		b.T.Fatalf("redirect to %q leaves the server", loc)
	}
	return b.Get(base + loc)
}

// callback parses a redirect to the app's redirect URI.
func callback(t *testing.T, p page) url.Values {
	t.Helper()
	if p.Status != http.StatusFound && p.Status != http.StatusSeeOther {
		t.Fatalf("want a redirect to the app, got %d:\n%s", p.Status, p.Body)
	}
	u, err := url.Parse(p.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), authtest.RedirectURI) {
		t.Fatalf("redirect to %q", p.Header.Get("Location"))
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
	p := b.Get(authURL)
	if p.Status == http.StatusOK && strings.Contains(p.Body, `name="password"`) {
		p = b.Login(s.URL, p, "", user.Username, user.Password)
		if p.Status != http.StatusSeeOther {
			t.Fatalf("login: %d\n%s", p.Status, p.Body)
		}
		p = b.follow(s.URL, p)
	}
	if p.Status == http.StatusOK && strings.Contains(p.Body, `value="authorize"`) {
		p = b.Decide(s.URL, p, "authorize")
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
