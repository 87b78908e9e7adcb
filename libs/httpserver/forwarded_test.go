package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
)

func TestFromTrustedProxy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
		want    bool
	}{
		{"the loopback peer in TRUSTED_PROXIES", []string{"127.0.0.1/32"}, true},
		{"the loopback peer as a single address", []string{"10.0.0.0/8", "127.0.0.1"}, true},
		{"a peer outside TRUSTED_PROXIES", []string{"10.0.0.0/8"}, false},
		{"no trusted proxies", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := httpserver.Config{PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: 1024,
				ReadHeaderTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
				IdleTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second, TrustedProxies: tc.trusted}
			s := httpserver.New(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), "test")
			s.Public.GET("/trusted", func(c *gin.Context) {
				c.String(http.StatusOK, strconv.FormatBool(httpserver.FromTrustedProxy(c))+" "+c.ClientIP()+" "+c.GetHeader("X-Forwarded-For"))
			})
			start(t, s)
			// With and without forwarding headers of the request's own: the
			// answer is about the peer, and the request keeps its headers.
			for _, xff := range []string{"", "203.0.113.7", "192.0.2.1"} {
				req, _ := http.NewRequest(http.MethodGet, "http://"+s.PublicAddr()+"/trusted", nil)
				client := "127.0.0.1"
				if xff != "" {
					req.Header.Set("X-Forwarded-For", xff)
					if tc.want {
						client = xff
					}
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := strconv.FormatBool(tc.want) + " " + client + " " + xff; string(b) != want {
					t.Fatalf("X-Forwarded-For %q: %q, want %q", xff, b, want)
				}
			}
		})
	}
}
