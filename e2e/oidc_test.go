package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestOIDCRelyingPartyGoOIDC signs a user in through the gateway with a
// relying party no one here wrote: github.com/coreos/go-oidc/v3 with
// golang.org/x/oauth2, the person acting in headless Chromium. It verifies
// the ID token (signature from the JWKS, iss, aud, exp), the nonce and
// at_hash, and reads UserInfo.
func TestOIDCRelyingPartyGoOIDC(t *testing.T) {
	w := startGoOIDCWiki(t)
	s, gw, cb, ctx, bg := w.s, w.s.GatewayURL, w.cb, w.browser, context.Background()
	provider, cfg, verifier := w.provider, w.cfg, w.verifier
	pkce, nonce := oauth2.GenerateVerifier(), "e2e-nonce-"+oauth2.GenerateVerifier()[:16]

	var consentText string
	run(t, ctx,
		toConsent(cfg.AuthCodeURL("oidc-state", oauth2.S256ChallengeOption(pkce), oidc.Nonce(nonce)), authAlice, authAlicePass),
		chromedp.Text(`main`, &consentText, chromedp.ByQuery),
	)
	t.Run("the consent page says in words what signing in gives the app", func(t *testing.T) {
		for _, want := range []string{"Convention Wiki", "Sign you in to the app", "your name, username", "email address and whether it is verified",
			"phone number", "postal address"} {
			if !strings.Contains(consentText, want) {
				t.Errorf("consent page lacks %q:\n%s", want, consentText)
			}
		}
	})
	run(t, ctx, authorizeApp())
	q := cb.wait(t)
	if q.Get("state") != "oidc-state" || q.Get("iss") != gw || q.Get("code") == "" {
		t.Fatalf("callback %v", q)
	}
	tok, err := cfg.Exchange(bg, q.Get("code"), oauth2.VerifierOption(pkce))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(bg, raw)
	if err != nil {
		t.Fatalf("go-oidc refuses the ID token: %v", err)
	}
	t.Run("the ID token: RS256 as the app is registered; signature, issuer, audience, nonce, at_hash, subject", func(t *testing.T) {
		if idt.Issuer != gw || idt.Nonce != nonce || idt.Subject != "1001" {
			t.Fatalf("%+v", idt)
		}
		header, _, _ := strings.Cut(raw, ".")
		if h, err := base64.RawURLEncoding.DecodeString(header); err != nil || !strings.Contains(string(h), `"alg":"RS256"`) {
			t.Fatalf("header %s %v", h, err)
		}
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("oidcc-userinfo-get: go-oidc reads UserInfo through the gateway", func(t *testing.T) {
		info, err := provider.UserInfo(bg, oauth2.StaticTokenSource(tok))
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]any
		if err := info.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if info.Subject != idt.Subject || info.Email != "alice@example.org" || claims["preferred_username"] != "alice" || claims["address"] == nil {
			t.Fatalf("%+v %v", info, claims)
		}
		// updated_at: when alice's record last changed (the fixture's import), in seconds.
		if at, ok := claims["updated_at"].(float64); !ok || at < 1.7e9 || at > float64(time.Now().Unix()) {
			t.Fatalf("updated_at %v", claims["updated_at"])
		}
	})
	t.Run("oidcc-userinfo-post-header: POST with the bearer token in the header", func(t *testing.T) {
		r := mustSend(t, s, http.MethodPost, "/api/users/userinfo", tok.AccessToken, "")
		var m map[string]any
		if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil || m["sub"] != "1001" || m["email"] != "alice@example.org" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("UserInfo with a token of an app written for the real API: 403 insufficient_scope", func(t *testing.T) {
		oauthTok := userToken(t, gw, authApp(gw, authBadgeID, authBadgeSecret, "pii:basic"), authBob, authBobPass)
		r := mustSend(t, s, http.MethodGet, "/api/users/userinfo", oauthTok.AccessToken, "")
		if h := r.header.Get("WWW-Authenticate"); r.status != 403 || !strings.Contains(h, `error="insufficient_scope"`) {
			t.Fatalf("%d %q", r.status, h)
		}
	})
}

// goOIDCWiki is a running stack and go-oidc set up, by discovery through its
// gateway, as the demo wiki (app 520): the provider, the app's OAuth
// configuration asking every OpenID scope and its ID token verifier; with the
// apps' redirect URI listening and a Chromium for the person who signs in.
type goOIDCWiki struct {
	s        *stack.Stack
	cb       *authCallback
	browser  context.Context
	provider *oidc.Provider
	cfg      *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func startGoOIDCWiki(t *testing.T) goOIDCWiki {
	t.Helper()
	s := stack.Start(t, stack.Options{})
	cb := startAuthCallback(t)
	browser := chromium(t)
	provider, err := oidc.NewProvider(context.Background(), s.GatewayURL)
	if err != nil {
		t.Fatalf("discovery through the gateway: %v", err)
	}
	cfg := &oauth2.Config{ClientID: oidcWikiID, ClientSecret: oidcWikiSecret, RedirectURL: authRedirectURI, Endpoint: provider.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "profile", "email", "phone", "address"}}
	return goOIDCWiki{s: s, cb: cb, browser: browser, provider: provider, cfg: cfg, verifier: provider.Verifier(&oidc.Config{ClientID: oidcWikiID})}
}

// TestBasicOPThroughTheGateway runs each module of the OpenID Foundation's
// "Basic OP" plan that applies to what is built, through the gateway: the
// relying party is go-oidc with golang.org/x/oauth2, the person signs in and
// consents in headless Chromium, and the browser's session cookie is what
// carries prompt=none, max_age and id_token_hint.
func TestBasicOPThroughTheGateway(t *testing.T) {
	w := startGoOIDCWiki(t)
	s, gw, cb, ctx, bg := w.s, w.s.GatewayURL, w.cb, w.browser, context.Background()
	provider, wiki := w.provider, w.cfg
	rp := &basicOPRelyingParty{cb: cb, cfg: wiki, verifier: w.verifier, pkce: oauth2.GenerateVerifier()}

	t.Run("oidcc-server: discovery through the gateway names the gateway's endpoints and what Basic OP needs", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/.well-known/openid-configuration", "", "")
		var m map[string]any
		if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if m["issuer"] != gw {
			t.Errorf("issuer %v, want %s", m["issuer"], gw)
		}
		for _, f := range []string{"authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"} {
			if u, _ := m[f].(string); !strings.HasPrefix(u, gw+"/") {
				t.Errorf("%s %v is not at the gateway", f, m[f])
			}
		}
		for f, want := range map[string][]string{"response_types_supported": {"code"}, "subject_types_supported": {"public"},
			"id_token_signing_alg_values_supported": {"RS256", "ES256"}, "scopes_supported": {"openid", "profile", "email", "phone", "address"},
			"grant_types_supported": {"authorization_code", "refresh_token"}, "claims_supported": {"sub", "iss", "auth_time", "email"}} {
			for _, w := range want {
				if !slices.Contains(basicOPStrings(m[f]), w) {
					t.Errorf("%s %v lacks %q", f, m[f], w)
				}
			}
		}
	})

	// The person signs in and consents once; the nonce has characters a
	// sloppy server would re-encode.
	nonce := "n-0S6_WzA2Mj+/=" + oauth2.GenerateVerifier()[:8]
	run(t, ctx, toConsent(rp.authURL("first", oidc.Nonce(nonce)), authAlice, authAlicePass), authorizeApp())
	firstCode := rp.code(t, "first")
	first := rp.exchange(t, firstCode)

	t.Run("oidcc-id-token-signature: RS256 for the wiki, ES256 for the forum, verified against the JWKS fetched through the gateway", func(t *testing.T) {
		if alg := basicOPAlg(t, first.raw); alg != "RS256" {
			t.Errorf("the wiki's ID token is %s", alg)
		}
		forum := &oauth2.Config{ClientID: oidcForumID, ClientSecret: oidcForumSecret, RedirectURL: authRedirectURI, Endpoint: provider.Endpoint(),
			Scopes: []string{oidc.ScopeOpenID, "profile"}}
		forumRP := &basicOPRelyingParty{cb: cb, cfg: forum, verifier: provider.Verifier(&oidc.Config{ClientID: oidcForumID}), pkce: rp.pkce}
		run(t, ctx, chromedp.Navigate(forumRP.authURL("forum")), consentPage(), authorizeApp())
		got := forumRP.exchange(t, forumRP.code(t, "forum"))
		if alg := basicOPAlg(t, got.raw); alg != "ES256" || got.idt.Subject != "1001" {
			t.Errorf("the forum's ID token is %s for %s", alg, got.idt.Subject)
		}
		tampered := first.raw[:len(first.raw)-4] + "AAAA"
		if _, err := rp.verifier.Verify(bg, tampered); err == nil {
			t.Error("go-oidc accepted an ID token with a changed signature")
		}
	})
	t.Run("oidcc-id-token-claims: iss, sub, aud, exp, iat, auth_time, at_hash, sid", func(t *testing.T) {
		c := first.claims
		if c["iss"] != gw || c["sub"] != "1001" || first.idt.Audience[0] != oidcWikiID || len(first.idt.Audience) != 1 {
			t.Errorf("iss, sub or aud: %v", c)
		}
		now := float64(time.Now().Unix())
		exp, _ := c["exp"].(float64)
		iat, _ := c["iat"].(float64)
		authTime, _ := c["auth_time"].(float64)
		if exp <= now || iat > now+5 || iat < now-120 || authTime == 0 || authTime > iat {
			t.Errorf("exp %v, iat %v, auth_time %v at %v", exp, iat, authTime, now)
		}
		if sid, _ := c["sid"].(string); sid == "" {
			t.Errorf("no sid: %v", c)
		}
		if err := first.idt.VerifyAccessToken(first.tok.AccessToken); err != nil || c["at_hash"] == nil {
			t.Errorf("at_hash %v: %v", c["at_hash"], err)
		}
	})
	t.Run("oidcc-ensure-request-with-valid-nonce: the nonce comes back byte for byte", func(t *testing.T) {
		if first.idt.Nonce != nonce {
			t.Fatalf("nonce %q, sent %q", first.idt.Nonce, nonce)
		}
	})
	t.Run("oidcc-userinfo-get: go-oidc reads UserInfo by GET through the gateway", func(t *testing.T) {
		info, err := provider.UserInfo(bg, oauth2.StaticTokenSource(first.tok))
		if err != nil || info.Subject != "1001" || info.Email != "alice@example.org" {
			t.Fatalf("%+v %v", info, err)
		}
	})
	t.Run("oidcc-userinfo-post-header: POST with the bearer token in the header", func(t *testing.T) {
		if m := basicOPUserInfo(t, s, http.MethodPost, first.tok.AccessToken); m["sub"] != "1001" {
			t.Fatalf("%v", m)
		}
	})
	t.Run("oidcc-userinfo-post-body: a token in the body or the query is not read: 401 with a Bearer challenge", func(t *testing.T) {
		body := newFormRequest(gw, "/api/users/userinfo", "", "", url.Values{"access_token": {first.tok.AccessToken}})
		query, _ := http.NewRequest(http.MethodGet, gw+"/api/users/userinfo?access_token="+url.QueryEscape(first.tok.AccessToken), nil)
		for _, req := range []*http.Request{body, query} {
			r := mustDo(t, s.HTTPClient(), req)
			if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: %d %q %s", req.Method, r.status, r.header.Get("WWW-Authenticate"), r.body)
			}
		}
	})
	var refreshed *oauth2.Token // the refresh's answer, for oidcc-codereuse
	t.Run("oidcc-refresh-token: a refresh gives a new ID token of the same user, auth_time and sid", func(t *testing.T) {
		next, err := wiki.TokenSource(bg, &oauth2.Token{RefreshToken: first.tok.RefreshToken}).Token()
		if err != nil {
			t.Fatal(err)
		}
		refreshed = next
		got := rp.verify(t, next)
		if got.raw == first.raw || got.idt.Subject != first.idt.Subject || got.claims["auth_time"] != first.claims["auth_time"] ||
			got.claims["sid"] != first.claims["sid"] {
			t.Fatalf("refreshed %v, first %v", got.claims, first.claims)
		}
	})
	t.Run("oidcc-codereuse: a second exchange of the code is invalid_grant and revokes the tokens the code gave", func(t *testing.T) {
		_, err := wiki.Exchange(bg, firstCode, oauth2.VerifierOption(rp.pkce))
		if code := testkit.OAuthErrorCode(err); code != "invalid_grant" {
			t.Fatalf("second exchange: %v", err)
		}
		if refreshed == nil {
			t.Fatal("needs oidcc-refresh-token's refreshed tokens")
		}
		_, err = wiki.TokenSource(bg, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
		if code := testkit.OAuthErrorCode(err); code != "invalid_grant" {
			t.Errorf("the refresh token of the reused code's grant still works: %v", err)
		}
		// and its access token, once the validators have read the revocation
		// feed (polled every 2 s)
		waitForStatus(t, s, "/api/users/userinfo", refreshed.AccessToken, http.StatusUnauthorized, 15*time.Second)
	})
	t.Run("oidcc-prompt-none-not-logged-in: login_required at the redirect URI, no page", func(t *testing.T) {
		status, h, page := newAuthHTTPBrowser(t, gw).do(http.MethodGet, rp.authURL("none-out", oauth2.SetAuthURLParam("prompt", "none")), nil)
		u, err := url.Parse(h.Get("Location"))
		if status != http.StatusFound || err != nil || !strings.HasPrefix(h.Get("Location"), authRedirectURI+"?") {
			t.Fatalf("%d %v\n%s", status, h, page)
		}
		if q := u.Query(); q.Get("error") != "login_required" || q.Get("state") != "none-out" || q.Get("iss") != gw || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("oidcc-prompt-none-logged-in: the signed-in browser gets a code without a page", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(rp.authURL("none-in", oauth2.SetAuthURLParam("prompt", "none"))), backInTheApp())
		if got := rp.exchange(t, rp.code(t, "none-in")); got.idt.Subject != "1001" || got.claims["sid"] != first.claims["sid"] {
			t.Fatalf("%v", got.claims)
		}
	})
	t.Run("oidcc-max-age-10000: a fresh session gives a code without a page", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(rp.authURL("age-10000", oauth2.SetAuthURLParam("max_age", "10000"))), backInTheApp())
		if got := rp.exchange(t, rp.code(t, "age-10000")); got.claims["auth_time"] != first.claims["auth_time"] {
			t.Fatalf("auth_time %v, signed in at %v", got.claims["auth_time"], first.claims["auth_time"])
		}
	})
	t.Run("oidcc-max-age-1: after more than a second the login page again; auth_time moves to the new sign-in", func(t *testing.T) {
		time.Sleep(1100 * time.Millisecond) // the session must become older than max_age=1: real time has to pass
		run(t, ctx, chromedp.Navigate(rp.authURL("age-1", oauth2.SetAuthURLParam("max_age", "1"))), signIn(authAlice, authAlicePass), backInTheApp())
		got := rp.exchange(t, rp.code(t, "age-1"))
		before, _ := first.claims["auth_time"].(float64)
		if at, _ := got.claims["auth_time"].(float64); at <= before {
			t.Fatalf("auth_time %v, the first sign-in %v", at, before)
		}
	})
	t.Run("oidcc-prompt-login: the login page though signed in; then a new session", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(rp.authURL("before-login", oauth2.SetAuthURLParam("prompt", "none"))), backInTheApp())
		before := rp.exchange(t, rp.code(t, "before-login"))
		run(t, ctx, chromedp.Navigate(rp.authURL("login", oauth2.SetAuthURLParam("prompt", "login"))), signIn(authAlice, authAlicePass), backInTheApp())
		if got := rp.exchange(t, rp.code(t, "login")); got.idt.Subject != "1001" || got.claims["sid"] == before.claims["sid"] {
			t.Fatalf("sid %v, the session before %v", got.claims["sid"], before.claims["sid"])
		}
	})
	t.Run("oidcc-unsupported-request-object: request and request_uri are request_not_supported at the redirect URI", func(t *testing.T) {
		for _, p := range []string{"request", "request_uri"} {
			run(t, ctx, chromedp.Navigate(rp.authURL("object", oauth2.SetAuthURLParam(p, "eyJhbGciOiJub25lIn0.e30."))), backInTheApp())
			if q := cb.wait(t); q.Get("error") != "request_not_supported" || q.Get("code") != "" || q.Get("state") != "object" {
				t.Errorf("%s: %v", p, q)
			}
		}
	})
	t.Run("oidcc-id-token-hint: the signed-in user's ID token with prompt=none gives a code; another user's is login_required", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(rp.authURL("hint", oauth2.SetAuthURLParam("prompt", "none"), oauth2.SetAuthURLParam("id_token_hint", first.raw))), backInTheApp())
		if got := rp.exchange(t, rp.code(t, "hint")); got.idt.Subject != "1001" {
			t.Fatalf("%v", got.claims)
		}
		run(t, chromium(t), toConsent(rp.authURL("bob"), authBob, authBobPass), authorizeApp()) // in a browser of his own
		bob := rp.exchange(t, rp.code(t, "bob"))
		if bob.idt.Subject != "1002" {
			t.Fatalf("bob's ID token is for %s", bob.idt.Subject)
		}
		bobHint := bob.raw
		run(t, ctx, chromedp.Navigate(rp.authURL("bob-hint", oauth2.SetAuthURLParam("prompt", "none"), oauth2.SetAuthURLParam("id_token_hint", bobHint))), backInTheApp())
		if q := cb.wait(t); q.Get("error") != "login_required" || q.Get("code") != "" || q.Get("state") != "bob-hint" {
			t.Fatalf("bob's hint in alice's browser: %v", q)
		}
	})
	t.Run("oidcc-ensure-registered-redirect-uri: an unregistered redirect URI is an error page, never a redirect", func(t *testing.T) {
		bad := strings.Replace(rp.authURL("bad-uri"), url.QueryEscape(authRedirectURI), url.QueryEscape(authRedirectURI+"?x=1"), 1)
		status, h, page := newAuthHTTPBrowser(t, gw).do(http.MethodGet, bad, nil)
		if status < 400 || status >= 500 || h.Get("Location") != "" || !strings.Contains(page, "<html") {
			t.Errorf("without a session: %d %v\n%s", status, h, page)
		}
		var loc, text string
		run(t, ctx, chromedp.Navigate(bad), chromedp.WaitVisible(`h1`, chromedp.ByQuery), chromedp.Location(&loc), chromedp.Text(`body`, &text, chromedp.ByQuery))
		if !strings.HasPrefix(loc, gw+"/") || strings.TrimSpace(text) == "" {
			t.Errorf("the signed-in browser is at %s:\n%s", loc, text)
		}
		cb.none(t)
	})
	for _, sc := range []struct {
		module  string
		scopes  []string
		has     []string
		hasNone []string
	}{
		{"oidcc-scope-profile: profile gives the profile claims, not email, phone or address", []string{"profile"},
			[]string{"name", "given_name", "family_name", "preferred_username", "updated_at"}, []string{"email", "email_verified", "phone_number", "address"}},
		{"oidcc-scope-email: email gives email and email_verified, not the profile, phone or address", []string{"email"},
			[]string{"email", "email_verified"}, []string{"name", "preferred_username", "phone_number", "address"}},
		{"oidcc-scope-all: profile, email, phone and address give each their claims", []string{"profile", "email", "phone", "address"},
			[]string{"name", "preferred_username", "email", "email_verified", "phone_number", "phone_number_verified", "address"}, nil},
	} {
		t.Run(sc.module, func(t *testing.T) {
			state := "scope-" + strings.Join(sc.scopes, "-")
			scoped := *wiki
			scoped.Scopes = append([]string{oidc.ScopeOpenID}, sc.scopes...)
			srp := *rp
			srp.cfg = &scoped
			run(t, ctx, chromedp.Navigate(srp.authURL(state)), backInTheApp()) // alice consented to all of these at the first sign-in
			got := srp.exchange(t, srp.code(t, state))
			m := basicOPUserInfo(t, s, http.MethodGet, got.tok.AccessToken)
			if m["sub"] != "1001" {
				t.Errorf("sub %v", m["sub"])
			}
			for _, c := range sc.has {
				if m[c] == nil {
					t.Errorf("no %s: %v", c, m)
				}
			}
			for _, c := range sc.hasNone {
				if _, ok := m[c]; ok {
					t.Errorf("%s without its scope: %v", c, m)
				}
			}
		})
	}
}

