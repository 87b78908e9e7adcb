//go:build unix

package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// BenchmarkClientCredentials measures the token endpoint's hot path
// (keyed-hash secret check, cached client, ES256 signing) over HTTP.
// Run: go test ./internal/server -run '^$' -bench ClientCredentials -cpu 2
func BenchmarkClientCredentials(b *testing.B) {
	s := authtest.Start(b, authtest.Options{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr}
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader("grant_type=client_credentials&scope=user:read"))
			req.Header.Set("Content-Type", form)
			req.SetBasicAuth(authtest.ServiceID, authtest.ServiceSecret)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// BenchmarkCodeFlow measures the authorization-code flow as a relying party
// runs it, with a live session and remembered consent: the authorization
// request (answered at once with a code), then the code's redemption at the
// token endpoint, over HTTP, with real Redis and the users-service stand-in
// of authtest. Each iteration runs one flow of each kind (without openid,
// with an RS256 and with an ES256 ID token) in a rotating order, so the
// kinds share the machine's slow and fast moments and their ratios hold on
// a busy host. Per kind it reports the whole flow's and the exchange's mean
// time, and the CPU the process spent per flow (server, stand-in and
// client; Redis is another process), and each kind against the flow
// without openid. ns/op is one flow of each kind.
// Run: go test ./internal/server -run '^$' -bench CodeFlow -cpu 2 -benchtime 3000x
func BenchmarkCodeFlow(b *testing.B) {
	// The per-client limit of token requests is lifted: this measures the
	// endpoint, not the limit.
	s := authtest.Start(b, authtest.Options{Env: map[string]string{"CLIENT_TOKEN_REQUESTS": "100000000"}})
	flows := []*benchFlow{
		newBenchFlow(b, s, "none", authtest.WikiID, authtest.WikiSecret, "profile", "email"),
		newBenchFlow(b, s, "rs256", authtest.WikiID, authtest.WikiSecret, "openid", "profile", "email"),
		newBenchFlow(b, s, "es256", authtest.ForumID, authtest.ForumSecret, "openid", "profile", "email"),
	}
	turn := 0
	for b.Loop() {
		for i := range flows {
			flows[(turn+i)%len(flows)].run(b)
		}
		turn++
	}
	base := flows[0]
	for _, f := range flows {
		n := float64(f.runs)
		b.ReportMetric(ms(f.flow)/n, f.name+"-flow-ms")
		b.ReportMetric(ms(f.exchange)/n, f.name+"-exchange-ms")
		b.ReportMetric(ms(f.cpu)/n, f.name+"-cpu-ms")
		if f != base {
			b.ReportMetric(float64(f.flow)/float64(base.flow), f.name+"/none-flow")
			b.ReportMetric(float64(f.exchange)/float64(base.exchange), f.name+"/none-exchange")
			b.ReportMetric(float64(f.cpu)/float64(base.cpu), f.name+"/none-cpu")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchFlow is one relying party's flow for a signed-in browser that has
// authorized the app: each code comes from one GET of the authorization
// endpoint, and the app redeems it with its secret and PKCE verifier.
type benchFlow struct {
	name, id, secret string
	openid           bool
	s                *authtest.Server
	browser          *http.Client
	app              *http.Client
	authURL          string
	verifier         string

	runs                int
	flow, exchange, cpu time.Duration
}

func newBenchFlow(b *testing.B, s *authtest.Server, name, id, secret string, scopes ...string) *benchFlow {
	cfg := oboConfig(s, id, secret, scopes...)
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	openid := scopes[0] == "openid"
	if openid {
		opts = append(opts, oauth2.SetAuthURLParam("nonce", "n-0S6_WzA2Mj"))
	}
	// Sign in and consent once, with the browser helpers of the tests.
	br := newBrowser(b)
	p := br.Get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	p = br.Login(s.URL, p, "", authtest.Alice.Username, authtest.Alice.Password)
	p = br.follow(s.URL, p)
	if p.Status == http.StatusOK && strings.Contains(p.Body, `value="authorize"`) {
		br.Decide(s.URL, p, "authorize")
	}
	return &benchFlow{name: name, id: id, secret: secret, openid: openid, s: s, browser: br.Client, app: &http.Client{},
		authURL: cfg.AuthCodeURL("st", opts...), verifier: verifier}
}

// run makes one flow, adding its times to f's.
func (f *benchFlow) run(b *testing.B) {
	cpu0, t0 := processCPU(b), time.Now()
	resp, err := f.browser.Get(f.authURL)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || u.Query().Get("code") == "" {
		b.Fatalf("no code: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	body := url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "redirect_uri": {authtest.RedirectURI},
		"code_verifier": {f.verifier}}.Encode()
	t1 := time.Now()
	req, _ := http.NewRequest(http.MethodPost, f.s.URL+"/api/oauth/token", strings.NewReader(body))
	req.Header.Set("Content-Type", form)
	req.SetBasicAuth(f.id, f.secret)
	resp, err = f.app.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t2, cpu2 := time.Now(), processCPU(b)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(got), `"id_token"`) != f.openid {
		b.Fatalf("%s: %d %s", f.name, resp.StatusCode, got)
	}
	f.runs++
	f.flow += t2.Sub(t0)
	f.exchange += t2.Sub(t1)
	f.cpu += cpu2 - cpu0
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
