// Package authtest stands auth up for tests, one way: Start runs the service in-process as serve wires it (server.Mount over a throwaway PostgreSQL database and Redis, with a users-service double), NewPool gives a store's tests a migrated database, and the API tests' requests, webhook receivers and events are here.
package authtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
	"github.com/eventreg/eventreg/services/auth/internal/config"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
	"github.com/eventreg/eventreg/services/auth/internal/server"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/migrations"
)

// Demo clients used by the tests (the same as deploy/fixtures/demo.json).
const (
	ServiceID     = "501"
	ServiceSecret = "a-long-random-demo-secret-of-at-least-32-chars"
	ReaderID      = "504"
	ReaderSecret  = "a-fourth-long-random-demo-secret-of-32-chars"
	BadgeID       = "502" // obo: pii:basic pii:email pii:address pii:phone
	BadgeSecret   = "another-long-random-demo-secret-of-32-chars"
	StaffID       = "503" // obo: pii:basic pii:email user:read registration:read
	StaffSecret   = "a-third-long-random-demo-secret-of-32-chars"
	RedirectURI   = "http://127.0.0.1:9999/callback"
	PostLogoutURI = "http://127.0.0.1:9999/signed-out" // the wiki's post-logout redirect URI
	WikiID        = "505"                              // obo, OpenID Connect (RS256): openid profile email phone address
	WikiSecret    = "a-fifth-long-random-demo-secret-of-32-chars"
	ForumID       = "506" // obo, OpenID Connect (ES256 ID tokens): openid profile email
	ForumSecret   = "a-sixth-long-random-demo-secret-of-32-chars"
)

// Clients is the clients section the tests import.
func Clients() []fixture.Client {
	s := func(v string) *string { return &v }
	// The OBO apps play apps written for the real API, which send no PKCE.
	noPKCE := false
	// The service apps' webhook receivers in the tests run on 127.0.0.1.
	private := true
	return []fixture.Client{
		{ID: 501, Name: "Volunteer Tracker", Description: "Schedules volunteer shifts", Kind: "service", Secret: s(ServiceSecret),
			Scopes: []string{"user:read", "user:roles:update", "volunteer:read", "registration:read", "webhook:manage"}, WebhookPrivateTargets: &private},
		{ID: 502, Name: "Con Badge Printer", Description: "Prints badges for you", Kind: "obo", Secret: s(BadgeSecret),
			RedirectURIs: []string{RedirectURI}, Scopes: []string{"pii:basic", "pii:email", "pii:address", "pii:phone"}, RequirePKCE: &noPKCE},
		{ID: 503, Name: "Staff Console", Description: "Lets staff look people up", Kind: "obo", Secret: s(StaffSecret),
			RedirectURIs: []string{RedirectURI, "http://localhost:9999/staff/callback"}, Scopes: []string{"pii:basic", "pii:email", "user:read", "registration:read"},
			RequirePKCE: &noPKCE},
		{ID: 504, Name: "Registration Reader", Description: "Reads registrations only", Kind: "service", Secret: s(ReaderSecret),
			Scopes: []string{"registration:read"}, WebhookPrivateTargets: &private},
		// OpenID Connect relying parties, sending PKCE as their libraries do.
		{ID: 505, Name: "Convention Wiki", Description: "Signs you in to the wiki", Kind: "obo", Secret: s(WikiSecret),
			RedirectURIs: []string{RedirectURI}, Scopes: []string{"openid", "profile", "email", "phone", "address"},
			PostLogoutRedirectURIs: []string{PostLogoutURI}, IDTokenAlg: s("RS256")},
		{ID: 506, Name: "Convention Forum", Description: "Signs you in to the forum", Kind: "obo", Secret: s(ForumSecret),
			RedirectURIs: []string{RedirectURI}, Scopes: []string{"openid", "profile", "email"}, IDTokenAlg: s("ES256")},
	}
}

// Server is a running auth service.
type Server struct {
	URL         string // public listener (also the issuer)
	InternalURL string
	OpsURL      string // probes and metrics
	// Peer signs calls to the internal listener as a service holding the
	// deployment's key would (Internal sends them).
	Peer      *servicetoken.Signer
	Config    config.Serve
	Pool      *pgxpool.Pool
	Redis     redis.UniversalClient
	RedisProc *testkit.Process
	redisDir  string
	redisPort int
	Users     *UsersDouble
	App       *server.App
	Clients   *client.Service
	Logs      *testkit.SyncBuffer
	// Routes are the public routes auth registered.
	Routes []gin.RouteInfo
	cancel context.CancelFunc
}

// Options tune Start.
type Options struct {
	// Env overrides configuration variables.
	Env map[string]string
	// Users of the double (default Alice and Bob).
	Users []User
}

// database creates a fresh database for t migrated to auth's schema, and
// returns its DSN; it skips the test under -short.
func database(t testing.TB) string {
	t.Helper()
	dsn := testkit.NewDatabase(t)
	if err := migrations.Set().Up(dsn); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return dsn
}

// NewPool returns a pool on a fresh database migrated to auth's schema,
// holding no client; both are gone when t ends. It skips the test under
// -short.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	_, pool := resourcetest.NewPool(t, migrations.Set())
	return pool
}

