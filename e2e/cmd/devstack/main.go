// Command devstack runs the whole system on this machine for development
// (`make run`): PostgreSQL and Redis (started here unless given), every
// service, and nginx as the gateway, with the demo data loaded. It prints
// where to point a browser and a client, and stops everything on Ctrl-C or
// SIGTERM. `devstack import FILE` loads a fixture into the running system.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/testkit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		os.Exit(1)
	}
}

type secrets struct {
	KeyEncryptionKey string `json:"keyEncryptionKey"`
	ClientSecretKey  string `json:"clientSecretKey"`
	CursorKey        string `json:"cursorKey"`
	InternalAuthKey  string `json:"internalAuthKey"`
}

func run() error {
	fresh := flag.Bool("fresh", false, "drop and recreate the databases before starting")
	fixturePath := flag.String("fixture", "deploy/fixtures/demo.json", "fixture to import at start (empty: none)")
	httpPort := flag.Int("http-port", 8080, "gateway HTTP port on 127.0.0.1")
	tlsPort := flag.Int("tls-port", 8443, "gateway TLS port on 127.0.0.1")
	basePort := flag.Int("base-port", 8101, "first service port (auth public; internal ports are +1000, ops ports +2000)")
	flag.Parse()

	root, err := stack.FindRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".run")
	if flag.Arg(0) == "import" {
		if flag.NArg() != 2 {
			return errors.New("usage: devstack import FILE")
		}
		return importInto(dir, flag.Arg(1))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	admin, pg, err := postgres(ctx, dir)
	if err != nil {
		return err
	}
	if pg != nil {
		defer pg.Stop()
	}
	sec, err := loadSecrets(filepath.Join(dir, "secrets.json"))
	if err != nil {
		return err
	}
	fx := ""
	if *fixturePath != "" {
		fx = *fixturePath
		if !filepath.IsAbs(fx) {
			fx = filepath.Join(root, fx)
		}
	}
	fmt.Println("starting the event registration system (Ctrl-C stops it)")
	s, err := stack.Launch(ctx, stack.Config{
		Root: root, Dir: dir, Build: true, AdminDatabaseURL: admin, DatabasePrefix: "eventreg", RecreateDatabases: *fresh,
		RedisURL: os.Getenv("REDIS_URL"), RedisPort: 6390, GatewayHTTPPort: *httpPort, GatewayTLSPort: *tlsPort, BasePort: *basePort,
		Fixture: fx, KeyEncryptionKey: sec.KeyEncryptionKey, ClientSecretKey: sec.ClientSecretKey, CursorKey: sec.CursorKey, InternalAuthKey: sec.InternalAuthKey,
		Stdout: os.Stdout, Env: devEnv(),
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := writeEnvFiles(dir, s); err != nil {
		return err
	}
	printWelcome(s, fx)
	<-ctx.Done()
	fmt.Println("\nstopping ...")
	return nil
}

// postgres returns an admin DSN: EVENTREG_ADMIN_DATABASE_URL, the local
// default server, or a server started in .run/pgdata (kept between runs).
func postgres(ctx context.Context, dir string) (string, *testkit.Process, error) {
	if u := os.Getenv("EVENTREG_ADMIN_DATABASE_URL"); u != "" {
		return u, nil, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := testkit.Poll(pctx, time.Second, func(c context.Context) error { return testkit.PingPostgres(c, testkit.DefaultAdminURL) }); err == nil {
		fmt.Println("using PostgreSQL at 127.0.0.1:5432")
		return testkit.DefaultAdminURL, nil, nil
	}
	fmt.Println("no PostgreSQL at 127.0.0.1:5432: starting one on 127.0.0.1:5433 (data in .run/pgdata)")
	p, dsn, err := testkit.StartPostgres(ctx, filepath.Join(dir, "pgdata"), 5433)
	return dsn, p, err
}

func loadSecrets(path string) (secrets, error) {
	var s secrets
	rnd := func() string { b := make([]byte, 32); _, _ = rand.Read(b); return base64.StdEncoding.EncodeToString(b) }
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("reading %s: %w", path, err)
		}
		if s.InternalAuthKey != "" {
			return s, nil
		}
		s.InternalAuthKey = rnd() // a .run from before service tokens: keep the rest
	} else {
		s = secrets{KeyEncryptionKey: rnd(), ClientSecretKey: rnd(), CursorKey: rnd(), InternalAuthKey: rnd()}
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	return s, os.WriteFile(path, b, 0o600)
}

func writeEnvFiles(dir string, s *stack.Stack) error {
	envDir := filepath.Join(dir, "env")
	if err := os.MkdirAll(envDir, 0o700); err != nil {
		return err
	}
	for name, svc := range s.Services {
		if err := os.WriteFile(filepath.Join(envDir, name+".env"), []byte(strings.Join(svc.Env(), "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// importInto runs each service's import with the environment of the running system.
func importInto(dir, file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	if _, err := fixture.Load(abs); err != nil {
		return err
	}
	for _, name := range stack.ServiceNames {
		envFile := filepath.Join(dir, "env", name+".env")
		b, err := os.ReadFile(envFile)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		bin := filepath.Join(dir, "bin", name)
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s: is the system running (make run)? %w", name, err)
		}
		fmt.Printf("importing %s into %s\n", filepath.Base(abs), name)
		if err := runWithEnv(bin, strings.Split(strings.TrimSpace(string(b)), "\n"), "import", abs); err != nil {
			return err
		}
	}
	return nil
}

func printWelcome(s *stack.Stack, fixturePath string) {
	var doc *fixture.Document
	if fixturePath != "" {
		doc, _ = fixture.Load(fixturePath)
	}
	gw := s.GatewayURL
	fmt.Printf(`
The system is up.

  Gateway (HTTP):   %s
  Gateway (TLS):    %s   (self-signed certificate: %s)
  API document:     %s/api/docs
  Server metadata:  %s/.well-known/oauth-authorization-server
  Logs:             %s/logs/

`, gw, s.GatewayTLSURL, s.CertFile, gw, gw, s.Dir)
	if doc != nil {
		fmt.Println("Demo clients:")
		for _, c := range doc.Clients {
			secret := "(generated at import)"
			if c.Secret != nil {
				secret = *c.Secret
			}
			fmt.Printf("  %-4d %-20s kind=%-7s secret=%s scopes=%s\n", c.ID, c.Name, c.Kind, secret, strings.Join(c.Scopes, " "))
			if len(c.RedirectURIs) > 0 {
				fmt.Printf("       redirect URIs: %s\n", strings.Join(c.RedirectURIs, " "))
			}
		}
		fmt.Println("\nDemo users (username / password):")
		for _, u := range doc.Users {
			if u.Password != nil {
				fmt.Printf("  %-8s %q\n", u.Username, *u.Password)
			}
		}
		for _, c := range doc.Clients {
			if c.Kind == "service" && c.Secret != nil {
				fmt.Printf(`
Try it (a service token, then a user):
  TOKEN=$(curl -s %s/api/oauth/token -u %d:%s \
            -d grant_type=client_credentials -d scope=user:read | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
  curl -s %s/api/v0/users/1001 -H "Authorization: Bearer $TOKEN"
`, gw, c.ID, *c.Secret, gw)
				break
			}
		}
		for _, c := range doc.Clients {
			if c.Kind == "service" && c.Secret != nil && slices.Contains(c.Scopes, "vendor:read") {
				fmt.Printf(`
Dealers (vendors), a page of 2:
  TOKEN=$(curl -s %s/api/oauth/token -u %d:%s \
            -d grant_type=client_credentials -d scope=vendor:read | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
  curl -s %s/api/v0/dealers/search -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"limit": 2}'
`, gw, c.ID, *c.Secret, gw)
				break
			}
		}
		for _, c := range doc.Clients {
			if c.Kind == "obo" && len(c.RedirectURIs) > 0 {
				fmt.Printf(`
Sign in as a user (browser):
  %s/oauth/authorize?client_id=%d&response_type=code&redirect_uri=%s&scope=pii:basic+pii:email&state=xyz
`, gw, c.ID, c.RedirectURIs[0])
				break
			}
		}
	}
	fmt.Println("\nPress Ctrl-C to stop.")
}

// devEnv is the local system's extra environment: webhooks of the apps
// allowed private targets (the demo fixture allows 501) may reach a
// receiver on this machine (WEBHOOK_ALLOWED_NETWORKS, unless set), and
// REDIS_CLUSTER passes on to every service, so that
// `REDIS_URL=redis://seed:6379?addr=… REDIS_CLUSTER=true make run` runs the
// system against a Redis Cluster (a Sentinel URL needs nothing more).
func devEnv() map[string]string {
	env := map[string]string{"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128"}
	for _, k := range []string{"REDIS_CLUSTER", "WEBHOOK_ALLOWED_NETWORKS"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return env
}
