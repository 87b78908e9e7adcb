// Package oauthflow gets tokens the way real apps do, without a browser: client credentials with golang.org/x/oauth2, and the authorization-code flow through the real login and consent pages with a cookie jar, so that the benchmarks can hold pools of codes and refresh tokens made before the measured phase.
package oauthflow

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ServiceToken returns a client-credentials access token for scopes.
func ServiceToken(ctx context.Context, base, clientID, secret string, scopes ...string) (string, error) {
	cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: base + "/api/oauth/token",
		Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cfg.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("client-credentials token for client %s: %w", clientID, err)
	}
	return tok.AccessToken, nil
}

// App is an OBO application (authorization-code client).
type App struct {
	Base         string // the gateway
	ClientID     string
	ClientSecret string
	RedirectURI  string
	Scopes       []string
	// Verifier is the PKCE verifier of every code the app asks for (one
	// verifier is enough for a benchmark; each code is still single-use).
	Verifier string
}

// Config is the x/oauth2 configuration of the app.
func (a App) Config() *oauth2.Config {
	return &oauth2.Config{ClientID: a.ClientID, ClientSecret: a.ClientSecret, RedirectURL: a.RedirectURI, Scopes: a.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: a.Base + "/oauth/authorize", TokenURL: a.Base + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
}

// Browser is one user's browser: a cookie jar that logs in through the login
// form once and consents once per app; after that every authorization
// request is answered at once with a code (remembered consent).
type Browser struct {
	base               string
	username, password string
	client             *http.Client
}

// NewBrowser returns a browser for username at the gateway base.
func NewBrowser(base, username, password string) *Browser {
	jar, _ := cookiejar.New(nil) // cannot fail without options
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	return &Browser{base: base, username: username, password: password, client: &http.Client{Jar: jar, Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var (
	csrfField  = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	nextField  = regexp.MustCompile(`name="next" value="([^"]*)"`)
	formAction = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

// Code returns a fresh authorization code, logging in and consenting when
// the pages ask for it.
func (b *Browser) Code(ctx context.Context, app App) (string, error) {
	authURL := app.Config().AuthCodeURL("bench", oauth2.S256ChallengeOption(app.Verifier))
	method, target, form := http.MethodGet, authURL, url.Values(nil)
	for step := 0; step < 6; step++ {
		status, location, body, err := b.do(ctx, method, target, form)
		if err != nil {
			return "", err
		}
		switch {
		case status == http.StatusFound || status == http.StatusSeeOther:
			loc, err := url.Parse(location)
			if err != nil {
				return "", fmt.Errorf("authorization redirect %q: %w", location, err)
			}
			if strings.HasPrefix(location, app.RedirectURI) {
				if e := loc.Query().Get("error"); e != "" {
					return "", fmt.Errorf("authorization refused: %s: %s", e, loc.Query().Get("error_description"))
				}
				code := loc.Query().Get("code")
				if code == "" {
					return "", fmt.Errorf("redirect to the app without a code: %s", location)
				}
				return code, nil
			}
			method, target, form = http.MethodGet, b.resolve(location), nil
		case status == http.StatusOK && strings.Contains(body, `action="/oauth/login"`):
			csrf, next := match(csrfField, body), match(nextField, body)
			if csrf == "" {
				return "", errors.New("login page without a CSRF token")
			}
			method, target = http.MethodPost, b.base+"/oauth/login"
			form = url.Values{"csrf_token": {csrf}, "next": {next}, "username": {b.username}, "password": {b.password}}
		case status == http.StatusOK && strings.Contains(body, `value="authorize"`):
			csrf, action := match(csrfField, body), match(formAction, body)
			if csrf == "" || action == "" {
				return "", errors.New("consent page without a form or CSRF token")
			}
			method, target = http.MethodPost, b.resolve(action)
			form = url.Values{"csrf_token": {csrf}, "decision": {"authorize"}}
		default:
			return "", fmt.Errorf("%s %s answered %d: %s", method, redact(target), status, abbreviate(body))
		}
	}
	return "", errors.New("the authorization flow did not end with a code after 6 steps")
}

func match(re *regexp.Regexp, body string) string {
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func (b *Browser) resolve(ref string) string {
	if strings.HasPrefix(ref, "/") {
		return b.base + ref
	}
	return ref
}

func (b *Browser) do(ctx context.Context, method, target string, form url.Values) (int, string, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return 0, "", "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s %s: %w", method, redact(target), err)
	}
	defer resp.Body.Close()
	b2, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", "", fmt.Errorf("reading %s: %w", redact(target), err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), string(b2), nil
}

// redact drops the query (it may carry a code) from a URL for an error message.
func redact(u string) string {
	base, _, _ := strings.Cut(u, "?")
	return base
}

func abbreviate(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// Codes makes up to limit codes with workers browsers' worth of concurrency
// for at most budget, and returns them (never an empty pool without an error).
func (b *Browser) Codes(ctx context.Context, app App, limit, workers int, budget time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var (
		mu       sync.Mutex
		codes    = make([]string, 0, limit)
		firstErr error
		issued   atomic.Int64
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for issued.Add(1) <= int64(limit) {
				code, err := b.Code(ctx, app)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						cancel()
					}
					return
				}
				mu.Lock()
				codes = append(codes, code)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return codes, firstErr
	}
	if len(codes) == 0 {
		return nil, errors.New("no authorization code could be made in time")
	}
	return codes, nil
}

// Exchange trades a code of the app for tokens with x/oauth2.
func (a App) Exchange(ctx context.Context, code string) (*oauth2.Token, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: 10 * time.Second})
	tok, err := a.Config().Exchange(ctx, code, oauth2.VerifierOption(a.Verifier))
	if err != nil {
		return nil, fmt.Errorf("exchanging a code: %w", err)
	}
	return tok, nil
}
