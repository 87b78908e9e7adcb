package stack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// Options configure Start.
type Options struct {
	// Fixture to import (default deploy/fixtures/demo.json; "-" for none).
	Fixture string
	// Env is extra environment for every service.
	Env map[string]string
	// AdminDatabaseURL is the PostgreSQL server for the services' databases
	// (default: testkit.AdminURL()), e.g. a primary and its standby.
	AdminDatabaseURL string
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Start launches a stack for t and stops it (and drops its databases) when t
// ends. Binaries are built once per test process.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	testkit.NeedsServers(t, "the whole system, end to end")
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "eventreg-bin-")
		if buildErr == nil {
			buildErr = Build(context.Background(), root, buildDir)
		}
	})
	if buildErr != nil {
		t.Fatalf("building services: %v", buildErr)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(buildDir, "bin"), filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	fixture := opts.Fixture
	switch fixture {
	case "":
		fixture = filepath.Join(root, "deploy", "fixtures", "demo.json")
	case "-":
		fixture = ""
	}
	// A port is free when picked and bound only when the service starts: a
	// test process elsewhere on the machine may take it in between. Such a
	// start is tried again with other ports (Launch stops what it started).
	var s *Stack
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		s, err = Launch(ctx, Config{Root: root, Dir: dir, Fixture: fixture, Env: opts.Env, RecreateDatabases: true,
			AdminDatabaseURL: opts.AdminDatabaseURL})
		cancel()
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("starting the stack: %v", err)
		}
		t.Logf("starting the stack: a port was taken meanwhile; trying again with others: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, svc := range s.Services {
				if tail := svc.LogTail(40); tail != "" {
					t.Logf("--- %s log (last lines) ---\n%s", name, tail)
				}
			}
		}
		s.Close()
		s.DropDatabases()
	})
	return s
}

// Command runs `<svc> args...` with the service's environment and returns
// stdout; it fails t on error.
func (s *Stack) Command(t testing.TB, svc string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Services[svc].Run(ctx, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// HTTPClient returns a client that trusts the gateway's certificate.
func (s *Stack) HTTPClient() *http.Client {
	if s.httpClient != nil {
		return s.httpClient
	}
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(s.CertFile); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	s.httpClient = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return s.httpClient
}

// Restart starts a stopped or killed service again and waits until it is ready.
func (svc *Service) Restart(t testing.TB) {
	t.Helper()
	svc.Stop()
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := svc.WaitReady(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
