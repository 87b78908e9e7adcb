package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// The consent screen must say what the app will read: every field
// GET /api/users/current returns under pii:basic alone is named by the
// consent text of pii:basic.
func TestConsentTextNamesWhatTheAppReads(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	app := authApp(s.GatewayURL, authBadgeID, authBadgeSecret, "pii:basic")
	b := newAuthHTTPBrowser(t, s.GatewayURL)
	status, h, page := b.authorize(app.AuthCodeURL("consent-text", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), authAlice, authAlicePass)
	if status != http.StatusOK || !strings.Contains(page, `value="authorize"`) {
		t.Fatalf("no consent page: %d %v", status, h)
	}
	text := strings.ToLower(testkit.PageField(t, regexp.MustCompile(`<li>([^<]*)<span class="name">pii:basic</span>`), page))

	r := mustSend(t, s, http.MethodGet, "/api/users/current", b.token(app, authAlice, authAlicePass).AccessToken, "")
	var me map[string]any
	if err := json.Unmarshal([]byte(r.body), &me); r.status != 200 || err != nil {
		t.Fatalf("GET /api/users/current: %d %s", r.status, r.body)
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
