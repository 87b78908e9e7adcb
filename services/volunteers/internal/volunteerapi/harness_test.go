package volunteerapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/libs/usersapitest"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerapi"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerstore"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const convention = "2026"

// env is a running volunteers API on a fresh database, with a users
// service double and a token issuer.
type env struct {
	URL      string
	Internal string
	DSN      string
	Pool     *pgxpool.Pool
	Store    *volunteerstore.Store
	Users    *usersapitest.Server
	Tokens   *tokentest.Server
	spec     *apispec.Validator
}

type envOptions struct {
	usersTimeout time.Duration
	bodyLimit    int64
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration: needs PostgreSQL")
	}
	if o.usersTimeout == 0 {
		o.usersTimeout = 2 * time.Second
	}
	if o.bodyLimit == 0 {
		o.bodyLimit = 64 << 10
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dsn := testkit.NewDatabase(t)
	if err := migrations.Set().Up(dsn); err != nil {
		t.Fatal(err)
	}
	pool, err := pgdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := &env{DSN: dsn, Pool: pool, Store: volunteerstore.New(pool), Users: usersapitest.New(t), Tokens: tokentest.New(t)}
	validator, err := tokenauth.New(tokenauth.Config{JWKSURL: e.Tokens.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	codec, err := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	srv := httpserver.New(httpserver.Config{PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", BodyLimit: o.bodyLimit,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second}, log, "volunteers")
	svc := volunteer.NewService(e.Store, usersapi.NewClient(e.Users.URL, o.usersTimeout), convention)
	protected := func(scope string) []gin.HandlerFunc {
		return []gin.HandlerFunc{validator.Middleware(), tokenauth.RequireScope(scope)}
	}
	volunteerapi.Register(srv.Public, srv.Internal, protected, volunteerapi.New(svc, page.Paginator{Codec: codec, Query: "volunteers.search"}, log))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.URL = "http://" + srv.PublicAddr()
	e.Internal = "http://" + srv.InternalAddr()
	if e.spec, err = apispec.NewValidator(); err != nil {
		t.Fatal(err)
	}
	return e
}

// load stores departments and volunteers for conv through the real import path.
func (e *env) load(t testing.TB, conv string, deps []fixture.Department, vols ...fixture.Volunteer) volunteerstore.ImportResult {
	t.Helper()
	known, err := e.Store.DepartmentIDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, v, err := volunteer.FromFixture(conv, deps, vols, known)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Store.Import(context.Background(), d, v)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range vols {
		e.Users.Add(usersapitest.User(x.UserID))
	}
	for _, x := range deps {
		for _, id := range x.Leads {
			e.Users.Add(usersapitest.User(id))
		}
	}
	return res
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body is not the JSON expected: %v: %s", err, r.Body)
	}
}

// errorMessage returns errors.<category>.message of an error body.
func (r response) errorMessage(t testing.TB, category string) string {
	t.Helper()
	var body struct {
		Errors map[string]struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	r.json(t, &body)
	e, ok := body.Errors[category]
	if !ok {
		t.Fatalf("no %q error in %s", category, r.Body)
	}
	return e.Message
}

// do sends a request and checks the response against the API document.
func (e *env) do(t testing.TB, method, path, token, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err := e.spec.ValidateResponse(req, resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("response breaks the API document: %v", err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (e *env) get(t testing.TB, path, token string) response {
	t.Helper()
	return e.do(t, http.MethodGet, path, token, "", nil)
}

func (e *env) search(t testing.TB, token, body string) response {
	t.Helper()
	return e.do(t, http.MethodPost, "/api/v0/volunteers/search", token, "application/json", []byte(body))
}
