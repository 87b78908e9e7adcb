package resourcetest

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/service"
)

// HTTPConfig is the listeners' configuration of a service under test: every
// listener on a free port of 127.0.0.1 (trusted as a proxy), short timeouts,
// bodies up to bodyLimit, requests bounded by requestTimeout (0: the
// default).
func HTTPConfig(bodyLimit int64, requestTimeout time.Duration) httpserver.Config {
	return httpserver.Config{
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: bodyLimit,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second, RequestTimeout: requestTimeout,
		TrustedProxies: []string{"127.0.0.1/32"}}
}

// Serve runs the service name the way serve does, until t ends:
// service.StartLogging (its log written to logs), mount (the service's
// server.Mount with its configuration), the listeners. Cleanups t had before
// run after the service stopped.
func Serve(t testing.TB, name string, base service.Base, set migrations.Set, logs io.Writer, mount func(context.Context, *service.Runtime) error) *service.Runtime {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt, err := service.StartLogging(ctx, name, base, set, logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := mount(ctx, rt); err != nil {
		t.Fatal(err)
	}
	if err := rt.Server.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	t.Cleanup(func() {
		// Connections the client dialled for a burst of requests but never
		// used would hold the server's shutdown for 5 s (net/http waits that
		// long for a request on a new connection).
		http.DefaultClient.CloseIdleConnections()
		cancel()
		<-done
	})
	return rt
}

// Send sends req with the default client and reads the whole answer,
// failing t when either fails.
func Send(t testing.TB, req *http.Request) Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
