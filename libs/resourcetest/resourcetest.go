// Package resourcetest runs a resource service's API (users, volunteers, registrations, dealers) in-process for its tests: a fresh migrated database, a users service double, a token issuer, and requests whose responses are checked against the API document.
package resourcetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokentest"
	"github.com/eventreg/eventreg/libs/usersclienttest"
)

// NewPool returns the DSN of a fresh database migrated by set and a pool on
// it, both gone when t ends. It skips the test under -short.
func NewPool(t testing.TB, set migrations.Set) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := testkit.NewDatabase(t)
	if err := set.Up(dsn); err != nil {
		t.Fatal(err)
	}
	return dsn, testkit.OpenPool(t, dsn)
}

// Options configure Start. Zero values take the defaults.
type Options struct {
	// Service names the server in its logs and metrics ("registrations").
	Service string
	// Convention is the current convention (CONVENTION_ID of RunCLI).
	Convention string
	// UsersTimeout bounds calls to the users double (default 2s).
	UsersTimeout time.Duration
	// BodyLimit is the largest request body (default 64 KiB).
	BodyLimit int64
	// RequestTimeout is REQUEST_TIMEOUT (default httpserver's).
	RequestTimeout time.Duration
	// DatabaseURL runs the service on this database, migrated or not
	// (default: a fresh one migrated by the set, under -short a skip).
	DatabaseURL string
	// Log receives the service's log at LogLevel (default: discarded, "error").
	Log      io.Writer
	LogLevel string
}

// InternalAuth is the service-token key of the services a harness starts.
var InternalAuth = servicetoken.Config{Key: "a-test-internal-auth-key-of-32-characters"}

// Config is the configuration a harness gives its service's Mount: the
// parts every resource service shares, pointing at the harness's database,
// listeners, token issuer and users double.
type Config struct {
	Base     service.Base
	Resource service.Resource
	Users    service.UsersClient
}

// Env is a running service API on a fresh database, with a users service
// double and a token issuer.
type Env struct {
	URL      string // public listener
	Internal string // internal listener
	Ops      string // ops listener (probes, metrics)
	// Credentials sign calls to the internal listener as a peer service
	// holding the deployment's key would (InternalAuthKey).
	Credentials *servicetoken.Signer
	DSN         string
	Convention  string
	// Pool is the test's own pool on the database; ServerPool is the one
	// the service queries with (its acquisitions count the service's queries).
	Pool, ServerPool *pgxpool.Pool
	Users            *usersclienttest.Server
	Tokens           *tokentest.Server
	// Routes are the public routes the service registered.
	Routes  []gin.RouteInfo
	spec    *apispec.Validator
	codec   *cursor.Codec
	service string
}

