package userapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokentest"
	"github.com/eventreg/eventreg/libs/volunteersclient"
	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/server"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
	"github.com/eventreg/eventreg/services/users/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// keys signs tokens as the auth service would, with a key served from a
// test JWKS (libs/tokentest): sub is a user id (OBO) or "client:<id>".
type keys struct{ srv *tokentest.Server }

func (k *keys) token(t *testing.T, sub, scope string, exp time.Time) string {
	t.Helper()
	return k.srv.Sign(t, sub, exp, strings.Fields(scope)...)
}

func (k *keys) service(t *testing.T, scope string) string {
	return k.token(t, "client:501", scope, time.Now().Add(time.Hour))
}

func (k *keys) obo(t *testing.T, userID, scope string) string {
	return k.token(t, userID, scope, time.Now().Add(time.Hour))
}

// volunteers is a test double of the volunteers service's internal API.
type volunteers struct {
	mu     sync.Mutex
	status map[string]volunteersclient.Status
	srv    *httptest.Server
}

func newVolunteers(t *testing.T) *volunteers {
	v := &volunteers{status: map[string]volunteersclient.Status{"1003": {IsVolunteer: true, IsDepartmentLead: true}, "1002": {IsVolunteer: true}}}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/internal/users/"), "/volunteer-status")
		v.mu.Lock()
		st := v.status[id]
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

// env is a running users service: real engines on real listeners over a
// real database holding the demo fixture.
type env struct {
	pool      *pgxpool.Pool
	keys      *keys
	public    string
	internal  string
	validator *apispec.Validator
	logs      *testkit.SyncBuffer
	routes    []gin.RouteInfo      // the public routes the service registered
	peer      *servicetoken.Signer // signs as a peer service holding the key
}

type envOptions struct {
	volunteersURL string // default: a test double
	databaseURL   string // default: a new database holding the demo fixture
	redisURL      string // rate limiting with rateLimit when set
	rateLimit     ratelimit.Config
	passwordSlots int // PASSWORD_CHECKS; default 2
	// requestTimeout is the server's REQUEST_TIMEOUT; default httpserver's.
	requestTimeout time.Duration
	// owners are the public listeners of volunteers and registrations, by
	// name; default: a stand-in that answers 200 naming itself.
	owners map[string]string
	// authURL is AUTH_INTERNAL_URL (default none: no relay, no notices told).
	authURL string
	// conventionID is CONVENTION_ID (default usertest.ConventionID).
	conventionID string
}

// newEnv runs the users service the way serve does (service.StartLogging,
// then server.Mount) with a configuration pointing at the test's database,
// a test JWKS and doubles of the other services.
func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	var pool *pgxpool.Pool
	dsn := opts.databaseURL
	if dsn != "" {
		var err error
		if pool, err = pgdb.Open(context.Background(), dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
	} else {
		pool, dsn = usertest.NewPool(t)
		usertest.LoadDemo(t, pool)
	}
	e := &env{pool: pool, keys: &keys{srv: tokentest.New(t)}, logs: &testkit.SyncBuffer{}}
	if opts.volunteersURL == "" {
		opts.volunteersURL = newVolunteers(t).srv.URL
	}
	owners := map[string]string{}
	for _, name := range []string{"volunteers", "registrations"} {
		if owners[name] = opts.owners[name]; owners[name] == "" {
			stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, name) }))
			t.Cleanup(stand.Close)
			owners[name] = stand.URL
		}
	}
	cfg := config.Serve{
		Base: service.Base{DatabaseURL: dsn, LogLevel: "info", Config: httpserver.Config{
			PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: 1 << 20,
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			IdleTimeout: 30 * time.Second, ShutdownTimeout: 5 * time.Second, RequestTimeout: opts.requestTimeout,
			TrustedProxies: []string{"127.0.0.1/32"}}, InternalAuth: resourcetest.InternalAuth},
		Resource: service.Resource{AuthIssuer: tokentest.Issuer, AuthJWKSURL: e.keys.srv.JWKSURL, TokenAudience: tokentest.Audience,
			TokenLeeway: 5 * time.Second, JWKSRefresh: 5 * time.Minute, RevocationPoll: time.Second,
			CursorKey: "a-cursor-key-of-at-least-32-bytes-long", ConventionID: cmp.Or(opts.conventionID, usertest.ConventionID),
			RedisURL: opts.redisURL, RateLimit: opts.rateLimit},
		VolunteersInternalURL: opts.volunteersURL,
		VolunteersPublicURL:   owners["volunteers"], RegistrationsPublicURL: owners["registrations"],
		PasswordChecks: cmp.Or(opts.passwordSlots, 2),
	}
	cfg.AuthInternalURL = opts.authURL
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := service.StartLogging(ctx, "users", cfg.Base, migrations.Set(), e.logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Mount(ctx, cfg, rt); err != nil {
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
		for _, secret := range []string{"correct horse battery staple", "bob demo password 2026"} {
			if strings.Contains(e.logs.String(), secret) {
				t.Errorf("a password appears in the logs")
			}
		}
	})
	e.public, e.internal = "http://"+rt.Server.PublicAddr(), "http://"+rt.Server.InternalAddr()
	e.peer = servicetoken.NewSigner(resourcetest.InternalAuth, "auth")
	e.routes = rt.Server.Public.Routes()
	if e.validator, err = apispec.NewValidator(); err != nil {
		t.Fatal(err)
	}
	return e
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", r.body)
	}
	return m
}

