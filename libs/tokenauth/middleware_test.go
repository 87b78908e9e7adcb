package tokenauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/tokenauth"
)

// guarded serves GET path behind a validator's Middleware and guard, then
// handler; it returns the router and the key server whose key signs the
// tokens the validator accepts.
func guarded(t *testing.T, path string, guard, handler gin.HandlerFunc) (*gin.Engine, *keyServer) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	ks := newKeyServer(t, "k1")
	r := gin.New()
	r.GET(path, newValidator(t, ks).Middleware(), guard, handler)
	return r, ks
}

// get sends GET path to r with the Authorization header (none when empty).
func get(r http.Handler, path, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestMiddlewareStatusesAndBodies(t *testing.T) {
	r, ks := guarded(t, "/users", tokenauth.RequireScope("user:read"), func(c *gin.Context) {
		c.String(200, tokenauth.FromContext(c).ClientID)
	})
	expired := defaults()
	expired.exp = time.Now().Add(-time.Hour)
	noScope := defaults()
	noScope.scope = "pii:basic"

	cases := []struct {
		name, header       string
		status             int
		message, challenge string
	}{
		{"no header", "", 401, "Invalid token.", "Bearer"},
		{"not bearer", "Basic abc", 401, "Invalid token.", "Bearer"},
		{"garbage token", "Bearer abc.def.ghi", 401, "Invalid token.", `error="invalid_token"`},
		{"expired", "Bearer " + sign(t, ks.priv, expired), 401, "Token expired.", `error="invalid_token"`},
		{"missing scope", "Bearer " + sign(t, ks.priv, noScope), 403, "The token lacks the scope user:read.", `error="insufficient_scope", scope="user:read"`},
		{"good, lower-case scheme", "bearer " + sign(t, ks.priv, defaults()), 200, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := get(r, "/users", tc.header)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if tc.status == http.StatusOK {
				if w.Body.String() != "502" {
					t.Fatalf("body %q", w.Body)
				}
				return
			}
			var body map[string]map[string]map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body not JSON: %s", w.Body)
			}
			cat := "authentication"
			if tc.status == 403 {
				cat = "access"
			}
			if got := body["errors"][cat]["message"]; got != tc.message {
				t.Fatalf("message %q, want %q", got, tc.message)
			}
			if ch := w.Header().Get("WWW-Authenticate"); !strings.Contains(ch, tc.challenge) {
				t.Fatalf("WWW-Authenticate %q lacks %q", ch, tc.challenge)
			}
		})
	}
}

func TestRequireScopeOrSelf(t *testing.T) {
	r, ks := guarded(t, "/users/:id/registration", tokenauth.RequireScopeOrSelf("registration:read", "con:read", "id"),
		func(c *gin.Context) { c.Status(http.StatusNoContent) })
	tok := func(sub, scope string) string {
		o := defaults()
		o.sub, o.scope = sub, scope
		return sign(t, ks.priv, o)
	}
	cases := []struct {
		name, path, token string
		status            int
		says              string
	}{
		{"the scope reads any user", "/users/1002/registration", tok("client:501", "registration:read"), 204, ""},
		{"selfScope reads the token's own user", "/users/1001/registration", tok("1001", "con:read"), 204, ""},
		{"selfScope refuses another user", "/users/1002/registration", tok("1001", "con:read"), 403, "only its own user"},
		{"selfScope refuses current (not an id)", "/users/current/registration", tok("1001", "con:read"), 403, "only its own user"},
		{"a zero-padded own id is the same user", "/users/01001/registration", tok("1001", "con:read"), 204, ""},
		{"selfScope in a service token reads nothing", "/users/1001/registration", tok("client:501", "con:read"), 403, "lacks the scope registration:read"},
		{"neither scope", "/users/1001/registration", tok("1001", "pii:basic"), 403, "lacks the scope registration:read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := get(r, tc.path, "Bearer "+tc.token)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
				t.Fatalf("%d %s, want %d saying %q", w.Code, w.Body, tc.status, tc.says)
			}
		})
	}
}
