package tokenauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/tokenauth"
)

func TestRequireScopeOrSelf(t *testing.T) {
	gin.SetMode(gin.TestMode)
	ks := newKeyServer(t, "k1")
	v := newValidator(t, ks)
	r := gin.New()
	r.GET("/users/:id/registration", v.Middleware(), tokenauth.RequireScopeOrSelf("registration:read", "con:read", "id"),
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
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
				t.Fatalf("%d %s, want %d saying %q", w.Code, w.Body, tc.status, tc.says)
			}
		})
	}
}
