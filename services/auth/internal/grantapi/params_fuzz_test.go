package grantapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// FuzzReadParams feeds arbitrary bodies, content types and Authorization
// headers to the token endpoint's parameter parsing (form-encoded and JSON,
// HTTP Basic): it must never panic, every refusal is a 4xx OAuth error with a
// code, and an accepted body yields one value per parameter except scope.
func FuzzReadParams(f *testing.F) {
	seeds := []struct{ ct, body, authz string }{
		{"application/x-www-form-urlencoded", "grant_type=client_credentials&scope=user:read", "Basic NTAxOnNlY3JldA=="},
		{"application/x-www-form-urlencoded", "grant_type=refresh_token&refresh_token=abc&client_id=501&client_secret=s", ""},
		{"application/x-www-form-urlencoded", "grant_type=a&grant_type=b", ""},
		{"application/x-www-form-urlencoded", "%zz=1", ""},
		{"application/json", `{"grant_type":"client_credentials","client_id":501,"client_secret":"s","scope":["a","b"]}`, ""},
		{"application/json", `{"grant_type":"a","grant_type":"b"}`, ""},
		{"application/json", `{"scope":{"a":1}}`, ""},
		{"application/json", `[[[[[[[[[[[[]]]]]]]]]]]]`, ""},
		{"application/json; charset=utf-8", "{\"client_id\":\"\xff\"}", ""},
		{"text/plain", "grant_type=client_credentials", ""},
		{"", "grant_type=client_credentials", "Basic !!!"},
		{"application/x-www-form-urlencoded", "", "bAsIc " + "NTAxJTNBOnMlMjA="},
	}
	for _, s := range seeds {
		f.Add(s.ct, s.body, s.authz)
	}
	gin.SetMode(gin.TestMode)
	f.Fuzz(func(t *testing.T, ct, body, authz string) {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(http.MethodPost, "/api/oauth/token", strings.NewReader(body))
		c.Request.Header["Content-Type"] = []string{ct}
		if authz != "" {
			c.Request.Header["Authorization"] = []string{authz}
		}
		p, e := readParams(c)
		if e != nil {
			if e.Status < 400 || e.Status > 499 || e.Code == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Code)
			}
			return
		}
		for name, vals := range p.values {
			if _, e := p.get(name); name != "scope" && len(vals) > 1 && e == nil {
				t.Fatalf("repeated %s accepted", name)
			}
		}
		if _, _, e := p.credentials(); e != nil && (e.Status < 400 || e.Status > 499) {
			t.Fatalf("credentials refusal %d", e.Status)
		}
	})
}
