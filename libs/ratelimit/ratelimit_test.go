package ratelimit_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func router(t *testing.T, redisURL string, limit redis_rate.Limit) (*gin.Engine, *tokentest.Server) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	ts := tokentest.New(t)
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ts.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := redisdb.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	l := ratelimit.New(rdb, "test", limit, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := gin.New()
	r.GET("/x", v.Middleware(), l.Middleware(), func(c *gin.Context) { c.Status(204) })
	return r, ts
}

func get(r http.Handler, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestLimitsEachClient(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	r, ts := router(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 3, Burst: 3, Period: time.Minute})
	a := ts.Sign(t, "client:601", time.Now().Add(time.Hour), "user:read")
	b := ts.Sign(t, "client:602", time.Now().Add(time.Hour), "user:read")
	for i := range 3 {
		if w := get(r, a); w.Code != 204 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := get(r, a)
	if w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("over the limit: %d %v", w.Code, w.Header())
	}
	t.Run("another client has its own budget", func(t *testing.T) {
		if w := get(r, b); w.Code != 204 {
			t.Fatalf("%d", w.Code)
		}
	})
}

func TestFailsOpenWhenRedisIsDown(t *testing.T) {
	port, _ := testkit.FreePort()
	r, ts := router(t, fmt.Sprintf("redis://127.0.0.1:%d/0", port), redis_rate.Limit{Rate: 1, Burst: 1, Period: time.Hour})
	tok := ts.Service(t, "user:read")
	start := time.Now()
	for range 3 {
		if w := get(r, tok); w.Code != 204 {
			t.Fatalf("%d", w.Code)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}