// basicOPRelyingParty is an OpenID app of the demo fixture, with the PKCE
// verifier its authorization requests share.
type basicOPRelyingParty struct {
	cb       *authCallback
	cfg      *oauth2.Config
	verifier *oidc.IDTokenVerifier
	pkce     string
}

// basicOPTokens is a token response and its verified ID token.
type basicOPTokens struct {
	tok    *oauth2.Token
	raw    string
	idt    *oidc.IDToken
	claims map[string]any
}

func (rp *basicOPRelyingParty) authURL(state string, opts ...oauth2.AuthCodeOption) string {
	return rp.cfg.AuthCodeURL(state, append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(rp.pkce)}, opts...)...)
}

// code is the code the redirect URI receives next, with state.
func (rp *basicOPRelyingParty) code(t *testing.T, state string) string {
	t.Helper()
	q := rp.cb.wait(t)
	if q.Get("state") != state || q.Get("code") == "" || q.Get("error") != "" {
		t.Fatalf("callback %v, want a code with state %s", q, state)
	}
	return q.Get("code")
}

// exchange redeems code and verifies the ID token.
func (rp *basicOPRelyingParty) exchange(t *testing.T, code string) basicOPTokens {
	t.Helper()
	tok, err := rp.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(rp.pkce))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return rp.verify(t, tok)
}

