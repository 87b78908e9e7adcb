package ratelimit_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func router(t *testing.T, redisURL string, limit redis_rate.Limit) (*gin.Engine, *tokentest.Server) {
	t.Helper()
	e := newEnv(t)
	return e.engine(e.limiter(t, redisURL, limit)), e.ts
}

// env signs tokens that every engine it builds accepts, so several limiters
// (replicas) can serve one client.
type env struct {
	ts *tokentest.Server
	v  *tokenauth.Validator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	gin.SetMode(gin.TestMode)
	ts := tokentest.New(t)
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ts.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ts: ts, v: v}
}

// limiter is one replica's limiter, with its own Redis connections.
func (e *env) limiter(t *testing.T, redisURL string, limit redis_rate.Limit) *ratelimit.Limiter {
	t.Helper()
	rdb, err := redisdb.Open(redisURL, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return ratelimit.New(rdb, "test", limit, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func (e *env) engine(l *ratelimit.Limiter) *gin.Engine {
	r := gin.New()
	r.GET("/x", e.v.Middleware(), l.Middleware(), func(c *gin.Context) { c.Status(204) })
	return r
}

func get(r http.Handler, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestLimitsEachClient(t *testing.T) {
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

func TestRateLimitHeaders(t *testing.T) {
	r, ts := router(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 2, Burst: 2, Period: time.Second})
	tok := ts.Sign(t, "client:611", time.Now().Add(time.Hour), "user:read")
	t.Run("an allowed answer carries the quota and what is left of it", func(t *testing.T) {
		w := get(r, tok)
		h := w.Header()
		if w.Code != 204 || h.Get("RateLimit-Limit") != "2" || h.Get("RateLimit-Remaining") != "1" ||
			h.Get("RateLimit-Reset") != "1" || h.Get("RateLimit-Policy") != "2;w=1" || h.Get("Retry-After") != "" {
			t.Fatalf("%d %v", w.Code, h)
		}
	})
	t.Run("a refused answer is a 429 rateLimit error with Retry-After and nothing remaining", func(t *testing.T) {
		get(r, tok)
		w := get(r, tok)
		h := w.Header()
		if w.Code != 429 || h.Get("Retry-After") != "1" || h.Get("RateLimit-Remaining") != "0" || h.Get("RateLimit-Limit") != "2" {
			t.Fatalf("%d %v", w.Code, h)
		}
		if !strings.Contains(w.Body.String(), `"rateLimit"`) {
			t.Fatalf("body %s", w.Body)
		}
	})
}

func TestConfig(t *testing.T) {
	t.Run("defaults are 100 a second with a burst of 100", func(t *testing.T) {
		c, err := config.LoadFrom[ratelimit.Config](map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if l := c.Limit(); l.Rate != 100 || l.Burst != 100 || l.Period != time.Second {
			t.Fatalf("%+v", l)
		}
	})
	t.Run("rate and burst come from the environment", func(t *testing.T) {
		c, err := config.LoadFrom[ratelimit.Config](map[string]string{"RATE_LIMIT_PER_SECOND": "5", "RATE_LIMIT_BURST": "20"})
		if err != nil {
			t.Fatal(err)
		}
		if l := c.Limit(); l.Rate != 5 || l.Burst != 20 {
			t.Fatalf("%+v", l)
		}
	})
	t.Run("negative values are refused naming the variable", func(t *testing.T) {
		_, err := config.LoadFrom[ratelimit.Config](map[string]string{"RATE_LIMIT_PER_SECOND": "-1"})
		if err == nil || !strings.Contains(err.Error(), "RATE_LIMIT_PER_SECOND") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a rate of 0 or no Redis turns limiting off", func(t *testing.T) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled here
		defer rdb.Close()
		if (ratelimit.Config{PerSecond: 0}).Limiter(rdb, "x", log) != nil || (ratelimit.Config{PerSecond: 5}).Limiter(nil, "x", log) != nil {
			t.Fatal("a limiter without a limit")
		}
		if (ratelimit.Config{PerSecond: 5}).Limiter(rdb, "x", log) == nil {
			t.Fatal("no limiter for a rate and a Redis")
		}
	})
}
