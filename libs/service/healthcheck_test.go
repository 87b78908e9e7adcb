package service

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// readyServer answers /readyz with status and body; any other path is a 404,
// so a check asking the wrong path fails.
func readyServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// wildcard turns 127.0.0.1:port into ":port", the way OPS_ADDR is set.
func wildcard(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return ":" + port
}

// runHealthcheck runs `svc healthcheck` as the binaries do, with OPS_ADDR set.
func runHealthcheck(t *testing.T, opsAddr string, args ...string) error {
	t.Helper()
	t.Setenv("OPS_ADDR", opsAddr)
	root := NewRoot("svc", "test")
	root.AddCommand(HealthcheckCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"healthcheck"}, args...))
	return root.ExecuteContext(context.Background())
}

func TestHealthcheck(t *testing.T) {
	t.Run("ready: 200 on the wildcard listen address is healthy", func(t *testing.T) {
		addr := readyServer(t, http.StatusOK, `{"status":"ready"}`)
		if err := runHealthcheck(t, wildcard(t, addr)); err != nil {
			t.Errorf("healthcheck against a 200: %v", err)
		}
	})

	t.Run("unready: 503 fails with the failed checks on one line", func(t *testing.T) {
		addr := readyServer(t, http.StatusServiceUnavailable,
			`{"status":"unready","failed":{"redis":"dial tcp: i/o timeout","postgresql":"connection\nrefused"}}`)
		err := runHealthcheck(t, wildcard(t, addr))
		if err == nil {
			t.Fatal("healthcheck against a 503 succeeded")
		}
		msg := err.Error()
		for _, want := range []string{"503", "unready", "postgresql: connection refused", "redis: dial tcp: i/o timeout"} {
			if !strings.Contains(msg, want) {
				t.Errorf("reason %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("reason is not one line: %q", msg)
		}
	})

	t.Run("draining: any answer but 200 fails", func(t *testing.T) {
		for _, status := range []int{http.StatusNoContent, http.StatusMovedPermanently, http.StatusNotFound, http.StatusInternalServerError} {
			addr := readyServer(t, status, `{"status":"draining"}`)
			if err := runHealthcheck(t, addr); err == nil {
				t.Errorf("healthcheck against a %d succeeded", status)
			}
		}
	})

	t.Run("nothing listening fails at once", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		start := time.Now()
		err = runHealthcheck(t, wildcard(t, addr))
		if err == nil {
			t.Fatal("healthcheck with nothing listening succeeded")
		}
		if msg := err.Error(); !strings.Contains(msg, "refused") || strings.Contains(msg, "\n") || strings.Count(msg, "/readyz") != 1 {
			t.Errorf("reason %q: want one line naming the URL once and the refused connection", msg)
		}
		if time.Since(start) > time.Second {
			t.Errorf("took %s to notice nothing listens", time.Since(start))
		}
	})

	t.Run("no answer fails within the timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		start := time.Now()
		err := runHealthcheck(t, srv.Listener.Addr().String(), "--timeout", "300ms")
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("healthcheck against a server that never answers: %v", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("took %s with a 300ms timeout", took)
		}
	})
}

func TestReadinessAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":               "127.0.0.1:9091",
		":9091":          "127.0.0.1:9091",
		"0.0.0.0:9191":   "127.0.0.1:9191",
		"[::]:9090":      "127.0.0.1:9090",
		"10.0.0.5:9090":  "10.0.0.5:9090",
		"localhost:9090": "localhost:9090",
		"[::1]:9090":     "[::1]:9090",
	} {
		got, err := readinessAddr(in)
		if err != nil || got != want {
			t.Errorf("readinessAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"9090", "host", "host:"} {
		if got, err := readinessAddr(bad); err == nil {
			t.Errorf("readinessAddr(%q) = %q, want an error", bad, got)
		}
	}
}
