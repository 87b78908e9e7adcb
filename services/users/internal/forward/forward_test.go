package forward_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/users/internal/forward"
)

// seen is what a fake owner received.
type seen struct {
	method, path, rawQuery, host string
	header                       http.Header
	body                         string
}

// owner is a fake owning service on a real listener.
func owner(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(h))
	t.Cleanup(srv.Close)
	return srv
}

func proxy(t *testing.T, base string, opts forward.Options) *httptest.Server {
	t.Helper()
	p, err := forward.New("volunteers", base, slog.New(slog.NewJSONHandler(io.Discard, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

// noRedirects sends requests as written: no Accept-Encoding of its own.
var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func do(t *testing.T, req *http.Request) (*http.Response, string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, string(b), time.Since(start)
}

// checkUnavailable asserts the API's documented 503 (docs/api.md, libs/apierror).
func checkUnavailable(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	var doc struct {
		Errors map[string]struct {
			Message string `json:"message"`
			Hash    string `json:"hash"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("503 body is not JSON: %q", body)
	}
	srv, ok := doc.Errors["server"]
	if resp.StatusCode != http.StatusServiceUnavailable || len(doc.Errors) != 1 || !ok ||
		srv.Message != "The volunteers service is temporarily unavailable; try again shortly." || len(srv.Hash) != 16 {
		t.Fatalf("want the API's 503, got %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") != "1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("503 headers: %v", resp.Header)
	}
}

func TestForwardsTheRequestAsItCame(t *testing.T) {
	var got atomic.Pointer[seen]
	own := owner(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(&seen{method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, host: r.Host, header: r.Header.Clone(), body: string(b)})
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="volunteer:read"`)
		w.Header().Set("RateLimit-Limit", "100")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"errors":{"access":{"message":"The token lacks the scope volunteer:read.","code":3000}}}`)
	})
	front := proxy(t, own.URL, forward.Options{})

	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		t.Run(method, func(t *testing.T) {
			body := ""
			if method != http.MethodGet {
				body = `{"a":"é"}`
			}
			req, _ := http.NewRequest(method, front.URL+"/api/v0/users/1001/volunteer?x=1&y=a%20b&x=2", strings.NewReader(body))
			req.Host = "api.example.org"
			req.Header.Set("Authorization", "Bearer not-checked-here")
			req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			req.Header.Set("X-Request-Id", "req-1")
			req.Header.Set("X-Forwarded-For", "198.51.100.7")
			req.Header.Set("X-Forwarded-Host", "api.example.org")
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Real-IP", "198.51.100.7")
			req.Header.Set("Content-Type", "application/json")
			resp, answer, _ := do(t, req)

			s := got.Load()
			if s == nil {
				t.Fatal("the owner was not called")
			}
			if s.method != method || s.path != "/api/v0/users/1001/volunteer" || s.rawQuery != "x=1&y=a%20b&x=2" || s.body != body || s.host != "api.example.org" {
				t.Errorf("owner got %s %s?%s host %s body %q", s.method, s.path, s.rawQuery, s.host, s.body)
			}
			for h, want := range map[string]string{
				"Authorization": "Bearer not-checked-here", "Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
				"X-Request-Id": "req-1", "X-Forwarded-For": "198.51.100.7", "X-Forwarded-Host": "api.example.org",
				"X-Forwarded-Proto": "https", "X-Real-Ip": "198.51.100.7", "Content-Type": "application/json",
			} {
				if v := s.header.Values(h); len(v) != 1 || v[0] != want {
					t.Errorf("owner got %s %q, want %q as sent", h, v, want)
				}
			}
			if v := s.header.Get("Accept-Encoding"); v != "" {
				t.Errorf("the proxy added Accept-Encoding %q", v)
			}

			if resp.StatusCode != http.StatusForbidden || answer != `{"errors":{"access":{"message":"The token lacks the scope volunteer:read.","code":3000}}}` {
				t.Errorf("client got %d %s", resp.StatusCode, answer)
			}
			for h, want := range map[string]string{
				"WWW-Authenticate": `Bearer error="insufficient_scope", scope="volunteer:read"`, "RateLimit-Limit": "100",
				"Content-Type": "application/json; charset=utf-8",
			} {
				if v := resp.Header.Get(h); v != want {
					t.Errorf("client got %s %q, want %q", h, v, want)
				}
			}
			if c := resp.Header.Values("Set-Cookie"); strings.Join(c, ";") != "a=1;b=2" {
				t.Errorf("client got Set-Cookie %q", c)
			}
		})
	}
}

func TestOwnerAnswersPassUnchanged(t *testing.T) {
	const unavailable = `{"errors":{"server":{"message":"The database is temporarily unavailable; try again shortly.","hash":"0011223344556677"}}}`
	own := owner(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v0/users/1/volunteer":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, unavailable)
		case "/api/v0/users/2/volunteer":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			t.Error("the proxy followed a redirect")
		}
	})
	front := proxy(t, own.URL, forward.Options{})

	t.Run("the owner's own 503 is passed on, not replaced", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v0/users/1/volunteer", nil)
		resp, body, _ := do(t, req)
		if resp.StatusCode != 503 || body != unavailable || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("a redirect is passed on, never followed", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v0/users/2/volunteer", nil)
		resp, _, _ := do(t, req)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" {
			t.Fatalf("%d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

func TestOwnerThatCannotAnswerIs503(t *testing.T) {
	t.Run("nothing listens", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		front := proxy(t, "http://"+addr, forward.Options{})
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v0/users/1001/volunteer", nil)
		resp, body, took := do(t, req)
		checkUnavailable(t, resp, body)
		if took > time.Second {
			t.Errorf("took %v", took)
		}
	})
	t.Run("the owner hangs past the timeout", func(t *testing.T) {
		release := make(chan struct{})
		own := owner(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		front := proxy(t, own.URL, forward.Options{Timeout: 300 * time.Millisecond})
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v0/users/1001/volunteer", nil)
		resp, body, took := do(t, req)
		checkUnavailable(t, resp, body)
		if took < 300*time.Millisecond || took > 2*time.Second {
			t.Errorf("answered after %v; want just after the 300ms timeout", took)
		}
	})
	t.Run("the owner announces a body past the limit", func(t *testing.T) {
		own := owner(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte("x"), 2048))
		})
		front := proxy(t, own.URL, forward.Options{MaxResponseBytes: 1024})
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v0/users/1001/volunteer", nil)
		resp, body, _ := do(t, req)
		checkUnavailable(t, resp, body)
	})
}

func TestOwnerStreamingPastTheLimitIsCut(t *testing.T) {
	own := owner(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range 64 { // 64 KiB, no Content-Length
			_, _ = w.Write(bytes.Repeat([]byte("x"), 1024))
			w.(http.Flusher).Flush()
		}
	})
	front := proxy(t, own.URL, forward.Options{MaxResponseBytes: 4096})
	resp, err := noRedirects.Get(front.URL + "/api/v0/users/1001/volunteer")
	if err != nil {
		return // cut before the headers: also never more than the limit
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || n > 4096 {
		t.Fatalf("passed on %d bytes (error %v); want the connection cut at 4096", n, err)
	}
}

func TestOwnerURLMustBeAnOrigin(t *testing.T) {
	for _, bad := range []string{"volunteers:8080", "ftp://volunteers", "http://", "http://volunteers:8080/api", "http://volunteers:8080?x=1"} {
		if _, err := forward.New("volunteers", bad, slog.New(slog.NewJSONHandler(io.Discard, nil)), forward.Options{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := forward.New("volunteers", "http://volunteers:8080/", slog.New(slog.NewJSONHandler(io.Discard, nil)), forward.Options{}); err != nil {
		t.Errorf("an origin with a trailing slash: %v", err)
	}
}