// verify checks tok's ID token with go-oidc (signature from the JWKS, iss, aud, exp).
func (rp *basicOPRelyingParty) verify(t *testing.T, tok *oauth2.Token) basicOPTokens {
	t.Helper()
	raw, _ := tok.Extra("id_token").(string)
	idt, err := rp.verifier.Verify(context.Background(), raw)
	if err != nil {
		t.Fatalf("go-oidc refuses the ID token: %v", err)
	}
	out := basicOPTokens{tok: tok, raw: raw, idt: idt}
	if err := idt.Claims(&out.claims); err != nil {
		t.Fatal(err)
	}
	return out
}

// basicOPAlg is the alg of a JWS's header.
func basicOPAlg(t *testing.T, raw string) string {
	t.Helper()
	header, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(header)
	var h struct {
		Alg string `json:"alg"`
	}
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("header of %q: %v", raw, err)
	}
	return h.Alg
}

// basicOPUserInfo reads UserInfo through the gateway with the token in the header.
func basicOPUserInfo(t *testing.T, s *stack.Stack, method, token string) map[string]any {
	t.Helper()
	r := mustSend(t, s, method, "/api/users/userinfo", token, "")
	var m map[string]any
	if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil {
		t.Fatalf("UserInfo by %s: %d %s", method, r.status, r.body)
	}
	return m
}

// basicOPStrings is a JSON array of strings.
func basicOPStrings(v any) []string {
	var out []string
	a, _ := v.([]any)
	for _, e := range a {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
