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

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/volunteersclient"
	"github.com/eventreg/eventreg/services/users/internal/config"
	"github.com/eventreg/eventreg/services/users/internal/server"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
	"github.com/eventreg/eventreg/services/users/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// env is a running users service (libs/resourcetest, as the other resource
// services run) on a database holding the demo fixture, with doubles of the
// services it calls; logs is what it logged.
type env struct {
	*resourcetest.Env
	logs *testkit.SyncBuffer
}

// response is what a request got.
type response = resourcetest.Response

// jsonContent is the header of a JSON body sent with env.Send.
var jsonContent = http.Header{"Content-Type": {"application/json"}}

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

// newEnv runs the users service the way serve does (server.Mount) with a
// configuration pointing at the test's database, a test JWKS and doubles of
// the other services.
func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	if opts.databaseURL == "" {
		pool, dsn := usertest.NewPool(t)
		usertest.LoadDemo(t, pool)
		opts.databaseURL = dsn
	}
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
	e := &env{logs: &testkit.SyncBuffer{}}
	e.Env = resourcetest.Start(t, migrations.Set(), resourcetest.Options{Service: "users", Convention: cmp.Or(opts.conventionID, usertest.ConventionID),
		BodyLimit: 1 << 20, RequestTimeout: opts.requestTimeout, DatabaseURL: opts.databaseURL, Log: e.logs, LogLevel: "info"},
		func(ctx context.Context, c resourcetest.Config, rt *service.Runtime) error {
			c.Resource.RedisURL, c.Resource.RateLimit = opts.redisURL, opts.rateLimit
			cfg := config.Serve{Base: c.Base, Resource: c.Resource, VolunteersInternalURL: opts.volunteersURL,
				VolunteersPublicURL: owners["volunteers"], RegistrationsPublicURL: owners["registrations"],
				PasswordChecks: cmp.Or(opts.passwordSlots, 2)}
			cfg.AuthInternalURL = opts.authURL
			// The production wiring: serve runs the same Mount.
			return server.Mount(ctx, cfg, rt)
		})
	t.Cleanup(func() {
		for _, secret := range []string{"correct horse battery staple", "bob demo password 2026"} {
			if strings.Contains(e.logs.String(), secret) {
				t.Errorf("a password appears in the logs")
			}
		}
	})
	return e
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

// rolesOf is the role list of user id, as an app with user:read reads it.
func (e *env) rolesOf(t *testing.T, id string) string {
	t.Helper()
	return string(e.Call(t, "GET", "/api/v0/users/"+id+"/roles", e.Tokens.Service(t, "user:read"), "").Body)
}

// getConcurrently sends rounds GETs of each of paths, all at once, with
// token; it returns the answers by path and how many database connections
// the service took for them (one per query).
func (e *env) getConcurrently(t *testing.T, token string, paths []string, rounds int) (map[string][]response, int64) {
	t.Helper()
	type answer struct {
		path string
		r    response
	}
	before := e.ServerPool.Stat().AcquireCount()
	answers := make(chan answer, rounds*len(paths))
	var wg sync.WaitGroup
	for i := range rounds * len(paths) {
		path := paths[i%len(paths)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- answer{path, e.Send(t, e.URL, "GET", path, token, nil, nil)}
		}()
	}
	wg.Wait()
	close(answers)
	out := map[string][]response{}
	for a := range answers {
		out[a.path] = append(out[a.path], a.r)
	}
	return out, e.ServerPool.Stat().AcquireCount() - before
}

// fakeOwner is a stand-in for the public listener of volunteers or
// registrations that records what reaches it.
type fakeOwner struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	body []string
}

func newFakeOwner(t *testing.T, name string) *fakeOwner {
	o := &fakeOwner{name: name}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.got = append(o.got, r.Clone(r.Context()))
		o.body = append(o.body, string(b))
		o.mu.Unlock()
		w.Header().Set("X-Owner", name)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = io.WriteString(w, `{"errors":{"resource":{"message":"Method not allowed."}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"owner":"`+name+`"}`)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// last returns the last request the owner received and its body, or nil.
func (o *fakeOwner) last() (*http.Request, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.got) == 0 {
		return nil, ""
	}
	return o.got[len(o.got)-1], o.body[len(o.body)-1]
}

func (o *fakeOwner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.got)
}
