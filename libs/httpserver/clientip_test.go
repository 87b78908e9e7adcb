package httpserver_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
)

// TestClientAddressFromTrustedProxiesOnly: forwarding headers name the
// client only when the peer is a trusted proxy; a forged header from any
// other peer is ignored and the peer's address is used.
func TestClientAddressFromTrustedProxiesOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
		header  string
		value   string
		want    string
		// more are further lines of the same header, as a proxy that adds
		// its own line (HAProxy's option forwardfor) sends them.
		more []string
	}{
		{"a trusted peer's X-Forwarded-For names the client", []string{"127.0.0.1/32"}, "X-Forwarded-For", "203.0.113.7", "203.0.113.7", nil},
		{"a trusted peer's X-Real-IP names the client", []string{"127.0.0.1"}, "X-Real-IP", "203.0.113.8", "203.0.113.8", nil},
		{"a forged X-Forwarded-For from an untrusted peer is ignored", []string{"10.0.0.0/8"}, "X-Forwarded-For", "203.0.113.7", "127.0.0.1", nil},
		{"a forged X-Real-IP from an untrusted peer is ignored", []string{"10.0.0.0/8"}, "X-Real-IP", "203.0.113.8", "127.0.0.1", nil},
		{"no trusted proxies: always the peer", nil, "X-Forwarded-For", "203.0.113.7", "127.0.0.1", nil},
		{"a client cannot prepend to a trusted chain", []string{"127.0.0.1/32"}, "X-Forwarded-For", "198.51.100.1, 203.0.113.9", "203.0.113.9", nil},
		{"a client's own X-Forwarded-For line does not speak before the line a proxy added", []string{"127.0.0.1/32"}, "X-Forwarded-For", "198.51.100.1", "203.0.113.9", []string{"203.0.113.9"}},
		{"lines are one chain: trusted hops are skipped from the right across them", []string{"127.0.0.1/32", "10.1.2.3"}, "X-Forwarded-For", "198.51.100.1, 203.0.113.9", "203.0.113.9", []string{"10.1.2.3"}},
		{"a client's X-Real-IP does not speak when the proxy sent X-Forwarded-For", []string{"127.0.0.1/32", "10.1.2.3"}, "X-Forwarded-For", "junk, 10.1.2.3", "127.0.0.1", []string{"X-Real-IP: 198.51.100.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newServer(t, nil, func(c *httpserver.Config) { c.TrustedProxies = tc.trusted })
			s.Public.GET("/ip", func(c *gin.Context) { c.String(http.StatusOK, c.ClientIP()) })
			start(t, s)
			req, _ := http.NewRequest(http.MethodGet, "http://"+s.PublicAddr()+"/ip", nil)
			req.Header.Set(tc.header, tc.value)
			for _, v := range tc.more {
				if name, value, ok := strings.Cut(v, ": "); ok {
					req.Header.Add(name, value)
				} else {
					req.Header.Add(tc.header, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != tc.want {
				t.Fatalf("client address %q, want %q", b, tc.want)
			}
		})
	}
}

// TestFromTrustedProxy: FromTrustedProxy tells whether the peer is a
// trusted proxy, whatever forwarding headers the request carries.
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
			s, _ := newServer(t, nil, func(c *httpserver.Config) { c.TrustedProxies = tc.trusted })
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

func TestTrustedProxiesAreChecked(t *testing.T) {
	if err := (httpserver.Config{TrustedProxies: []string{"10.0.0.0/8", " ::1 ", "192.0.2.1"}}).CheckTrustedProxies(); err != nil {
		t.Fatalf("valid list refused: %v", err)
	}
	err := (httpserver.Config{TrustedProxies: []string{"10.0.0.0/8", "gateway"}}).CheckTrustedProxies()
	if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
		t.Fatalf("invalid entry: %v", err)
	}
}
