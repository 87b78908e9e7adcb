package server_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	oauthgrant "github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
)

// staffUser returns a user of the double holding every sensitive permission.
func staffUser(id int64, name string) authtest.User {
	return authtest.User{ID: id, Username: name, Email: name + "@example.org", Password: name + " has a long password 2026",
		Permissions: []string{"system:login", "user:read", "volunteer:read", "registration:read"}}
}

// grant runs the whole authorization for user with cfg (PKCE included) and
// returns the tokens.
func grant(t *testing.T, s *authtest.Server, cfg *oauth2.Config, user authtest.User) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	code := authorize(t, s, newBrowser(t), cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), user)
	tok := mustExchange(t, cfg, code, verifier)
	return tok
}

// refreshWith presents refresh token rt as client id and returns the status and body.
func refreshWith(t *testing.T, s *authtest.Server, rt, id, secret string) (int, map[string]any) {
	t.Helper()
	st, _, body := post(t, s.URL+"/api/oauth/token", form, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode(), id, secret)
	return st, decode(t, body)
}

// claimsOf reads the payload of a JWT without verifying it.
func claimsOf(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// feed reads the revocation feed after n.
func feed(t *testing.T, s *authtest.Server, after string) (int, map[string]any) {
	t.Helper()
	resp := s.Internal(t, http.MethodGet, "/internal/revocations?after="+url.QueryEscape(after), "", nil)
	defer resp.Body.Close()
	return resp.StatusCode, decode(t, readAll(t, resp))
}

// feedHas reports whether the feed lists an entry with key (jti or sid) = value.
func feedHas(t *testing.T, s *authtest.Server, key, value string) bool {
	t.Helper()
	st, m := feed(t, s, "0")
	if st != http.StatusOK {
		t.Fatalf("feed: %d %v", st, m)
	}
	for _, e := range m["revoked"].([]any) {
		if e.(map[string]any)[key] == value {
			return true
		}
	}
	return false
}

func TestGrantsFollowTheirSources(t *testing.T) {
	carol, dave, erin, fred, gina := staffUser(2001, "carol"), staffUser(2002, "dave"), staffUser(2003, "erin"), staffUser(2004, "fred"), staffUser(2005, "gina")
	hank, ivy, jack, kate := staffUser(2006, "hank"), staffUser(2007, "ivy"), staffUser(2008, "jack"), staffUser(2009, "kate")
	// No client cache: a scope taken from an app counts at once, not after CLIENT_CACHE_TTL.
	s := authtest.Start(t, authtest.Options{Users: []authtest.User{authtest.Alice, authtest.Bob, carol, dave, erin, fred, gina, hank, ivy, jack, kate},
		Env: map[string]string{"CLIENT_CACHE_TTL": "0"}})
	staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "registration:read")
	withoutRegistrations := []string{"system:login", "user:read", "volunteer:read"}

	t.Run("a refresh keeps the sensitive scopes the user and the app still hold", func(t *testing.T) {
		tok := grant(t, s, staff, kate)
		m := map[string]any{"refresh_token": tok.RefreshToken}
		for range 2 {
			var st int
			st, m = refreshWith(t, s, m["refresh_token"].(string), authtest.StaffID, authtest.StaffSecret)
			if st != 200 || m["scope"] != "pii:basic registration:read" || claimsOf(t, m["access_token"].(string))["scope"] != "pii:basic registration:read" {
				t.Fatalf("%d %v", st, m)
			}
		}
		st, _, body := post(t, s.URL+"/api/oauth/token", form, url.Values{"grant_type": {"refresh_token"},
			"refresh_token": {m["refresh_token"].(string)}, "scope": {"registration:read"}}.Encode(), authtest.StaffID, authtest.StaffSecret)
		m = decode(t, body)
		if st != 200 || m["scope"] != "registration:read" {
			t.Fatalf("narrowing to the sensitive scope: %d %v", st, m)
		}
	})
	t.Run("a permission taken from the user is dropped from the next refresh, for good", func(t *testing.T) {
		tok := grant(t, s, staff, carol)
		if got := tok.Extra("scope"); got != "pii:basic registration:read" {
			t.Fatalf("granted %v", got)
		}
		s.Users.SetPermissions(carol.ID, withoutRegistrations)
		st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret)
		if st != 200 || m["scope"] != "pii:basic" || claimsOf(t, m["access_token"].(string))["scope"] != "pii:basic" {
			t.Fatalf("%d %v", st, m)
		}
		s.Users.SetPermissions(carol.ID, carol.Permissions)
		st, m = refreshWith(t, s, m["refresh_token"].(string), authtest.StaffID, authtest.StaffSecret)
		if st != 200 || m["scope"] != "pii:basic" {
			t.Fatalf("the dropped scope came back without a new consent: %d %v", st, m)
		}
	})
	t.Run("a grant with nothing left is invalid_grant and ends the family", func(t *testing.T) {
		only := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "registration:read")
		tok := grant(t, s, only, dave)
		s.Users.SetPermissions(dave.ID, withoutRegistrations)
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
		s.Users.SetPermissions(dave.ID, dave.Permissions)
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("the family outlived its grant: %d %v", st, m)
		}
		if !feedHas(t, s, "sid", claimsOf(t, tok.AccessToken)["sid"].(string)) {
			t.Fatal("the family's access tokens are not on the revocation feed")
		}
	})
	t.Run("a deleted user's refresh is invalid_grant", func(t *testing.T) {
		tok := grant(t, s, staff, erin)
		s.Users.Remove(erin.ID)
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("a scope taken from the app is dropped on refresh", func(t *testing.T) {
		tok := grant(t, s, staff, fred)
		setClientScopes(t, s, 503, []string{"pii:basic", "pii:email", "user:read"})
		t.Cleanup(func() { setClientScopes(t, s, 503, nil) })
		st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret)
		if st != 200 || m["scope"] != "pii:basic" {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("the code exchange re-checks the user's permissions", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, newBrowser(t), staff.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), gina)
		s.Users.SetPermissions(gina.ID, withoutRegistrations)
		tok := mustExchange(t, staff, code, verifier)
		if tok.Extra("scope") != "pii:basic" {
			t.Fatalf("exchange granted %v", tok.Extra("scope"))
		}
	})
	// code returns a code of user for cfg, with its PKCE verifier.
	code := func(t *testing.T, cfg *oauth2.Config, user authtest.User) (string, string) {
		t.Helper()
		verifier := oauth2.GenerateVerifier()
		return authorize(t, s, newBrowser(t), cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), user), verifier
	}
	// invalidGrant checks err is invalid_grant for the reason why.
	invalidGrant := func(t *testing.T, err error, why string) {
		t.Helper()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || !strings.Contains(re.ErrorDescription, why) {
			t.Fatalf("exchange: %v, want invalid_grant (%s)", err, why)
		}
	}
	t.Run("a code redeemed after its user was deleted is invalid_grant", func(t *testing.T) {
		c, verifier := code(t, staff, hank)
		s.Users.Remove(hank.ID)
		_, err := exchange(t, staff, c, verifier)
		invalidGrant(t, err, "no longer exists")
	})
	t.Run("a code redeemed after the app lost a scope is narrowed to what the app still has", func(t *testing.T) {
		c, verifier := code(t, staff, ivy)
		setClientScopes(t, s, 503, []string{"pii:basic", "pii:email", "user:read"})
		t.Cleanup(func() { setClientScopes(t, s, 503, nil) })
		tok := mustExchange(t, staff, c, verifier)
		if got := tok.Extra("scope"); got != "pii:basic" || claimsOf(t, tok.AccessToken)["scope"] != "pii:basic" {
			t.Fatalf("exchange granted %v", got)
		}
	})
	t.Run("a code redeemed after the app lost every scope of it is invalid_grant", func(t *testing.T) {
		only := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "registration:read")
		c, verifier := code(t, only, jack)
		setClientScopes(t, s, 503, []string{"pii:basic", "pii:email", "user:read"})
		t.Cleanup(func() { setClientScopes(t, s, 503, nil) })
		_, err := exchange(t, only, c, verifier)
		invalidGrant(t, err, "Nothing this grant authorized is still allowed")
	})
	for _, c := range []struct {
		name string
		set  func(bool)
	}{
		{"the users service being down is a 503, and the token keeps working after", s.Users.SetDown},
		{"a 404 that is not the users service's (USERS_INTERNAL_URL wrong) is a 503 and revokes nothing", s.Users.SetMisrouted},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := grant(t, s, oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic"), authtest.Bob)
			c.set(true)
			st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
			c.set(false)
			if st != 503 || m["error"] != "temporarily_unavailable" {
				t.Fatalf("refresh while the users service fails: %d %v; want 503 temporarily_unavailable", st, m)
			}
			if st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
				t.Fatalf("the family did not survive: %d %v", st, m)
			}
		})
	}
}

