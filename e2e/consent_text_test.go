package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// The consent screen must say what the app will read: every field
// GET /api/users/current returns under pii:basic alone is named by the
// consent text of pii:basic.
func TestConsentTextNamesWhatTheAppReads(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	app := authApp(s.GatewayURL, authBadgeID, authBadgeSecret, "pii:basic")
	b := newAuthHTTPBrowser(t, s.GatewayURL)
	verifier := oauth2.GenerateVerifier()

	status, h, page := b.do(http.MethodGet, app.AuthCodeURL("consent-text", oauth2.S256ChallengeOption(verifier)), nil)
	if status != 200 || !strings.Contains(page, `name="password"`) {
		t.Fatalf("no login page: %d %v", status, h)
	}
	status, h, _ = b.do(http.MethodPost, s.GatewayURL+"/oauth/login", url.Values{"csrf_token": {authField(t, authCSRFRe, page)},
		"next": {authField(t, authNextRe, page)}, "username": {authAlice}, "password": {authAlicePass}})
	if status != http.StatusSeeOther {
		t.Fatalf("login: %d", status)
	}
	_, _, page = b.do(http.MethodGet, s.GatewayURL+h.Get("Location"), nil)
	text := strings.ToLower(authField(t, regexp.MustCompile(`<li>([^<]*)<span class="name">pii:basic</span>`), page))

	code := b.code(app.AuthCodeURL("consent-text-2", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
	tok, err := app.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	status, body := authCurrentUser(t, s, tok.AccessToken)
	var me map[string]any
	if err := json.Unmarshal(body, &me); status != 200 || err != nil {
		t.Fatalf("GET /api/users/current: %d %s", status, body)
	}

	// What a reader of the consent screen must find for each field.
	said := map[string]string{
		"sub": "account id", "id": "account id",
		"firstName": "name", "lastName": "name", "preferredName": "name",
		"username": "username", "bornAt": "date of birth", "profilePictureUrl": "profile picture",
		"userRoles": "roles", "permissions": "permissions", "newsletter": "newsletter",
		"emailVerified": "email is verified", "identityVerified": "identity is verified",
		"isVolunteer": "volunteer", "isDepartmentLead": "department lead",
	}
	for field := range me {
		words, known := said[field]
		if !known {
			t.Errorf("pii:basic returns %q, which this test does not know how the consent text should name", field)
			continue
		}
		if !strings.Contains(text, words) {
			t.Errorf("pii:basic returns %q, but its consent text does not mention %q: %q", field, words, text)
		}
	}
}
