package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// The OpenID Connect tests are named after the modules of the OpenID
// Foundation's Basic OP certification plan they stand for (docs/security.md
// lists them). Relying party: github.com/coreos/go-oidc/v3 with
// golang.org/x/oauth2, written by others.

// rp is a relying party of s: go-oidc's provider (from discovery) and
// verifier, and x/oauth2 for the code flow.
type rp struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	cfg      *oauth2.Config
}

func newRP(t *testing.T, s *authtest.Server, id, secret string, scopes ...string) rp {
	t.Helper()
	provider, err := oidc.NewProvider(bg(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oboConfig(s, id, secret, scopes...)
	cfg.Endpoint = provider.Endpoint()
	cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	return rp{provider: provider, verifier: provider.Verifier(&oidc.Config{ClientID: id}), cfg: cfg}
}

// signIn runs the code flow with PKCE and nonce for user and returns the
// token response and the verified ID token.
func (r rp) signIn(t *testing.T, s *authtest.Server, b *browser, user authtest.User, nonce string) (*oauth2.Token, *oidc.IDToken) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	code := authorize(t, s, b, r.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), user)
	tok := mustExchange(t, r.cfg, code, verifier)
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatalf("no id_token in %+v", tok)
	}
	idt, err := r.verifier.Verify(bg(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return tok, idt
}

func headerAlg(t *testing.T, raw string) string {
	t.Helper()
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	return jws.Signatures[0].Header.Algorithm
}

func TestOIDCC_ServerMetadata(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	doc := func(t *testing.T, path string) map[string]any {
		t.Helper()
		resp, body := getValidated(t, s.URL+path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return decode(t, body)
	}
	oidcDoc := doc(t, "/.well-known/openid-configuration")
	t.Run("oidcc-server: every field Discovery 1.0 requires, as supported", func(t *testing.T) {
		strs := func(k string) []string {
			var out []string
			for _, v := range oidcDoc[k].([]any) {
				out = append(out, v.(string))
			}
			return out
		}
		if oidcDoc["issuer"] != s.URL || oidcDoc["authorization_endpoint"] != s.URL+"/oauth/authorize" || oidcDoc["userinfo_endpoint"] != s.URL+"/api/users/userinfo" ||
			oidcDoc["token_endpoint"] != s.URL+"/api/oauth/token" || oidcDoc["jwks_uri"] != s.URL+"/.well-known/jwks.json" {
			t.Fatalf("%v", oidcDoc)
		}
		if !slices.Equal(strs("response_types_supported"), []string{"code"}) || !slices.Equal(strs("subject_types_supported"), []string{"public"}) ||
			!slices.Equal(strs("id_token_signing_alg_values_supported"), []string{"RS256", "ES256"}) {
			t.Fatalf("%v", oidcDoc)
		}
		for _, sc := range []string{"openid", "profile", "email", "phone", "address"} {
			if !slices.Contains(strs("scopes_supported"), sc) {
				t.Errorf("scopes_supported lacks %s", sc)
			}
		}
		for _, c := range []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "sid", "name", "updated_at", "email", "email_verified", "phone_number", "phone_number_verified", "address"} {
			if !slices.Contains(strs("claims_supported"), c) {
				t.Errorf("claims_supported lacks %s", c)
			}
		}
		if !slices.Equal(strs("code_challenge_methods_supported"), []string{"S256"}) || oidcDoc["authorization_response_iss_parameter_supported"] != true ||
			oidcDoc["request_uri_parameter_supported"] != false || oidcDoc["request_parameter_supported"] != false || oidcDoc["claims_parameter_supported"] != false {
			t.Fatalf("%v", oidcDoc)
		}
	})
	t.Run("the RFC 8414 document says the same", func(t *testing.T) {
		if m := doc(t, "/.well-known/oauth-authorization-server"); !jsonEqual(m, oidcDoc) {
			t.Fatalf("RFC 8414 %v\nOpenID %v", m, oidcDoc)
		}
	})
	t.Run("go-oidc discovers the provider", func(t *testing.T) {
		p, err := oidc.NewProvider(bg(), s.URL)
		if err != nil || p.Endpoint().TokenURL != s.URL+"/api/oauth/token" {
			t.Fatalf("%v", err)
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestOIDCC_IDToken(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := newRP(t, s, authtest.WikiID, authtest.WikiSecret, "openid", "profile", "email")
	b := newBrowser(t)
	before := time.Now().Add(-time.Second)
	nonce := "n-0S6_WzA2Mj+/ünï" // echoed byte for byte
	tok, idt := wiki.signIn(t, s, b, authtest.Alice, nonce)
	raw := tok.Extra("id_token").(string)
	claims := claimsOf(t, raw)

	t.Run("oidcc-id-token-signature: RS256 for an app registered for it, verified by go-oidc against the JWKS", func(t *testing.T) {
		if alg := headerAlg(t, raw); alg != "RS256" {
			t.Fatalf("alg %s", alg)
		}
	})
	t.Run("oidcc-id-token-claims: iss, sub as today's, aud, exp, iat, auth_time, sid; no azp for one audience", func(t *testing.T) {
		if idt.Issuer != s.URL || idt.Subject != "1001" || !slices.Equal(idt.Audience, []string{authtest.WikiID}) {
			t.Fatalf("%+v", idt)
		}
		iat, exp, authTime := claims["iat"].(float64), claims["exp"].(float64), claims["auth_time"].(float64)
		if exp-iat != 3600 || authTime > iat || time.Unix(int64(authTime), 0).Before(before.Truncate(time.Second)) {
			t.Fatalf("%v", claims)
		}
		if claims["sid"] == nil || claims["sid"] == "" || claims["azp"] != nil {
			t.Fatalf("%v", claims)
		}
	})
	t.Run("oidcc-ensure-request-with-valid-nonce: echoed exactly", func(t *testing.T) {
		if idt.Nonce != nonce {
			t.Fatalf("nonce %q", idt.Nonce)
		}
	})
	t.Run("at_hash binds the access token", func(t *testing.T) {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil || idt.AccessTokenHash == "" {
			t.Fatalf("%v", err)
		}
		if err := idt.VerifyAccessToken(tok.AccessToken + "x"); err == nil {
			t.Fatal("at_hash matches another access token")
		}
	})
	t.Run("an ID token is not an access token", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/introspect", strings.NewReader("token="+raw))
		req.Header.Set("Content-Type", form)
		req.SetBasicAuth(authtest.WikiID, authtest.WikiSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if m := decode(t, readAll(t, resp)); m["active"] != false {
			t.Fatalf("%v", m)
		}
	})
	t.Run("oidcc-refresh-token: a new ID token of the same user, auth_time and sid, without nonce", func(t *testing.T) {
		next, err := wiki.cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if err != nil {
			t.Fatal(err)
		}
		raw2, _ := next.Extra("id_token").(string)
		idt2, err := wiki.verifier.Verify(bg(), raw2)
		if err != nil {
			t.Fatal(err)
		}
		c2 := claimsOf(t, raw2)
		if idt2.Subject != idt.Subject || c2["auth_time"] != claims["auth_time"] || c2["sid"] != claims["sid"] || c2["nonce"] != nil {
			t.Fatalf("%v\nfirst %v", c2, claims)
		}
		if err := idt2.VerifyAccessToken(next.AccessToken); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("oidcc-codereuse: a code works once", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, b, wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), authtest.Alice)
		if _, err := exchange(t, wiki.cfg, code, verifier); err != nil {
			t.Fatal(err)
		}
		if _, err := exchange(t, wiki.cfg, code, verifier); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("second redemption: %v", err)
		}
	})
	t.Run("without a nonce the ID token has none", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, b, wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), authtest.Alice)
		tok := mustExchange(t, wiki.cfg, code, verifier)
		if c := claimsOf(t, tok.Extra("id_token").(string)); c["nonce"] != nil {
			t.Fatalf("%v", c)
		}
	})
	t.Run("a nonce over 512 characters is invalid_request, back at the app", func(t *testing.T) {
		p := b.Get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oidc.Nonce(strings.Repeat("n", 513))))
		if q := callback(t, p); q.Get("error") != "invalid_request" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("request and request_uri are request_not_supported; a response_mode other than query or form_post is invalid_request", func(t *testing.T) {
		for param, want := range map[string]string{"request=eyJhbGciOiJub25lIn0.e30.": "request_not_supported",
			"request_uri=https%3A%2F%2Fapp.example%2Freq": "request_not_supported", "response_mode=fragment": "invalid_request",
			"response_mode=web_message": "invalid_request", "response_mode=query&response_mode=form_post": "invalid_request"} {
			p := b.Get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) + "&" + param)
			if q := callback(t, p); q.Get("error") != want || q.Get("state") != "st" || q.Get("iss") != s.URL || q.Get("code") != "" {
				t.Errorf("%s: %v", param, q)
			}
		}
		p := b.Get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) + "&response_mode=query")
		if q := callback(t, p); q.Get("code") == "" {
			t.Fatalf("response_mode=query: %v", q)
		}
	})
	t.Run("an app registered for ES256 gets ES256 ID tokens, verified by go-oidc", func(t *testing.T) {
		forum := newRP(t, s, authtest.ForumID, authtest.ForumSecret, "openid", "email")
		tok, _ := forum.signIn(t, s, b, authtest.Alice, "forum-nonce")
		if alg := headerAlg(t, tok.Extra("id_token").(string)); alg != "ES256" {
			t.Fatalf("alg %s", alg)
		}
	})
}