// rotateThenReuse refreshes tok once, then presents its refresh token again:
// the reuse and the rotated token must both be refused. It returns the rotation's answer.
func rotateThenReuse(t *testing.T, s *authtest.Server, tok *oauth2.Token) map[string]any {
	t.Helper()
	st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
	if st != 200 {
		t.Fatalf("refresh: %d %v", st, m)
	}
	if st, _ := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 400 {
		t.Fatalf("reuse accepted: %d", st)
	}
	if st, _ := refreshWith(t, s, m["refresh_token"].(string), authtest.BadgeID, authtest.BadgeSecret); st != 400 {
		t.Fatalf("the family survived its reuse: %d", st)
	}
	return m
}

// setClientScopes re-imports the demo clients with id's scopes replaced (nil: as the demo has them).
func setClientScopes(t *testing.T, s *authtest.Server, id int64, scopes []string) {
	t.Helper()
	cs := authtest.Clients()
	for i := range cs {
		if cs[i].ID == id && scopes != nil {
			cs[i].Scopes = scopes
		}
	}
	if _, err := s.Clients.Import(bg(), cs); err != nil {
		t.Fatal(err)
	}
}

func TestPermissionChangeRevokesAffectedFamilies(t *testing.T) {
	hana := staffUser(2011, "hana")
	s := authtest.Start(t, authtest.Options{Users: []authtest.User{authtest.Alice, hana}})
	staffTok := grant(t, s, oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic", "registration:read"), hana)
	badgeTok := grant(t, s, oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic"), hana)
	changed := func(t *testing.T, id int64) (int, map[string]any) {
		t.Helper()
		resp := s.Internal(t, http.MethodPost, "/internal/users/"+strconv.FormatInt(id, 10)+"/permissions-changed", "", nil)
		defer resp.Body.Close()
		return resp.StatusCode, decode(t, readAll(t, resp))
	}

	t.Run("losing a permission revokes the families holding its scope, and only those", func(t *testing.T) {
		s.Users.SetPermissions(hana.ID, []string{"system:login"})
		if st, m := changed(t, hana.ID); st != 200 || m["revoked"] != float64(1) {
			t.Fatalf("%d %v", st, m)
		}
		if st, m := refreshWith(t, s, staffTok.RefreshToken, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("the staff app kept its refresh token: %d %v", st, m)
		}
		if !feedHas(t, s, "sid", claimsOf(t, staffTok.AccessToken)["sid"].(string)) {
			t.Fatal("the staff app's access tokens are not on the revocation feed")
		}
		if feedHas(t, s, "sid", claimsOf(t, badgeTok.AccessToken)["sid"].(string)) {
			t.Fatal("the badge app's access tokens were revoked too")
		}
		st, m := refreshWith(t, s, badgeTok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 {
			t.Fatalf("the badge app lost access: %d %v", st, m)
		}
		badgeTok.RefreshToken = m["refresh_token"].(string)
	})
	t.Run("a deleted user loses every family", func(t *testing.T) {
		s.Users.Remove(hana.ID)
		if st, m := changed(t, hana.ID); st != 200 || m["revoked"] != float64(1) {
			t.Fatalf("%d %v", st, m)
		}
		if st, m := refreshWith(t, s, badgeTok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 400 {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("an unknown or malformed user changes nothing", func(t *testing.T) {
		if st, m := changed(t, 999999); st != 200 || m["revoked"] != float64(0) {
			t.Fatalf("%d %v", st, m)
		}
		resp := s.Internal(t, http.MethodPost, "/internal/users/x/permissions-changed", "", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

func TestRefreshFamilyLifetimes(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"REFRESH_TOKEN_IDLE_TTL": "2s", "REFRESH_TOKEN_ABSOLUTE_TTL": "3s"}})
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	t.Run("a family unused for its idle lifetime ends", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		time.Sleep(2500 * time.Millisecond)
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("a family in use ends at its absolute lifetime", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		rt := tok.RefreshToken
		start := time.Now()
		for time.Since(start) < 2200*time.Millisecond {
			time.Sleep(700 * time.Millisecond)
			st, m := refreshWith(t, s, rt, authtest.BadgeID, authtest.BadgeSecret)
			if st != 200 {
				t.Fatalf("refresh within the lifetimes: %d %v", st, m)
			}
			rt = m["refresh_token"].(string)
		}
		time.Sleep(time.Until(start.Add(3200 * time.Millisecond)))
		if st, m := refreshWith(t, s, rt, authtest.BadgeID, authtest.BadgeSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
	})
}

func TestRotatedTokensStayBounded(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	tok := grant(t, s, oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic"), authtest.Alice)
	family, _ := oauthgrant.FamilyOfToken(tok.RefreshToken)
	rt, prev := tok.RefreshToken, ""
	for i := 0; i < refreshdb.MaxRotated+20; i++ {
		st, m := refreshWith(t, s, rt, authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 {
			t.Fatalf("rotation %d: %d %v", i, st, m)
		}
		prev, rt = rt, m["refresh_token"].(string)
	}
	key := "auth:rt:{" + family + "}:rotated"
	if n := s.Redis.ZCard(bg(), key).Val(); n != refreshdb.MaxRotated {
		t.Fatalf("%s holds %d digests, want %d", key, n, refreshdb.MaxRotated)
	}
	if ttl := s.Redis.PTTL(bg(), key).Val(); ttl <= 0 {
		t.Fatalf("%s has no expiry (%v)", key, ttl)
	}
	// The newest rotated token is remembered: its reuse still revokes the family.
	if st, m := refreshWith(t, s, prev, authtest.BadgeID, authtest.BadgeSecret); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("%d %v", st, m)
	}
	if st, m := refreshWith(t, s, rt, authtest.BadgeID, authtest.BadgeSecret); st != 400 {
		t.Fatalf("reuse did not revoke the family: %d %v", st, m)
	}
}

func TestReplaysAreJudgedAfterTheClientBinding(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")

	t.Run("another client presenting a used code gets invalid_grant and revokes nothing", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := authorize(t, s, newBrowser(t), badge.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), authtest.Alice)
		tok := mustExchange(t, badge, code, verifier)
		v := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {authtest.RedirectURI}, "code_verifier": {verifier}}
		st, _, body := post(t, s.URL+"/api/oauth/token", form, v.Encode(), authtest.StaffID, authtest.StaffSecret)
		if st != 400 || decode(t, body)["error"] != "invalid_grant" || strings.Contains(string(body), "revoked") {
			t.Fatalf("%d %s", st, body)
		}
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("the owner's family was revoked by another client: %d %v", st, m)
		}
		if introspect(t, s, tok.AccessToken)["active"] != true {
			t.Fatal("the owner's access token was revoked by another client")
		}
	})
	t.Run("another client presenting a rotated refresh token gets invalid_grant and revokes nothing", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		st, m := refreshWith(t, s, tok.RefreshToken, authtest.BadgeID, authtest.BadgeSecret)
		if st != 200 {
			t.Fatalf("%d %v", st, m)
		}
		current := m["refresh_token"].(string)
		if st, m := refreshWith(t, s, tok.RefreshToken, authtest.StaffID, authtest.StaffSecret); st != 400 || m["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, m)
		}
		if st, m := refreshWith(t, s, current, authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("the owner's family was revoked by another client: %d %v", st, m)
		}
	})
	t.Run("the owner presenting its rotated refresh token still revokes the family and its access tokens", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		m := rotateThenReuse(t, s, tok)
		if introspect(t, s, m["access_token"].(string))["active"] != false || introspect(t, s, tok.AccessToken)["active"] != false {
			t.Fatal("access tokens of the revoked family are still active")
		}
	})
}

func TestClientAuthenticationThrottlingCapsCostNotAccess(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"CLIENT_AUTH_FAILURES": "3"}})
	wrong := "wrong-secret-wrong-secret-wrong-secret"
	try := func(id, secret, from string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader("grant_type=client_credentials"))
		req.Header.Set("Content-Type", form)
		req.SetBasicAuth(id, secret)
		if from != "" {
			req.Header.Set("X-Forwarded-For", from)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, decode(t, readAll(t, resp))
	}
	// Fifteen wrong guesses, under the id and under the id with a leading zero.
	var last int
	for i := 0; i < 15; i++ {
		id := authtest.ServiceID
		if i%2 == 1 {
			id = "0" + id
		}
		last, _ = try(id, wrong, "203.0.113.66")
	}
	if last != http.StatusTooManyRequests {
		t.Fatalf("guessing was not throttled: %d", last)
	}
	t.Run("ids are normalized: the leading-zero form shares the bucket", func(t *testing.T) {
		if st, m := try("00"+authtest.ServiceID, wrong, "203.0.113.66"); st != http.StatusTooManyRequests || m["error"] != "slow_down" {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("the right secret always authenticates, from the guessing address too", func(t *testing.T) {
		for _, from := range []string{"", "203.0.113.66"} {
			if st, m := try(authtest.ServiceID, authtest.ServiceSecret, from); st != 200 {
				t.Fatalf("from %q: %d %v", from, st, m)
			}
		}
	})
	t.Run("failures from another address are counted apart", func(t *testing.T) {
		if st, m := try(authtest.ServiceID, wrong, "198.51.100.5"); st != http.StatusUnauthorized || m["error"] != "invalid_client" {
			t.Fatalf("%d %v", st, m)
		}
	})
}

func TestRevocationFeed(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
	revoke := func(t *testing.T, token string) {
		t.Helper()
		if st, _, body := post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {token}}.Encode(), authtest.BadgeID, authtest.BadgeSecret); st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	}
	st, m := feed(t, s, "")
	if st != 200 || len(m["revoked"].([]any)) != 0 {
		t.Fatalf("%d %v", st, m)
	}
	start := strconv.FormatFloat(m["next"].(float64), 'f', -1, 64)

	t.Run("OBO access tokens carry the sid of their family; service tokens none", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		fam, _ := oauthgrant.FamilyOfToken(tok.RefreshToken)
		if sid := claimsOf(t, tok.AccessToken)["sid"]; sid != oauthgrant.SessionID(fam) || sid == fam {
			t.Fatalf("sid %v (family %s)", sid, fam)
		}
		st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret)
		if _, has := claimsOf(t, decode(t, body)["access_token"].(string))["sid"]; st != 200 || has {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("revoking a refresh token lists its family's sid; its access token is inactive", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		revoke(t, tok.RefreshToken)
		if !feedHas(t, s, "sid", claimsOf(t, tok.AccessToken)["sid"].(string)) {
			t.Fatal("sid not on the feed")
		}
		if introspect(t, s, tok.AccessToken)["active"] != false {
			t.Fatal("the family's access token is still active")
		}
	})
	t.Run("revoking an access token lists its family's cutoff at its iat", func(t *testing.T) {
		tok := grant(t, s, badge, authtest.Alice)
		revoke(t, tok.AccessToken)
		if !feedHas(t, s, "family_sid", claimsOf(t, tok.AccessToken)["sid"].(string)) {
			t.Fatal("the family's cutoff is not on the feed")
		}
	})
	t.Run("after pages: what came before is not sent again", func(t *testing.T) {
		st, m := feed(t, s, start)
		if st != 200 || len(m["revoked"].([]any)) != 2 {
			t.Fatalf("%d %v", st, m)
		}
		next := strconv.FormatFloat(m["next"].(float64), 'f', -1, 64)
		if st, m := feed(t, s, next); st != 200 || len(m["revoked"].([]any)) != 0 {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("a cursor past the newest entry (a lost feed) starts from the beginning", func(t *testing.T) {
		if st, m := feed(t, s, "9007199254740000"); st != 200 || len(m["revoked"].([]any)) != 2 {
			t.Fatalf("%d %v", st, m)
		}
	})
	t.Run("a lost feed comes back with another epoch, numbered above every number given before", func(t *testing.T) {
		st, m := feed(t, s, "0")
		epoch, _ := m["epoch"].(string)
		if st != 200 || epoch == "" {
			t.Fatalf("no epoch: %d %v", st, m)
		}
		before := m["next"].(float64)
		if err := s.Redis.FlushAll(bg()).Err(); err != nil { // Redis restarted without its data
			t.Fatal(err)
		}
		revoke(t, grant(t, s, badge, authtest.Alice).RefreshToken)
		st, m = feed(t, s, "0")
		if st != 200 || m["epoch"] == epoch || m["epoch"] == "" || m["next"].(float64) <= before || len(m["revoked"].([]any)) != 1 {
			t.Fatalf("after the loss (epoch %s, next %v before): %d %v", epoch, before, st, m)
		}
	})
	t.Run("a bad cursor is a 400 with the error shape", func(t *testing.T) {
		for _, bad := range []string{"-1", "x", "1e3", strings.Repeat("9", 30)} {
			if st, m := feed(t, s, bad); st != 400 || m["errors"] == nil {
				t.Fatalf("%q: %d %v", bad, st, m)
			}
		}
	})
}
