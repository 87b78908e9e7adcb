package apireply_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

func render(e *apierror.Error) (*httptest.ResponseRecorder, map[string]map[string]map[string]any) {
	gin.SetMode(gin.TestMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	apireply.Abort(c, e)
	var body map[string]map[string]map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	return w, body
}

func TestShapesAndStatuses(t *testing.T) {
	cases := []struct {
		name     string
		err      *apierror.Error
		status   int
		category string
		code     float64
	}{
		{"expired", apierror.Unauthenticated(true), 401, "authentication", 2001},
		{"invalid", apierror.Unauthenticated(false), 401, "authentication", 2000},
		{"scope", apierror.InsufficientScope("user:read"), 403, "access", 3000},
		{"validation", apierror.Validation("bad", map[string]string{"limit": "x"}), 400, "validation", 0},
		{"conflict", apierror.Conflict(apierror.CodeUserWasAlreadyAdded, "UserWasAlreadyAdded"), 409, "logic", 3},
		{"not found", apierror.NotFound("User not found."), 404, "resource", 0},
		{"too large", apierror.BodyTooLarge(10), 413, "validation", 0},
		{"rate limited", apierror.RateLimited(1500 * time.Millisecond), 429, "rateLimit", 0},
		{"unavailable", apierror.Unavailable("The users service"), 503, "server", 0},
		{"internal", apierror.Internal("abc"), 500, "server", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, body := render(tc.err)
			if w.Code != tc.status {
				t.Fatalf("status %d", w.Code)
			}
			inner := body["errors"][tc.category]
			if inner == nil || inner["message"] == "" {
				t.Fatalf("body %s", w.Body)
			}
			if tc.code != 0 && inner["code"] != tc.code {
				t.Fatalf("code %v", inner["code"])
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	w, _ := render(apierror.RateLimited(1500 * time.Millisecond))
	if w.Header().Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q", w.Header().Get("Retry-After"))
	}
	w, body := render(apierror.Unauthenticated(true))
	if w.Header().Get("WWW-Authenticate") != `Bearer error="invalid_token", error_description="Token expired."` || body["errors"]["authentication"]["message"] != "Token expired." {
		t.Fatalf("%v %s", w.Header(), w.Body)
	}
}

func TestOAuthErrors(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for code, status := range map[string]int{apierror.OAuthInvalidClient: 401, apierror.OAuthInvalidGrant: 400, apierror.OAuthTemporarilyUnavailable: 503} {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		apireply.AbortOAuth(c, apierror.NewOAuth(code, "why"))
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != status || body["error"] != code || body["error_description"] != "why" || w.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d %s %v", code, w.Code, w.Body, w.Header())
		}
	}
}
