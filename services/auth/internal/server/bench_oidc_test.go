package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// BenchmarkCodeExchange measures the authorization-code redemption at the
// token endpoint over HTTP (Redis, the users service's permissions, signing),
// without openid and with it (an RS256 or an ES256 ID token besides). The
// codes are made, through the pages with a session, outside the timer.
// Run: go test ./internal/server -run '^$' -bench CodeExchange -cpu 2
func BenchmarkCodeExchange(b *testing.B) {
	s := authtest.Start(b, authtest.Options{})
	for _, bc := range []struct {
		name, id, secret string
		scopes           []string
	}{
		{"without openid", authtest.WikiID, authtest.WikiSecret, []string{"profile", "email"}},
		{"openid RS256", authtest.WikiID, authtest.WikiSecret, []string{"openid", "profile", "email"}},
		{"openid ES256", authtest.ForumID, authtest.ForumSecret, []string{"openid", "profile", "email"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := oboConfig(s, bc.id, bc.secret, bc.scopes...)
			jar := newBenchBrowser(b, s, cfg)
			verifier := oauth2.GenerateVerifier()
			authURL := cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier))
			hc := &http.Client{}
			for b.Loop() {
				b.StopTimer()
				code := jar.code(authURL)
				body := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {authtest.RedirectURI}, "code_verifier": {verifier}}.Encode()
				b.StartTimer()
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader(body))
				req.Header.Set("Content-Type", form)
				req.SetBasicAuth(bc.id, bc.secret)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || strings.Contains(string(got), "id_token") != (bc.scopes[0] == "openid") {
					b.Fatalf("%d %s", resp.StatusCode, got)
				}
			}
		})
	}
}

// benchBrowser is a signed-in browser that has authorized the app: each
// code comes from one GET of the authorization endpoint.
type benchBrowser struct {
	b  *testing.B
	hc *http.Client
}

func newBenchBrowser(b *testing.B, s *authtest.Server, cfg *oauth2.Config) *benchBrowser {
	br := newBrowser(b)
	// Sign in and consent once, with the browser helpers of the tests.
	p := br.get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	p = br.login(s.URL, p, authtest.Alice.Username, authtest.Alice.Password)
	p = br.follow(s.URL, p)
	if p.status == http.StatusOK && strings.Contains(p.body, `value="authorize"`) {
		br.decide(s.URL, p, "authorize")
	}
	return &benchBrowser{b: b, hc: br.hc}
}

func (bb *benchBrowser) code(authURL string) string {
	resp, err := bb.hc.Get(authURL)
	if err != nil {
		bb.b.Fatal(err)
	}
	resp.Body.Close()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || u.Query().Get("code") == "" {
		bb.b.Fatalf("no code: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return u.Query().Get("code")
}
