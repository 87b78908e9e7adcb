package httpserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/jsonbody"
)

// newServer is a server of the tests: every listener on a free loopback
// port, logging to logs (nil: nowhere); edit changes its configuration.
func newServer(t *testing.T, logs io.Writer, edit ...func(*httpserver.Config)) (*httpserver.Server, func()) {
	t.Helper()
	cfg := httpserver.Config{PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: 1024,
		ReadHeaderTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second}
	for _, e := range edit {
		e(&cfg)
	}
	if logs == nil {
		logs = io.Discard
	}
	s := httpserver.New(cfg, slog.New(slog.NewJSONHandler(logs, nil)), "test")
	return s, func() {}
}

func start(t *testing.T, s *httpserver.Server) (context.CancelFunc, chan error) {
	t.Helper()
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestErrorsInTheAPIShape(t *testing.T) {
	var logs strings.Builder
	s, _ := newServer(t, &logs)
	s.Public.GET("/panic", func(c *gin.Context) { panic("secret-internal-detail") })
	s.Public.POST("/echo", func(c *gin.Context) {
		var v map[string]any
		if e := jsonbody.Decode(c, &v, jsonbody.Options{}); e != nil {
			c.AbortWithStatusJSON(e.Status, e.Body())
			return
		}
		c.JSON(200, v)
	})
	start(t, s)
	base := "http://" + s.PublicAddr()

	t.Run("unknown path is a JSON 404", func(t *testing.T) {
		if code, body := do(t, "GET", base+"/nope", ""); code != 404 || !strings.Contains(body, `"resource"`) {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("wrong method is a JSON 405", func(t *testing.T) {
		if code, body := do(t, "DELETE", base+"/echo", ""); code != 405 || !strings.Contains(body, `"resource"`) {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("panic is a 500 with a hash and no detail", func(t *testing.T) {
		code, body := do(t, "GET", base+"/panic", "")
		if code != 500 || !strings.Contains(body, `"hash"`) || strings.Contains(body, "secret-internal-detail") || strings.Contains(body, "goroutine") {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("body over the limit is 413", func(t *testing.T) {
		if code, body := do(t, "POST", base+"/echo", `{"a":"`+strings.Repeat("x", 2000)+`"}`); code != 413 {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("chunked body over the limit is 413", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() { _, _ = pw.Write([]byte(`{"a":"` + strings.Repeat("x", 4000) + `"}`)); pw.Close() }()
		req, _ := http.NewRequest("POST", base+"/echo", pr)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("request log has route, status and the client's address, never the body", func(t *testing.T) {
		do(t, "POST", base+"/echo", `{"password":"hunter2"}`)
		if !strings.Contains(logs.String(), `"route":"/echo"`) || !strings.Contains(logs.String(), `"client_ip":"127.0.0.1"`) ||
			strings.Contains(logs.String(), "hunter2") {
			t.Fatalf("logs: %s", logs.String())
		}
	})
}

func TestReadinessFollowsChecks(t *testing.T) {
	s, _ := newServer(t, nil)
	var mu sync.Mutex
	var failing error = errors.New("postgres down")
	s.AddReadinessCheck("db", func(context.Context) error { mu.Lock(); defer mu.Unlock(); return failing })
	start(t, s)
	ops := "http://" + s.OpsAddr()
	if code, _ := do(t, "GET", ops+"/healthz", ""); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, body := do(t, "GET", ops+"/readyz", ""); code != 503 || !strings.Contains(body, "postgres down") {
		t.Fatalf("readyz %d %s", code, body)
	}
	mu.Lock()
	failing = nil
	mu.Unlock()
	if code, _ := do(t, "GET", ops+"/readyz", ""); code != 200 {
		t.Fatalf("readyz after recovery %d", code)
	}
	if code, body := do(t, "GET", ops+"/metrics", ""); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics %d", code)
	}
}

func TestMetricsCountRoutesNotPaths(t *testing.T) {
	s, _ := newServer(t, nil)
	s.Public.GET("/users/:id", func(c *gin.Context) { c.Status(204) })
	start(t, s)
	for _, id := range []string{"1", "2", "3"} {
		do(t, "GET", "http://"+s.PublicAddr()+"/users/"+id, "")
	}
	_, body := do(t, "GET", "http://"+s.OpsAddr()+"/metrics", "")
	want := `http_server_requests_total{listener="public",method="GET",route="/users/:id",status_class="2xx"} 3`
	if !strings.Contains(body, want) {
		t.Fatalf("metrics lack %s", want)
	}
}

func TestShutdownLetsInFlightRequestsFinish(t *testing.T) {
	s, _ := newServer(t, nil)
	entered := make(chan struct{})
	s.Public.GET("/slow", func(c *gin.Context) {
		close(entered)
		time.Sleep(300 * time.Millisecond)
		c.String(200, "done")
	})
	cancel, done := start(t, s)
	url := "http://" + s.PublicAddr() + "/slow"
	result := make(chan string, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			result <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- string(b)
	}()
	<-entered
	cancel()
	if got := <-result; got != "done" {
		t.Fatalf("in-flight request got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	done <- nil // for the cleanup's receive
	if _, err := http.Get(url); err == nil {
		t.Fatal("server still accepts after shutdown")
	}
}

func TestPprofOnlyWhenEnabledAndOnlyOnOps(t *testing.T) {
	off, _ := newServer(t, nil)
	start(t, off)
	if code, _ := do(t, "GET", "http://"+off.OpsAddr()+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("PPROF_ENABLED unset: ops /debug/pprof/ answered %d, want 404", code)
	}

	on, _ := newServer(t, nil, func(c *httpserver.Config) { c.Pprof = true })
	start(t, on)
	if code, body := do(t, "GET", "http://"+on.OpsAddr()+"/debug/pprof/", ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("ops index: %d %.80q", code, body)
	}
	if code, body := do(t, "GET", "http://"+on.OpsAddr()+"/debug/pprof/heap?debug=1", ""); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("ops heap profile: %d %.80q", code, body)
	}
	if code, _ := do(t, "GET", "http://"+on.OpsAddr()+"/debug/pprof/profile?seconds=1", ""); code != http.StatusOK {
		t.Errorf("ops CPU profile: %d", code)
	}
	for name, addr := range map[string]string{"public": on.PublicAddr(), "internal": on.InternalAddr()} {
		if code, _ := do(t, "GET", "http://"+addr+"/debug/pprof/", ""); code != http.StatusNotFound {
			t.Errorf("%s /debug/pprof/ answered %d, want 404: profiles are on the ops listener only", name, code)
		}
	}
}

// TestOperationsRoutesOnlyOnOps: probes and Prometheus reach the ops
// listener, which has nothing else; the internal listener (the
// service-to-service API) has none of them.
func TestOperationsRoutesOnlyOnOps(t *testing.T) {
	s, _ := newServer(t, nil)
	start(t, s)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := do(t, "GET", "http://"+s.OpsAddr()+path, ""); code != http.StatusOK {
			t.Errorf("ops %s: %d, want 200", path, code)
		}
		for name, addr := range map[string]string{"public": s.PublicAddr(), "internal": s.InternalAddr()} {
			if code, _ := do(t, "GET", "http://"+addr+path, ""); code != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404", name, path, code)
			}
		}
	}
}
