package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
)

func TestRequestTimeout(t *testing.T) {
	// deadline answers how long the request's context has left ("none": no deadline).
	deadline := func(c *gin.Context) {
		d, ok := c.Request.Context().Deadline()
		if !ok {
			c.String(http.StatusOK, "none")
			return
		}
		c.String(http.StatusOK, time.Until(d).Round(time.Second).String())
	}
	get := func(h http.Handler, path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.String()
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("both listeners give every request REQUEST_TIMEOUT", func(t *testing.T) {
		s := httpserver.New(httpserver.Config{RequestTimeout: 7 * time.Second}, log, "test")
		s.Public.GET("/api/x", deadline)
		s.Internal.GET("/internal/x", deadline)
		if got := get(s.Public, "/api/x"); got != "7s" {
			t.Errorf("public: %s", got)
		}
		if got := get(s.Internal, "/internal/x"); got != "7s" {
			t.Errorf("internal: %s", got)
		}
	})
	t.Run("unset, it is the default", func(t *testing.T) {
		s := httpserver.New(httpserver.Config{}, log, "test")
		s.Public.GET("/api/x", deadline)
		if got, want := get(s.Public, "/api/x"), httpserver.DefaultRequestTimeout.String(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("an exempt route has no deadline of the server's, the others keep theirs", func(t *testing.T) {
		s := httpserver.New(httpserver.Config{RequestTimeout: 3 * time.Second}, log, "test")
		s.Public.Any("/api/v0/users/:id/volunteer", deadline)
		s.Public.GET("/api/v0/users/:id", deadline)
		s.Internal.POST("/internal/events", deadline)
		s.ExemptFromRequestTimeout("/api/v0/users/:id/volunteer", "/internal/events")
		if got := get(s.Public, "/api/v0/users/1001/volunteer"); got != "none" {
			t.Errorf("exempt route: %s", got)
		}
		if got := get(s.Public, "/api/v0/users/1001"); got != "3s" {
			t.Errorf("other route: %s", got)
		}
		rec := httptest.NewRecorder()
		s.Internal.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/internal/events", nil))
		if rec.Body.String() != "none" {
			t.Errorf("exempt internal route: %s", rec.Body.String())
		}
	})
	t.Run("pprof profiles are exempt", func(t *testing.T) {
		// A 1 s CPU profile outlives a 100 ms deadline only when exempt.
		s := httpserver.New(httpserver.Config{Pprof: true, RequestTimeout: 100 * time.Millisecond}, log, "test")
		rec := httptest.NewRecorder()
		start := time.Now()
		s.Ops.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/profile?seconds=1", nil))
		if rec.Code != http.StatusOK || time.Since(start) < time.Second {
			t.Errorf("profile: %d after %s", rec.Code, time.Since(start))
		}
	})
}
