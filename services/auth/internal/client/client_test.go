package client

import (
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

func TestValidateRedirectURI(t *testing.T) {
	ok := []string{"https://app.example/cb", "http://127.0.0.1:9999/callback", "http://localhost:9999/staff/callback", "http://[::1]:8080/cb", "https://app.example/cb?tenant=1"}
	bad := []string{"http://app.example/cb", "ftp://app.example/cb", "/relative", "https://app.example/cb#frag", "https://user:pw@app.example/cb", "javascript:alert(1)", ""}
	t.Run("https anywhere and http on loopback are accepted", func(t *testing.T) {
		for _, u := range ok {
			if err := ValidateRedirectURI(u); err != nil {
				t.Errorf("%s: %v", u, err)
			}
		}
	})
	t.Run("http off loopback, fragments, credentials and non-URLs are refused", func(t *testing.T) {
		for _, u := range bad {
			if ValidateRedirectURI(u) == nil {
				t.Errorf("%s accepted", u)
			}
		}
	})
}

func TestRedirectURIMatchIsExact(t *testing.T) {
	c := Client{RedirectURIs: []string{"http://127.0.0.1:9999/callback"}}
	matchesRedirectURIs(t, c, []string{"http://127.0.0.1:9999/callback"},
		[]string{"http://127.0.0.1:9999/callback/", "HTTP://127.0.0.1:9999/callback", "http://127.0.0.1:9999/callback?x", "http://127.0.0.1:9999/Callback"})
}

// matchesRedirectURIs fails t unless c has each of matched and none of
// unmatched as a redirect URI.
func matchesRedirectURIs(t *testing.T, c Client, matched, unmatched []string) {
	t.Helper()
	for _, u := range matched {
		if !c.HasRedirectURI(u) {
			t.Errorf("%s not matched", u)
		}
	}
	for _, u := range unmatched {
		if c.HasRedirectURI(u) {
			t.Errorf("%s matched", u)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Client{Name: "x", Kind: KindService, Scopes: scope.Parse("user:read")}
	if err := Validate(good); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Client{
		"service with OBO scope": {Name: "x", Kind: KindService, Scopes: scope.Parse("pii:basic")},
		"service with redirect":  {Name: "x", Kind: KindService, Scopes: scope.Parse("user:read"), RedirectURIs: []string{"https://a.example/cb"}},
		"obo without redirect":   {Name: "x", Kind: KindOBO, Scopes: scope.Parse("pii:basic")},
		"no name":                {Kind: KindService, Scopes: scope.Parse("user:read")},
		"no scopes":              {Name: "x", Kind: KindService},
		"unknown scope":          {Name: "x", Kind: KindService, Scopes: scope.Parse("user:write")},
		"unknown kind":           {Name: "x", Kind: "robot", Scopes: scope.Parse("user:read")},
		"ID tokens signed HS256": {Name: "x", Kind: KindOBO, Scopes: scope.Parse("openid"), RedirectURIs: []string{"https://a.example/cb"}, IDTokenAlg: "HS256"},
		"ID tokens unsigned":     {Name: "x", Kind: KindOBO, Scopes: scope.Parse("openid"), RedirectURIs: []string{"https://a.example/cb"}, IDTokenAlg: "none"},
	} {
		if Validate(c) == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestParseID(t *testing.T) {
	if id, ok := ParseID("0501"); !ok || id != 501 {
		t.Errorf(`"0501": %d, %v; want 501, true`, id, ok)
	}
	for raw, want := range map[string]bool{"501": true, "0": false, "-1": false, "+1": false, "abc": false, "": false, "99999999999999999999": false} {
		if _, ok := ParseID(raw); ok != want {
			t.Errorf("%q: %v", raw, ok)
		}
	}
}

func TestLoopbackRedirectURIMatchesAnyPort(t *testing.T) {
	// A native app: every redirect URI is on loopback.
	c := Client{Kind: KindOBO, RedirectURIs: []string{"http://127.0.0.1/callback", "http://[::1]:8080/cb?app=1", "http://localhost:9999/staff/callback"}}
	t.Run("an IP-literal loopback URI matches with any port or none", func(t *testing.T) {
		matchesRedirectURIs(t, c, []string{"http://127.0.0.1/callback", "http://127.0.0.1:51234/callback", "http://127.0.0.1:1/callback", "http://127.0.0.1:65535/callback",
			"http://[::1]:8080/cb?app=1", "http://[::1]:49152/cb?app=1", "http://[::1]/cb?app=1"}, nil)
	})
	t.Run("everything but the port still matches byte for byte", func(t *testing.T) {
		matchesRedirectURIs(t, c, nil, []string{
			"http://127.0.0.1:51234/callback/", "http://127.0.0.1:51234/Callback", "http://127.0.0.1:51234/callback?x=1", "HTTP://127.0.0.1:51234/callback",
			"https://127.0.0.1:51234/callback", "http://127.0.0.2:51234/callback", "http://[::1]:49152/cb", "http://[::1]:49152/cb?app=2",
			"http://127.0.0.1:51234@evil.example/callback", "http://127.0.0.1:abc/callback", "http://127.0.0.1:/callback", "http://127.0.0.1:99999/callback",
			"http://127.0.0.1:051234/callback", "http://127.0.0.1.evil.example/callback", "http://[::1]:8080/cb?app=1#f",
		})
	})
	t.Run("localhost is a name, not an IP literal: exact match only", func(t *testing.T) {
		matchesRedirectURIs(t, c, []string{"http://localhost:9999/staff/callback"}, []string{"http://localhost:9998/staff/callback", "http://localhost/staff/callback"})
	})
	// A web client: it registers a redirect URI on the web (https).
	web := Client{Kind: KindOBO, RedirectURIs: []string{"http://127.0.0.1:9999/callback", "https://app.example:8443/cb"}}
	t.Run("https URIs keep their exact port", func(t *testing.T) {
		matchesRedirectURIs(t, web, []string{"https://app.example:8443/cb"}, []string{"https://app.example:9443/cb", "https://app.example/cb"})
	})
	t.Run("a web client's loopback URI matches only on its own port", func(t *testing.T) {
		// any port is for native apps only (RFC 8252 §7.3)
		matchesRedirectURIs(t, web, []string{"http://127.0.0.1:9999/callback"}, []string{"http://127.0.0.1:51234/callback", "http://127.0.0.1/callback"})
	})
	t.Run("a client is a native app when every redirect URI it registers is on loopback", func(t *testing.T) {
		for _, tc := range []struct {
			c    Client
			want bool
		}{
			{c, true},
			{web, false},
			{Client{Kind: KindOBO, RedirectURIs: []string{"https://app.example/cb"}}, false},
			{Client{Kind: KindService}, false},
		} {
			if got := tc.c.Native(); got != tc.want {
				t.Errorf("%v: Native() = %v, want %v", tc.c.RedirectURIs, got, tc.want)
			}
		}
	})
}