// Start migrates a fresh database with set (or takes o.DatabaseURL) and runs
// the service on it the way serve does: service.StartLogging, then mount
// (the service's server.Mount, given its configuration built from Config),
// then the listeners, until t ends. On a fresh database it skips the test
// under -short.
func Start(t testing.TB, set migrations.Set, o Options, mount func(context.Context, Config, *service.Runtime) error) *Env {
	t.Helper()
	if o.UsersTimeout == 0 {
		o.UsersTimeout = 2 * time.Second
	}
	if o.BodyLimit == 0 {
		o.BodyLimit = 64 << 10
	}
	var pool *pgxpool.Pool
	dsn := o.DatabaseURL
	if dsn == "" {
		dsn, pool = NewPool(t, set)
	} else {
		pool = testkit.OpenPool(t, dsn)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &Env{DSN: dsn, Convention: o.Convention, Pool: pool, Users: usersclienttest.New(t), Tokens: tokentest.New(t), service: o.Service}
	cfg := Config{
		Base: service.Base{DatabaseURL: dsn, LogLevel: cmp.Or(o.LogLevel, "error"), Config: httpserver.Config{
			PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: o.BodyLimit,
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			IdleTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second, RequestTimeout: cmp.Or(o.RequestTimeout, httpserver.DefaultRequestTimeout),
			TrustedProxies: []string{"127.0.0.1/32"}}, InternalAuth: InternalAuth},
		Resource: service.Resource{AuthIssuer: tokentest.Issuer, AuthJWKSURL: e.Tokens.JWKSURL, TokenAudience: tokentest.Audience,
			TokenLeeway: time.Second, JWKSRefresh: 5 * time.Minute, RevocationPoll: time.Second,
			CursorKey: strings.Repeat("k", 32), ConventionID: o.Convention},
		Users: service.UsersClient{UsersInternalURL: e.Users.URL, UsersTimeout: o.UsersTimeout},
	}
	logs := o.Log
	if logs == nil {
		logs = io.Discard
	}
	rt, err := service.StartLogging(ctx, o.Service, cfg.Base, set, logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := mount(ctx, cfg, rt); err != nil {
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
	if e.codec, err = cursor.NewCodec([]byte(cfg.Resource.CursorKey)); err != nil {
		t.Fatal(err)
	}
	e.Routes = rt.Server.Public.Routes()
	e.ServerPool = rt.Pool
	e.URL = "http://" + rt.Server.PublicAddr()
	e.Internal = "http://" + rt.Server.InternalAddr()
	e.Ops = "http://" + rt.Server.OpsAddr()
	e.Credentials = servicetoken.NewSigner(InternalAuth, "tests")
	if e.spec, err = apispec.NewValidator(); err != nil {
		t.Fatal(err)
	}
	return e
}

// Response is what a request got.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it does not fit.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body is not the JSON expected: %v: %s", err, r.Body)
	}
}

// ErrorMessage returns errors.<category>.message of an error body.
func (r Response) ErrorMessage(t testing.TB, category string) string {
	t.Helper()
	var body struct {
		Errors map[string]struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	r.JSON(t, &body)
	e, ok := body.Errors[category]
	if !ok {
		t.Fatalf("no %q error in %s", category, r.Body)
	}
	return e.Message
}

// Do sends a request to the public listener and checks the response against
// the API document.
func (e *Env) Do(t testing.TB, method, path, token, contentType string, body []byte) Response {
	t.Helper()
	var header http.Header
	if contentType != "" {
		header = http.Header{"Content-Type": {contentType}}
	}
	r := e.Send(t, e.URL, method, path, token, body, header)
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.spec.ValidateResponse(req, r.Status, r.Header, r.Body); err != nil {
		t.Errorf("%s %s: the response breaks the API document: %v", method, path, err)
	}
	return r
}

// Send sends a request to base+path, base being one of the service's
// listeners (URL, Internal), with a bearer token (none when empty), body
// and header, and does not check the response: for what the API document
// does not describe (the internal API, an answer forwarded from another
// service, a request the document refuses).
func (e *Env) Send(t testing.TB, base, method, path, token string, body []byte, header http.Header) Response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, b := testkit.Send(t, req)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Get is Do for a GET without a body.
func (e *Env) Get(t testing.TB, path, token string) Response {
	t.Helper()
	return e.Do(t, http.MethodGet, path, token, "", nil)
}

// Post is Do for a POST of a JSON body.
func (e *Env) Post(t testing.TB, path, token, body string) Response {
	t.Helper()
	return e.Do(t, http.MethodPost, path, token, "application/json", []byte(body))
}

// RunCLI executes the service binary's command tree root in-process against
// e's database and convention, returning what it printed.
func (e *Env) RunCLI(t *testing.T, root *cobra.Command, args ...string) (string, error) {
	t.Helper()
	t.Setenv("DATABASE_URL", e.DSN)
	t.Setenv("CONVENTION_ID", e.Convention)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// WriteFixture writes doc to fixture.json in the test's temporary directory
// and returns its path.
func WriteFixture(t testing.TB, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fixture.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteFixtureJSON is WriteFixture of doc encoded as JSON (a
// fixture.Document, or a map a test changed).
func WriteFixtureJSON(t testing.TB, doc any) string {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return WriteFixture(t, string(b))
}
