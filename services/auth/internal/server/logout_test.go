package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// TestLogoutAsAppsCallIt: GET /oauth/logout?client_id=&access_token=&next=,
// the access token a hint of the session to end, as apps written for the
// real API call it. The hint is checked and names the app; it never ends a
// session by itself nor changes the page with whose token it is.
func TestLogoutAsAppsCallIt(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	issue := func(t *testing.T, iss string, ttl time.Duration, user int64, app string) string {
		t.Helper()
		id := map[string]int64{authtest.BadgeID: 502, authtest.ServiceID: 501}[app]
		tok, err := accesstoken.NewIssuer(s.App.Keys, iss, "eventreg-api", ttl).Issue(accesstoken.UserSubject(user), id, scope.Set{"pii:basic"}, "sid-1")
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	alices := issue(t, s.URL, time.Hour, authtest.Alice.ID, authtest.BadgeID)
	logoutURL := func(q url.Values) string { return s.URL + "/oauth/logout?" + q.Encode() }
	withHint := func(tok string, extra ...string) url.Values {
		q := url.Values{"access_token": {tok}, "next": {authtest.RedirectURI}}
		for i := 0; i+1 < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		return q
	}
	// page is the confirmation page with its CSRF token blanked, to compare.
	page := func(body string) string {
		return testkit.CSRFField.ReplaceAllString(body, `name="csrf_token" value=""`)
	}

	t.Run("the user's own token: the confirmation page, then back to next", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(logoutURL(withHint(alices, "client_id", authtest.BadgeID)))
		if p.Status != http.StatusOK || testkit.PageField(t, nextAnyRe, p.Body) != authtest.RedirectURI || testkit.PageField(t, clientIDRe, p.Body) != authtest.BadgeID {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		if strings.Contains(p.Body, alices) {
			t.Fatal("the page carries the access token")
		}
		if !signedInStill(t, s, b) {
			t.Fatal("the GET ended the session")
		}
		p = b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "next": {testkit.PageField(t, nextAnyRe, p.Body)},
			"client_id": {testkit.PageField(t, clientIDRe, p.Body)}})

		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != authtest.RedirectURI || signedInStill(t, s, b) {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("without client_id, the token's app is the one next must belong to", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(logoutURL(withHint(alices)))
		if p.Status != http.StatusOK || testkit.PageField(t, clientIDRe, p.Body) != authtest.BadgeID {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		p = b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "next": {testkit.PageField(t, nextAnyRe, p.Body)},
			"client_id": {testkit.PageField(t, clientIDRe, p.Body)}})

		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != authtest.RedirectURI {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("another user's token signs no one out and the page says nothing of it", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		own := b.Get(logoutURL(withHint(alices, "client_id", authtest.BadgeID)))
		bobs := b.Get(logoutURL(withHint(issue(t, s.URL, time.Hour, authtest.Bob.ID, authtest.BadgeID), "client_id", authtest.BadgeID)))
		if bobs.Status != own.Status || page(bobs.Body) != page(own.Body) || bobs.Header.Get("Location") != "" {
			t.Fatalf("Bob's token changed the page:\n%s\nwant\n%s", bobs.Body, own.Body)
		}
		if strings.Contains(bobs.Body, "bob") || strings.Contains(bobs.Body, "1002") {
			t.Fatal("the page names the token's user")
		}
		if !signedInStill(t, s, b) {
			t.Fatal("another user's token ended Alice's session")
		}
	})
	t.Run("an expired token of ours is still a hint", func(t *testing.T) {
		b := signedIn(t, s, authtest.Alice)
		p := b.Get(logoutURL(withHint(issue(t, s.URL, -time.Minute, authtest.Alice.ID, authtest.BadgeID))))
		if p.Status != http.StatusOK || testkit.PageField(t, clientIDRe, p.Body) != authtest.BadgeID {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("without a session, a good hint is a finished sign-out: back to next", func(t *testing.T) {
		p := newBrowser(t).Get(logoutURL(withHint(alices)))
		if p.Status != http.StatusFound || p.Header.Get("Location") != authtest.RedirectURI {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
		p = newBrowser(t).Get(logoutURL(withHint(alices, "next", "https://evil.example/")))
		if p.Status != http.StatusOK || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "signed out") {
			t.Fatalf("an unregistered next: %d %v", p.Status, p.Header)
		}
	})

	// A token signed by a key the server never published.
	strangers := signing.NewManager(&storetest.MemoryKeys{}, bytes.Repeat([]byte{9}, 32), signing.Config{RotationPeriod: time.Hour,
		ActivationDelay: time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
	if err := strangers.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := strangers.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	forged, err := accesstoken.NewIssuer(strangers, s.URL, "eventreg-api", time.Hour).Issue(accesstoken.UserSubject(authtest.Alice.ID), 502, scope.Set{}, "")
	if err != nil {
		t.Fatal(err)
	}
	webhookToken, err := s.App.Keys.SignWebhook([]byte(`{"iss":"` + s.URL + `","aud":"eventreg-api","client_id":"502","sub":"1001","exp":9999999999}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]url.Values{
		"not a JWT":                            withHint("not-a-token"),
		"signed by a key that is not ours":     withHint(forged.Token),
		"of another issuer":                    withHint(issue(t, "https://other.example", time.Hour, authtest.Alice.ID, authtest.BadgeID)),
		"a webhook token, not an access token": withHint(webhookToken),
		"of another app than client_id":        withHint(alices, "client_id", authtest.ServiceID),
		"with a client_id that is no id":       withHint(alices, "client_id", "badge"),
		"far too long":                         withHint(strings.Repeat("a", 10000)),
	} {
		t.Run("a bad hint is a 400 page and ends nothing: "+name, func(t *testing.T) {
			b := signedIn(t, s, authtest.Alice)
			p := b.Get(logoutURL(q))
			if p.Status != http.StatusBadRequest || p.Header.Get("Location") != "" || !strings.Contains(p.Body, "Invalid sign-out request") {
				t.Fatalf("%d %v %s", p.Status, p.Header, p.Body)
			}
			if strings.Contains(p.Body, `action="/oauth/logout"`) {
				t.Fatal("a bad hint got the Sign out form")
			}
			if !signedInStill(t, s, b) {
				t.Fatal("a bad hint ended the session")
			}
			if p := newBrowser(t).Get(logoutURL(q)); p.Status != http.StatusBadRequest || p.Header.Get("Location") != "" {
				t.Fatalf("without a session: %d %v", p.Status, p.Header)
			}
		})
	}
}

// TestOIDCC_RPInitiatedLogout covers OpenID Connect RP-Initiated Logout
// 1.0 at the end_session_endpoint (the Basic OP plan's logout modules
// belong to the RP-initiated logout plan, oidcc-rp-initiated-logout-*).
func TestOIDCC_RPInitiatedLogout(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	wiki := newRP(t, s, authtest.WikiID, authtest.WikiSecret, "openid")
	b := newBrowser(t)
	tok, _ := wiki.signIn(t, s, b, authtest.Alice, "n")
	hint := tok.Extra("id_token").(string)
	signedIn := func(t *testing.T) bool {
		t.Helper()
		p := b.Get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none")))
		return callback(t, p).Get("code") != ""
	}
	logoutURL := func(v url.Values) string { return s.URL + "/oauth/logout?" + v.Encode() }

	t.Run("an unregistered post_logout_redirect_uri is the invalid request page; the session stays", func(t *testing.T) {
		p := b.Get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.RedirectURI}, "state": {"s1"}}))
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "post_logout_redirect_uri") || !signedIn(t) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("an id_token_hint this server did not sign is the invalid request page", func(t *testing.T) {
		p := b.Get(logoutURL(url.Values{"id_token_hint": {hint + "x"}, "post_logout_redirect_uri": {authtest.PostLogoutURI}}))
		if p.Status != http.StatusBadRequest || !signedIn(t) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("a hint and a client_id of different apps are refused", func(t *testing.T) {
		p := b.Get(logoutURL(url.Values{"id_token_hint": {hint}, "client_id": {authtest.ForumID}, "post_logout_redirect_uri": {authtest.PostLogoutURI}}))
		if p.Status != http.StatusBadRequest || !signedIn(t) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
	})
	t.Run("a GET asks to confirm and ends nothing; the confirmation signs out and returns to the app with state", func(t *testing.T) {
		p := b.Get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s2"}}))
		if p.Status != http.StatusOK || !strings.Contains(p.Body, "Sign out?") || !signedIn(t) {
			t.Fatalf("%d %s", p.Status, p.Body)
		}
		p = b.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "client_id": {authtest.WikiID},
			"post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s2"}})

		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != authtest.PostLogoutURI+"?state=s2" {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
		q := callback(t, b.Get(wiki.cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none"))))
		if q.Get("error") != "login_required" {
			t.Fatalf("still signed in: %v", q)
		}
	})
	t.Run("without a session the browser goes back at once, with state; an expired hint is still a hint", func(t *testing.T) {
		p := newBrowser(t).Get(logoutURL(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {authtest.PostLogoutURI}, "state": {"s3"}}))
		if p.Status != http.StatusFound || p.Header.Get("Location") != authtest.PostLogoutURI+"?state=s3" {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
	t.Run("a forged confirmation with an unregistered URI redirects nowhere", func(t *testing.T) {
		b2 := newBrowser(t)
		wiki.signIn(t, s, b2, authtest.Alice, "n2")
		p := b2.Get(logoutURL(url.Values{"client_id": {authtest.WikiID}}))
		p = b2.PostForm(s.URL+"/oauth/logout", url.Values{"csrf_token": {testkit.PageField(t, testkit.CSRFField, p.Body)}, "client_id": {authtest.WikiID},
			"post_logout_redirect_uri": {"https://evil.example/"}})

		if p.Status != http.StatusBadRequest || p.Header.Get("Location") != "" {
			t.Fatalf("%d %v", p.Status, p.Header)
		}
	})
}