// Start runs the auth service for t with the demo clients imported.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dsn := database(t)
	redisDir := t.TempDir()
	var (
		redisPort int
		proc      *testkit.Process
		redisURL  string
		err       error
	)
	for attempt := 0; attempt < 5; attempt++ { // a port picked free may be taken before redis-server binds it
		if redisPort, err = testkit.FreePort(); err != nil {
			t.Fatal(err)
		}
		if proc, redisURL, err = testkit.StartRedis(context.Background(), redisDir, redisPort, true); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Stop() })
	users := opts.Users
	if users == nil {
		users = []User{Alice, Bob}
	}
	double := NewUsersDouble(t, users...)
	kek := make([]byte, 32)
	_, _ = rand.Read(kek)
	env := map[string]string{
		"DATABASE_URL": dsn, "REDIS_URL": redisURL, "AUTH_ISSUER": "http://issuer.invalid",
		"KEY_ENCRYPTION_KEY": base64.StdEncoding.EncodeToString(kek), "CLIENT_SECRET_KEY": "test-client-secret-key-of-32-characters!",
		"USERS_INTERNAL_URL": double.URL, "PUBLIC_ADDR": "127.0.0.1:0", "INTERNAL_ADDR": "127.0.0.1:0", "OPS_ADDR": "127.0.0.1:0",
		"INTERNAL_AUTH_KEY":   resourcetest.InternalAuth.Key,
		"LOGIN_FAILURE_DELAY": "10ms", "SHUTDOWN_TIMEOUT": "2s",
	}
	for k, v := range opts.Env {
		env[k] = v
	}
	cfg, err := config.LoadFrom[config.Serve](env)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.SyncBuffer{}
	cfg.LogLevel = "debug"
	ctx, cancel := context.WithCancel(context.Background())
	// The production wiring: the runtime serve builds, then Mount.
	rt, err := service.StartLogging(ctx, "auth", cfg.Base, migrations.Set(), logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := rt.Server.Listen(); err != nil {
		cancel()
		t.Fatal(err)
	}
	// The issuer must be the public URL, as apps reach it.
	cfg.Issuer = "http://" + rt.Server.PublicAddr()
	app, err := server.Mount(ctx, cfg, rt)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	s := &Server{URL: cfg.Issuer, InternalURL: "http://" + rt.Server.InternalAddr(), OpsURL: "http://" + rt.Server.OpsAddr(),
		Peer: servicetoken.NewSigner(resourcetest.InternalAuth, "users"), Config: cfg, Pool: rt.Pool, Redis: app.Redis, RedisProc: proc,
		Users: double, App: app, Logs: logs, Routes: rt.Server.Public.Routes(), cancel: cancel, redisDir: redisDir, redisPort: redisPort,
		Clients: client.NewService(clientdb.New(rt.Pool), clientsecret.NewHasher([]byte(cfg.ClientSecretKey)), 0)}
	// As the CLI wires it with REDIS_URL: changes revoke the client's tokens.
	s.Clients.SetTokenRevoker(refreshdb.ClientTokens{Denylist: refreshdb.NewDenylist(app.Redis, cfg.AccessTokenTTL), Grace: cfg.ClientCacheTTL + time.Second})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if _, err := s.Clients.Import(ctx, Clients()); err != nil {
		t.Fatalf("importing clients: %v", err)
	}
	if _, err := app.Webhooks.ImportPrivateTargets(ctx, Clients()); err != nil {
		t.Fatalf("importing the clients' webhook private targets: %v", err)
	}
	if err := testkit.Poll(ctx, 10*time.Second, func(ctx context.Context) error { return app.Keys.Ready(ctx) }); err != nil {
		t.Fatal(err)
	}
	return s
}

// StopRedis stops Redis (SIGTERM); KillRedis crashes it.
func (s *Server) StopRedis() { _ = s.RedisProc.Stop() }

// KillRedis stops Redis at once, as a crash would.
func (s *Server) KillRedis() { s.RedisProc.Kill() }

// StartRedis starts Redis again on the same port with the same data directory.
func (s *Server) StartRedis(t testing.TB) {
	t.Helper()
	proc, _, err := testkit.StartRedis(context.Background(), s.redisDir, s.redisPort, true)
	if err != nil {
		t.Fatal(err)
	}
	s.RedisProc = proc
	t.Cleanup(func() { _ = proc.Stop() })
}

// KeyStatuses returns the state of every signing key now.
func (s *Server) KeyStatuses(t testing.TB) []signing.Status {
	t.Helper()
	var out []signing.Status
	rows, err := s.Pool.Query(context.Background(), `SELECT kid, activates_at, created_at FROM signing_keys`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []signing.Key
	for rows.Next() {
		var k signing.Key
		if err := rows.Scan(&k.KID, &k.ActivatesAt, &k.CreatedAt); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	out = signing.Describe(keys, time.Now(), s.Config.AccessTokenTTL)
	return out
}

// Internal sends a request to the internal listener with a service token
// for auth, as a peer service would; contentType is set when body is not nil.
func (s *Server) Internal(t testing.TB, method, path, contentType string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.InternalURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	tok, err := s.Peer.Token("auth")
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
