package testkit

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// PageBrowser is a cookie-keeping HTTP client that does not follow
// redirects: auth's sign-in and consent pages driven one step at a time,
// without a real browser, so that each answer can be checked (auth's server
// tests, and the end-to-end tests that only need tokens).
type PageBrowser struct {
	T      testing.TB
	Client *http.Client
}

// NewPageBrowser returns a browser with an empty cookie jar.
func NewPageBrowser(t testing.TB) *PageBrowser {
	jar, _ := cookiejar.New(nil)
	return &PageBrowser{T: t, Client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Page is one answer, its body read.
type Page struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends req, failing the test when it cannot.
func (b *PageBrowser) Do(req *http.Request) Page {
	b.T.Helper()
	resp, err := b.Client.Do(req)
	if err != nil {
		b.T.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return Page{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
}

// Get GETs u.
func (b *PageBrowser) Get(u string) Page {
	b.T.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.Do(req)
}

// PostForm POSTs v, form-encoded, to u.
func (b *PageBrowser) PostForm(u string, v url.Values) Page {
	b.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(req)
}

// The fields of auth's forms, for PageField.
var (
	CSRFField  = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	NextField  = regexp.MustCompile(`name="next" value="([^"]+)"`)
	FormAction = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

// PageField is the first group of re in body, unescaped; it fails t when
// the page has none.
func PageField(t testing.TB, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return html.UnescapeString(m[1])
}

// Login submits the form of login page p to base's /oauth/login as user
// with password; an empty next is the form's own.
func (b *PageBrowser) Login(base string, p Page, next, user, password string) Page {
	b.T.Helper()
	if next == "" {
		next = PageField(b.T, NextField, p.Body)
	}
	return b.PostForm(base+"/oauth/login", url.Values{"csrf_token": {PageField(b.T, CSRFField, p.Body)},
		"next": {next}, "username": {user}, "password": {password}})
}

// Decide presses decision ("authorize" or "deny") on consent page p, whose
// form posts to a path under base.
func (b *PageBrowser) Decide(base string, p Page, decision string) Page {
	b.T.Helper()
	return b.PostForm(base+PageField(b.T, FormAction, p.Body),
		url.Values{"csrf_token": {PageField(b.T, CSRFField, p.Body)}, "decision": {decision}})
}
