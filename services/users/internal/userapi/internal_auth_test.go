package userapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/servicetoken"
)

// TestInternalAPINeedsAServiceToken: a peer that reaches the internal
// listener but holds no service token for users (none, a forged one, one
// for another service, an expired one) gets the API's 401 from every
// internal endpoint, before any password is checked or any user is read.
func TestInternalAPINeedsAServiceToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	forged, _ := servicetoken.NewSigner(servicetoken.Config{Key: "not-the-deployment-key-but-just-as-long"}, "auth").Token("users")
	forVolunteers, _ := e.Credentials.Token("volunteers")
	expired, _ := e.Credentials.TokenAt("users", time.Now().Add(-time.Hour))
	calls := []struct{ method, path, body string }{
		{"POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`},
		{"POST", "/internal/credentials/account", `{"username": "alice"}`},
		{"POST", "/internal/users/summaries", `{"ids": [1001]}`},
		{"GET", "/internal/users/1001/permissions", ""},
	}
	for name, c := range map[string]struct{ token, message string }{
		"no credentials":                  {"", "Invalid token."},
		"a token signed with another key": {forged, "Invalid token."},
		"a token for another service":     {forVolunteers, "Invalid token."},
		"an expired token":                {expired, "Token expired."},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			for _, call := range calls {
				r := e.Send(t, e.Internal, call.method, call.path, c.token, []byte(call.body), jsonContent)
				r.ExpectError(t, 401, "authentication", c.message)
			}
		})
	}
	t.Run("a token for users from a holder of the key is served", func(t *testing.T) {
		r := e.CallInternal(t, "POST", "/internal/credentials/verify", `{"username": "alice", "password": "correct horse battery staple"}`)
		r.Expect(t, 200)
		if !strings.Contains(e.logs.String(), `"client_id":"service:tests"`) {
			t.Errorf("the request log does not name the calling service: %s", e.logs.String())
		}
	})
}
