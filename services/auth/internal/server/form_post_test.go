package server_test

import (
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

var (
	formPostRe = regexp.MustCompile(`<form method="post" action="([^"]+)" id="response">`)
	hiddenRe   = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	nonceRe    = regexp.MustCompile(`<script nonce="([^"]+)">`)
)

// formPost is a form_post response page, read as a browser would post it.
type formPost struct {
	action, nonce string
	fields        map[string]string
}

// readFormPost checks p is a form_post response page and reads it.
func readFormPost(t *testing.T, p page) formPost {
	t.Helper()
	if p.Status != http.StatusOK || p.Header.Get("Location") != "" {
		t.Fatalf("want the form_post page, got %d (Location %q):\n%s", p.Status, p.Header.Get("Location"), p.Body)
	}
	f := formPost{action: testkit.PageField(t, formPostRe, p.Body), nonce: testkit.PageField(t, nonceRe, p.Body), fields: map[string]string{}}
	for _, m := range hiddenRe.FindAllStringSubmatch(p.Body, -1) {
		f.fields[m[1]] = html.UnescapeString(m[2])
	}
	return f
}

// TestOIDCC_FormPostResponseMode covers OAuth 2.0 Form Post Response Mode:
// response_mode=form_post answers with a page whose form the browser posts
// to the redirect URI at once, code or error alike.
func TestOIDCC_FormPostResponseMode(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := oboConfig(s, authtest.WikiID, authtest.WikiSecret, "openid", "profile")
	formPostMode := oauth2.SetAuthURLParam("response_mode", "form_post")
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	const state = `st"><script>alert(1)</script>`
	p := b.Get(wiki.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), formPostMode))
	p = b.follow(s.URL, b.Login(s.URL, p, "", authtest.Alice.Username, authtest.Alice.Password))
	consented := b.Decide(s.URL, p, "authorize")

	t.Run("a code comes back in a form posted to the redirect URI, with state and iss", func(t *testing.T) {
		f := readFormPost(t, consented)
		if f.action != authtest.RedirectURI || f.fields["state"] != state || f.fields["iss"] != s.URL || f.fields["code"] == "" || len(f.fields) != 3 {
			t.Fatalf("%+v", f)
		}
		if strings.Contains(consented.Body, `<script>alert(1)`) {
			t.Fatal("the state is not escaped")
		}
		if _, err := exchange(t, wiki, f.fields["code"], verifier); err != nil {
			t.Fatalf("exchanging the posted code: %v", err)
		}
	})
	t.Run("only the page's own script may run: its nonce, new on every answer", func(t *testing.T) {
		first := readFormPost(t, consented)
		csp := consented.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'nonce-"+first.nonce+"'") || strings.Contains(csp, "unsafe-inline") ||
			!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("CSP %q", csp)
		}
		if consented.Header.Get("Cache-Control") != "no-store" || consented.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%v", consented.Header)
		}
		again := b.Get(wiki.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), formPostMode))
		if second := readFormPost(t, again); second.nonce == first.nonce || second.fields["code"] == "" {
			t.Fatalf("nonces %q %q, fields %v", first.nonce, second.nonce, second.fields)
		}
	})
	t.Run("without scripts the user posts the form with a button", func(t *testing.T) {
		if !strings.Contains(consented.Body, `<noscript>`) || !strings.Contains(consented.Body, `<button type="submit"`) {
			t.Fatalf("%s", consented.Body)
		}
	})
	t.Run("a denial comes back the same way", func(t *testing.T) {
		b := newBrowser(t)
		p := b.Get(wiki.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), formPostMode))
		p = b.follow(s.URL, b.Login(s.URL, p, "", authtest.Bob.Username, authtest.Bob.Password))
		f := readFormPost(t, b.Decide(s.URL, p, "deny"))
		if f.action != authtest.RedirectURI || f.fields["error"] != "access_denied" || f.fields["state"] != "st" || f.fields["iss"] != s.URL || f.fields["code"] != "" {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("prompt=none without a session: login_required in the form", func(t *testing.T) {
		p := newBrowser(t).Get(wiki.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), formPostMode, oauth2.SetAuthURLParam("prompt", "none")))
		if f := readFormPost(t, p); f.fields["error"] != "login_required" || f.fields["state"] != "st" || f.fields["code"] != "" {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("a request whose redirect URI is not trusted is the error page, never a form to it", func(t *testing.T) {
		u := strings.Replace(wiki.AuthCodeURL("st", formPostMode), "callback", "elsewhere", 1)
		p := newBrowser(t).Get(u)
		if p.Status != http.StatusBadRequest || strings.Contains(p.Body, `id="response"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("discovery advertises query and form_post", func(t *testing.T) {
		resp, err := http.Get(s.URL + "/.well-known/openid-configuration")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var modes []string
		for _, m := range decode(t, readAll(t, resp))["response_modes_supported"].([]any) {
			modes = append(modes, m.(string))
		}
		if !slices.Equal(modes, []string{"query", "form_post"}) {
			t.Fatalf("%v", modes)
		}
	})
}
