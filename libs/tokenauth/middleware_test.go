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

func TestMiddlewareStatusesAndBodies(t *testing.T) {
	gin.SetMode(gin.TestMode)
	ks := newKeyServer(t, "k1")
	v := newValidator(t, ks)
	r := gin.New()
	r.GET("/users", v.Middleware(), tokenauth.RequireScope("user:read"), func(c *gin.Context) {
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
			req := httptest.NewRequest("GET", "/users", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
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