// errorOf returns the category and message of an error body.
func (r response) errorOf(t *testing.T) (string, string, float64) {
	t.Helper()
	errs, _ := r.json(t)["errors"].(map[string]any)
	if len(errs) != 1 {
		t.Fatalf("not an error body: %s", r.body)
	}
	for cat, v := range errs {
		m := v.(map[string]any)
		code, _ := m["code"].(float64)
		return cat, m["message"].(string), code
	}
	return "", "", 0
}

// call sends a request to the public listener and validates the response
// against the OpenAPI document.
func (e *env) call(t *testing.T, method, path, token, body string) response {
	t.Helper()
	return e.send(t, e.public, true, method, path, token, body, nil)
}

// callInternal sends a request to the internal listener (not in the
// document) with a service token, as auth would.
func (e *env) callInternal(t *testing.T, method, path, body string) response {
	t.Helper()
	return e.send(t, e.internal, false, method, path, e.serviceToken(t), body, nil)
}

// serviceToken is a token for users from a peer holding the deployment's key.
func (e *env) serviceToken(t *testing.T) string {
	t.Helper()
	tok, err := e.peer.Token("users")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (e *env) send(t *testing.T, base string, validate bool, method, path, token, body string, header http.Header) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if validate {
		vreq, _ := http.NewRequest(method, base+path, nil)
		if err := e.validator.ValidateResponse(vreq, resp.StatusCode, resp.Header, b); err != nil {
			t.Errorf("%s %s: the response breaks the API document: %v", method, path, err)
		}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func expect(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// expectError checks status, category and (when not empty) the message.
func expectError(t *testing.T, r response, status int, category, message string) {
	t.Helper()
	expect(t, r, status)
	cat, msg, _ := r.errorOf(t)
	if cat != category || (message != "" && msg != message) {
		t.Fatalf("error %s %q, want %s %q", cat, msg, category, message)
	}
}

// getConcurrently sends rounds GETs of each of paths, all at once, with
// token; it returns the answers by path and how many database connections
// they took (one per query).
func (e *env) getConcurrently(t *testing.T, token string, paths []string, rounds int) (map[string][]response, int64) {
	t.Helper()
	type answer struct {
		path string
		r    response
	}
	before := e.pool.Stat().AcquireCount()
	answers := make(chan answer, rounds*len(paths))
	var wg sync.WaitGroup
	for i := range rounds * len(paths) {
		path := paths[i%len(paths)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- answer{path, e.send(t, e.public, false, "GET", path, token, "", nil)}
		}()
	}
	wg.Wait()
	close(answers)
	out := map[string][]response{}
	for a := range answers {
		out[a.path] = append(out[a.path], a.r)
	}
	return out, e.pool.Stat().AcquireCount() - before
}
