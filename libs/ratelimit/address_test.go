package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestLimitsEachAddressOfARouteWithoutToken(t *testing.T) {
	e := newEnv(t)
	l := e.limiter(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 3, Burst: 3, Period: time.Minute})
	r := gin.New()
	r.GET("/public", l.AddressMiddleware(), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	from := func(addr, bearer string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/public", nil)
		req.RemoteAddr = addr
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w
	}
	t.Run("an address past its limit gets 429 whatever token it sends", func(t *testing.T) {
		for i := range 3 {
			// A different garbage token on every request: the key is the address.
			if w := from("192.0.2.1:1000", "garbage-"+string(rune('a'+i))); w.Code != http.StatusNoContent {
				t.Fatalf("request %d: %d", i+1, w.Code)
			}
		}
		w := from("192.0.2.1:2000", "")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || w.Header().Get("RateLimit-Limit") != "3" {
			t.Fatalf("4th: %d %v", w.Code, w.Header())
		}
	})
	t.Run("another address has its own budget", func(t *testing.T) {
		if w := from("192.0.2.2:1000", ""); w.Code != http.StatusNoContent {
			t.Fatalf("%d", w.Code)
		}
	})
	t.Run("the addresses of one IPv6 /64 share a budget", func(t *testing.T) {
		for i, a := range []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1"} {
			if w := from(a, ""); w.Code != http.StatusNoContent {
				t.Fatalf("request %d: %d", i+1, w.Code)
			}
		}
		if w := from("[2001:db8::ffff]:1", ""); w.Code != http.StatusTooManyRequests {
			t.Fatalf("a fresh address of the same /64: %d", w.Code)
		}
	})
}

func TestAddressKey(t *testing.T) {
	for _, tc := range []struct{ name, ip, want string }{
		{"an IPv4 address is its own key", "192.0.2.7", "192.0.2.7"},
		{"an IPv4-mapped IPv6 address is the IPv4 address", "::ffff:192.0.2.7", "192.0.2.7"},
		{"an IPv6 address counts under its 64-bit prefix", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"two addresses of one 64-bit prefix share a key", "2001:db8::1", "2001:db8::/64"},
		{"a zone does not make a new key", "2001:db8:0:0:ffff::1%eth0", "2001:db8::/64"},
		{"a link-local address with a zone counts under its prefix", "fe80::1%eth0", "fe80::/64"},
		{"anything else counts under itself", "not-an-ip", "not-an-ip"},
		{"no address counts under itself", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratelimit.AddressKey(tc.ip); got != tc.want {
				t.Errorf("AddressKey(%q) = %q, want %q", tc.ip, got, tc.want)
			}
		})
	}
}