func TestWithoutOpenIDNothingChanges(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	b := newBrowser(t)
	for name, cfg := range map[string]*oauth2.Config{
		"an app written for the real API":        oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic", "pii:email"),
		"an OpenID app that does not ask openid": oboConfig(s, authtest.WikiID, authtest.WikiSecret, "profile", "email"),
	} {
		t.Run(name+": no id_token", func(t *testing.T) {
			verifier := oauth2.GenerateVerifier()
			code := authorize(t, s, b, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oidc.Nonce("ignored")), authtest.Alice)
			tok := mustExchange(t, cfg, code, verifier)
			if tok.Extra("id_token") != nil {
				t.Fatalf("id_token %v", tok.Extra("id_token"))
			}
			next, err := cfg.TokenSource(bg(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if err != nil || next.Extra("id_token") != nil {
				t.Fatalf("%v %v", err, next.Extra("id_token"))
			}
		})
	}
}

// TestOIDCC_AuthenticationRequest covers prompt, max_age, id_token_hint,
// login_hint and ui_locales (Core §3.1.2.1), as the Basic OP plan's
// oidcc-prompt-*, oidcc-max-age-* and oidcc-id-token-hint modules do.
func TestOIDCC_AuthenticationRequest(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := newRP(t, s, authtest.WikiID, authtest.WikiSecret, "openid", "profile")
	var verifier string // of the last authURL
	authURL := func(extra url.Values) string {
		verifier = oauth2.GenerateVerifier()
		u := wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier))
		if len(extra) > 0 {
			u += "&" + extra.Encode()
		}
		return u
	}
	isLoginPage := func(p page) bool { return p.Status == http.StatusOK && strings.Contains(p.Body, `name="password"`) }

	t.Run("oidcc-prompt-none-not-logged-in: login_required at the app, no page", func(t *testing.T) {
		q := callback(t, newBrowser(t).Get(authURL(url.Values{"prompt": {"none"}})))
		if q.Get("error") != "login_required" || q.Get("state") != "st" || q.Get("iss") != s.URL || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})

	b := newBrowser(t)
	_, first := wiki.signIn(t, s, b, authtest.Alice, "n1")
	var firstClaims map[string]any
	_ = first.Claims(&firstClaims)

	t.Run("oidcc-prompt-none-logged-in: a code without a page", func(t *testing.T) {
		if q := callback(t, b.Get(authURL(url.Values{"prompt": {"none"}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("prompt=none for an app not yet authorized: consent_required", func(t *testing.T) {
		forum := newRP(t, s, authtest.ForumID, authtest.ForumSecret, "openid")
		q := callback(t, b.Get(forum.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none"))))
		if q.Get("error") != "consent_required" || q.Get("code") != "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("prompt=consent shows the consent page though consent was given", func(t *testing.T) {
		if p := b.Get(authURL(url.Values{"prompt": {"consent"}})); p.Status != 200 || !strings.Contains(p.Body, `value="authorize"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("oidcc-id-token-hint: the signed-in user's ID token as hint with prompt=none gives a code", func(t *testing.T) {
		hint := firstRaw(t, wiki, s, b)
		if q := callback(t, b.Get(authURL(url.Values{"prompt": {"none"}, "id_token_hint": {hint}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
		t.Run("another user's hint with prompt=none is login_required", func(t *testing.T) {
			bob := newBrowser(t)
			tok, _ := wiki.signIn(t, s, bob, authtest.Bob, "nb")
			q := callback(t, b.Get(authURL(url.Values{"prompt": {"none"}, "id_token_hint": {tok.Extra("id_token").(string)}})))
			if q.Get("error") != "login_required" {
				t.Fatalf("%v", q)
			}
		})
		t.Run("a hint this server did not sign is invalid_request", func(t *testing.T) {
			if q := callback(t, b.Get(authURL(url.Values{"id_token_hint": {hint[:len(hint)-4] + "AAAA"}}))); q.Get("error") != "invalid_request" {
				t.Fatalf("%v", q)
			}
		})
	})
	t.Run("oidcc-prompt-login: the login page though signed in; then a new session", func(t *testing.T) {
		p := b.Get(authURL(url.Values{"prompt": {"login"}}))
		if !isLoginPage(p) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		p = b.Login(s.URL, p, "", authtest.Alice.Username, authtest.Alice.Password)
		q := callback(t, b.follow(s.URL, p))
		tok := mustExchange(t, wiki.cfg, q.Get("code"), verifier)
		if c := claimsOf(t, tok.Extra("id_token").(string)); c["sid"] == firstClaims["sid"] {
			t.Fatalf("the same session after prompt=login: %v", c)
		}
	})
	t.Run("oidcc-max-age-1: a session older than max_age signs in again; auth_time is the new sign-in", func(t *testing.T) {
		time.Sleep(1100 * time.Millisecond) // the session must become older than max_age=1: real time has to pass
		p := b.Get(authURL(url.Values{"max_age": {"1"}}))
		if !isLoginPage(p) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		before := time.Now().Unix()
		p = b.Login(s.URL, p, "", authtest.Alice.Username, authtest.Alice.Password)
		q := callback(t, b.follow(s.URL, p))
		tok := mustExchange(t, wiki.cfg, q.Get("code"), verifier)
		if at := claimsOf(t, tok.Extra("id_token").(string))["auth_time"].(float64); int64(at) < before-1 {
			t.Fatalf("auth_time %v before the sign-in at %d", at, before)
		}
	})
	t.Run("oidcc-max-age-10000: a fresh session needs no sign-in", func(t *testing.T) {
		if q := callback(t, b.Get(authURL(url.Values{"max_age": {"10000"}}))); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
	})
	t.Run("login_hint fills the username; ui_locales is ignored", func(t *testing.T) {
		p := newBrowser(t).Get(authURL(url.Values{"login_hint": {"alice@example.org"}, "ui_locales": {"fr-CA fr"}}))
		if !isLoginPage(p) || !strings.Contains(p.Body, `value="alice@example.org"`) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("malformed prompt or max_age is invalid_request at the app", func(t *testing.T) {
		for _, extra := range []url.Values{{"prompt": {"none login"}}, {"prompt": {"sometimes"}}, {"max_age": {"-1"}}, {"max_age": {"soon"}}} {
			if q := callback(t, b.Get(authURL(extra))); q.Get("error") != "invalid_request" || q.Get("code") != "" {
				t.Errorf("%v: %v", extra, q)
			}
		}
	})
}

// firstRaw signs in again silently and returns the ID token (a hint).
func firstRaw(t *testing.T, r rp, s *authtest.Server, b *browser) string {
	t.Helper()
	tok, _ := r.signIn(t, s, b, authtest.Alice, "hint")
	return tok.Extra("id_token").(string)
}

// TestOIDCC_PromptNoneNeedsInteraction: prompt=none answers
// interaction_required when the page it may not show would do more than ask
// consent (OpenID Connect Core §3.1.2.6; decision 0108).
func TestOIDCC_PromptNoneNeedsInteraction(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "user:read")
	b := newBrowser(t)
	consentPage := b.follow(s.URL, b.Login(s.URL, b.Get(staff.AuthCodeURL("st")), "", authtest.Bob.Username, authtest.Bob.Password))
	silent := staff.AuthCodeURL("st", oauth2.SetAuthURLParam("prompt", "none"))

	t.Run("a user lacking a sensitive scope asked, the app not yet authorized: interaction_required, not consent_required", func(t *testing.T) {
		q := callback(t, b.Get(silent))
		if q.Get("error") != "interaction_required" || q.Get("code") != "" || q.Get("state") != "st" || q.Get("iss") != s.URL {
			t.Fatalf("%v", q)
		}
	})
	t.Run("once the user granted the rest, the same request gets a code without a page, for the rest", func(t *testing.T) {
		if q := callback(t, b.Decide(s.URL, consentPage, "authorize")); q.Get("code") == "" {
			t.Fatalf("%v", q)
		}
		q := callback(t, b.Get(silent))
		if tok := mustExchange(t, staff, q.Get("code"), ""); tok.Extra("scope") != "pii:basic" {
			t.Fatalf("%v %+v", q, tok)
		}
	})
}
