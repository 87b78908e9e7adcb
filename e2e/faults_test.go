package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// bounded is how long a request may take to fail when a dependency is down.
const bounded = 5 * time.Second

// TestFaults breaks real components of one running system (Redis, one
// service's database, the users service, processes killed or stopped under
// load) and watches what the clients see.
func TestFaults(t *testing.T) {
	// The rate limit is not under test here: high enough for the load loops.
	// SHUTDOWN_DELAY as deployed: keep serving 2s after SIGTERM while the
	// gateway stops sending (docs/reliability.md).
	s := stack.Start(t, stack.Options{Env: map[string]string{"RATE_LIMIT_PER_SECOND": "5000", "SHUTDOWN_DELAY": "2s"}})
	tracker := serviceToken(t, s, trackerID, trackerSecret, "user:read", "user:roles:update", "volunteer:read", "registration:read")
	app := authApp(s.GatewayURL, authBadgeID, authBadgeSecret, "pii:basic")
	obo := userToken(t, s.GatewayURL, app, authAlice, authAlicePass)

	var redis *testkit.Process // the restarted Redis, stopped when the stack is
	t.Cleanup(func() {
		if redis != nil {
			redis.Kill()
		}
	})
	t.Run("redis stops: token grants and login answer 503 fast, reads go on, all recovers and old refresh tokens work", func(t *testing.T) {
		redis = redisFault(t, s, tracker, app, obo.RefreshToken)
	})
	t.Run("one service's database goes away: its readiness fails, its requests get 503, others carry on, it recovers", func(t *testing.T) {
		databaseFault(t, s, tracker)
	})
	t.Run("users stops: volunteers and registrations answer 503 within a bounded time and recover", func(t *testing.T) {
		usersDown(t, s, tracker, obo.AccessToken)
	})
	t.Run("SIGTERM under load: every request sent before the signal is answered successfully", func(t *testing.T) {
		sigtermUnderLoad(t, s, tracker)
	})
	t.Run("SIGKILL of users mid role changes: no hang, no duplicate or lost membership", func(t *testing.T) {
		sigkillRoleChanges(t, s, tracker)
	})
	t.Run("SIGKILL of auth mid refresh rotation: the client always holds a working refresh token", func(t *testing.T) {
		sigkillRefresh(t, s, app)
	})
}

// redisFault stops Redis, checks, and starts it again on the same port and
// AOF directory; it returns the new process (also when t fails).
func redisFault(t *testing.T, s *stack.Stack, tracker string, app *oauth2.Config, refresh string) (restarted *testkit.Process) {
	port, err := strconv.Atoi(s.RedisURL[strings.LastIndex(s.RedisURL, ":")+1 : strings.LastIndex(s.RedisURL, "/")])
	if err != nil {
		t.Fatalf("redis port of %s: %v", s.RedisURL, err)
	}
	if err := s.RedisProcess().Stop(); err != nil {
		t.Fatal(err)
	}
	start := func() {
		if restarted == nil {
			p, _, err := testkit.StartRedis(context.Background(), filepath.Join(s.Dir, "redis"), port, true)
			if err != nil {
				t.Fatal(err)
			}
			restarted = p
		}
	}
	defer start() // a working system for the next subtests, also after a failure

	// Readiness does not depend on Redis: an outage is answered per request
	// (below), never by taking every replica out of its Service. Every
	// service's /readyz is polled, as a probe would, for the whole outage.
	var probes []*readinessPolls
	for _, name := range stack.ServiceNames {
		probes = append(probes, startReadinessPolls(s.Services[name].OpsURL, 100*time.Millisecond))
	}
	stopProbes := func() {
		for i, p := range probes {
			p.stop()
			polls, unready := p.polls.Load(), p.failures()
			if polls == 0 || len(unready) > 0 {
				t.Errorf("%s's /readyz while redis was down: %d polls, %d not 200, e.g. %v", stack.ServiceNames[i], polls, len(unready), unready)
			}
		}
	}
	defer func() {
		if probes != nil {
			stopProbes()
		}
	}()

	r, err := tokenRequest(s, authBadgeID, authBadgeSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	if err != nil || r.status != 503 || r.took > bounded || !strings.Contains(r.body, `"error":"temporarily_unavailable"`) {
		t.Fatalf("refresh while redis is down: %v %d in %v: %s", err, r.status, r.took, r.body)
	}
	t.Logf("refresh grant with redis down: %d in %v", r.status, r.took.Round(time.Millisecond/10))
	r, err = tokenRequest(s, authBadgeID, authBadgeSecret, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {authRedirectURI}})
	if err != nil || r.status != 503 || r.took > bounded {
		t.Fatalf("code redemption while redis is down: %v %d in %v: %s", err, r.status, r.took, r.body)
	}
	// Client credentials need no server state: still served (decision 0071).
	r, err = tokenRequest(s, trackerID, trackerSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read"}})
	if err != nil || (r.status != 200 && r.status != 503) || r.took > bounded {
		t.Fatalf("client credentials while redis is down: %v %d in %v", err, r.status, r.took)
	}
	b := newAuthHTTPBrowser(t, s.GatewayURL)
	status, _, page := b.do(http.MethodGet, app.AuthCodeURL("x"), nil)
	if status == 200 && strings.Contains(page, `name="password"`) {
		started := time.Now()
		status, _, page = b.login(s.GatewayURL, page, "", authAlice, authAlicePass)
		if took := time.Since(started); took > bounded {
			t.Fatalf("login took %v", took)
		}
	}
	if status != 503 || !strings.Contains(page, "temporarily unavailable") {
		t.Fatalf("login while redis is down: %d %.300s", status, page)
	}
	t.Logf("login with redis down: %d", status)
	for _, path := range []string{"/api/v0/users/1001", "/api/v0/users/1002/volunteer", "/api/v0/users/1002/registration"} {
		if r := mustSend(t, s, "GET", path, tracker, ""); r.status != 200 || r.took > bounded {
			t.Fatalf("read %s while redis is down: %d in %v: %s", path, r.status, r.took, r.body)
		}
	}
	// A probe that lands now, once the requests above have found Redis gone.
	for _, name := range stack.ServiceNames {
		if bad := readyzOnce(s.Services[name].OpsURL); bad != "" {
			t.Errorf("%s's /readyz while redis is down: %s", name, bad)
		}
	}
	stopProbes()
	var polls int64
	for _, p := range probes {
		polls += p.polls.Load()
	}
	t.Logf("readiness with redis down: %d polls of every service's /readyz, all 200 unless reported above", polls)
	probes = nil

	start()
	back := time.Now()
	eventually(t, 30*time.Second, "refresh grant back", func() error {
		r, err := tokenRequest(s, authBadgeID, authBadgeSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"not-a-token"}})
		if err == nil && r.status == 503 {
			return errors.New("still 503")
		}
		return err
	})
	t.Logf("token endpoint recovered %v after redis restarted", time.Since(back).Round(time.Millisecond))
	tok, err := app.TokenSource(context.Background(), &oauth2.Token{RefreshToken: refresh}).Token()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("the refresh token issued before the outage: %v", err)
	}
	return restarted
}

func databaseFault(t *testing.T, s *stack.Stack, tracker string) {
	admin, err := pgx.Connect(context.Background(), s.AdminDatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	cfg, err := pgx.ParseConfig(s.DatabaseURL("registrations"))
	if err != nil {
		t.Fatal(err)
	}
	db := pgx.Identifier{cfg.Database}.Sanitize()
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("ALTER DATABASE " + db + " ALLOW_CONNECTIONS false")
	restored := false
	t.Cleanup(func() {
		if !restored {
			_, _ = admin.Exec(context.Background(), "ALTER DATABASE "+db+" ALLOW_CONNECTIONS true")
		}
	})
	exec(fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s'", cfg.Database))

	reg := s.Services["registrations"]
	cut := time.Now()
	eventually(t, 30*time.Second, "registrations unready", func() error {
		r, err := send(s, "GET", "/api/v0/users/1002/registration", tracker, "")
		if err != nil || r.status != 503 || r.took > bounded {
			return fmt.Errorf("%v %d in %v", err, r.status, r.took)
		}
		if err := reg.WaitReady(context.Background(), 100*time.Millisecond); err == nil {
			return errors.New("still ready")
		}
		return nil
	})
	r := mustSend(t, s, "GET", "/api/v0/users/1002/registration", tracker, "")
	if r.status != 503 || !strings.Contains(r.body, `"server"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	t.Logf("registrations unready and answering 503 (in %v) %v after its database went away", r.took.Round(time.Millisecond/10), time.Since(cut).Round(time.Millisecond))
	for _, path := range []string{"/api/v0/users/1001", "/api/v0/users/1002/volunteer"} {
		if r := mustSend(t, s, "GET", path, tracker, ""); r.status != 200 {
			t.Fatalf("%s while registrations' database is away: %d %s", path, r.status, r.body)
		}
	}
	exec("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true")
	restored = true
	back := time.Now()
	if err := reg.WaitReady(context.Background(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("registrations ready again %v after its database came back", time.Since(back).Round(time.Millisecond))
	eventually(t, 30*time.Second, "registrations answering", func() error {
		return want(200)(send(s, "GET", "/api/v0/users/1002/registration", tracker, ""))
	})
}

func usersDown(t *testing.T, s *stack.Stack, tracker, oboToken string) {
	users := s.Services["users"]
	users.Stop()
	defer func() {
		if !users.Running() { // after a failure: a working system for the next subtests
			users.Restart(t)
		}
	}()
	// The current-user view is served by users itself: the gateway's 503 in
	// the API's error shape, as when it cannot reach volunteers (decision 0030).
	if r := mustSend(t, s, "GET", "/api/users/current", oboToken, ""); r.status != 503 || r.took > bounded || !strings.Contains(r.body, `{"errors":{"server"`) {
		t.Fatalf("current user with users down: %d in %v: %s", r.status, r.took, r.body)
	}
	for _, path := range []string{"/api/v0/users/1002/registration", "/api/v0/users/1002/volunteer"} {
		r := mustSend(t, s, "GET", path, tracker, "")
		if r.status != 503 || r.took > bounded || !strings.Contains(r.body, `"errors"`) {
			t.Fatalf("%s with users down: %d in %v: %s", path, r.status, r.took, r.body)
		}
		t.Logf("%s with users down: %d in %v", path, r.status, r.took.Round(time.Millisecond/10))
	}
	users.Restart(t)
	if r := mustSend(t, s, "GET", "/api/users/current", oboToken, ""); r.status != 200 {
		t.Fatalf("current user after users restarted: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/v0/users/1002/registration", "/api/v0/users/1002/volunteer", "/api/v0/users/1001"} {
		eventually(t, 30*time.Second, path+" back", func() error { return want(200)(send(s, "GET", path, tracker, "")) })
	}
}

// sigtermUnderLoad sends SIGTERM to volunteers while workers search it;
// every request fully written before the signal must be answered 200. The
// service keeps serving for SHUTDOWN_DELAY, then finishes what is in flight.
func sigtermUnderLoad(t *testing.T, s *stack.Stack, tracker string) {
	vol := s.Services["volunteers"]
	var signalled atomic.Int64 // unix nanos
	var mu sync.Mutex
	var failures []string
	sent := atomic.Int64{}
	search := func(int) bool {
		r, err := send(s, "POST", "/api/v0/volunteers/search", tracker, `{"limit": 100}`)
		sent.Add(1)
		if sig := signalled.Load(); sig == 0 || (!r.wrote.IsZero() && r.wrote.UnixNano() < sig) {
			if err != nil || r.status != 200 {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%v %d %.200s", err, r.status, r.body))
				mu.Unlock()
			}
		}
		return true
	}
	load := startWorkers(0, time.Time{}, search, search, search, search)
	defer load.stop()
	eventually(t, 10*time.Second, "load running", func() error {
		if sent.Load() < 50 {
			return errors.New("warming up")
		}
		return nil
	})
	signalled.Store(time.Now().UnixNano())
	vol.Signal(syscall.SIGTERM)
	vol.Wait()
	load.stop()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests sent before SIGTERM failed, e.g. %s", len(failures), sent.Load(), failures[0])
	}
	t.Logf("%d requests, none sent before SIGTERM failed", sent.Load())
	if err := vol.Start(); err != nil {
		t.Fatal(err)
	}
	if err := vol.WaitReady(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// sigkillRoleChanges grants and revokes one role of several users while the
// users service is killed and restarted; the ledger of acknowledged changes
// must match the database afterwards, with no duplicate membership.
func sigkillRoleChanges(t *testing.T, s *stack.Stack, tracker string) {
	users := s.Services["users"]
	const role = "2" // staff
	ids := []int64{1001, 1002, 1004, 1005}
	held := rolesHeld(t, s, tracker, role, ids)
	var hung atomic.Int64
	unacknowledged := 0
	deadline := time.Now().Add(12 * time.Second)
	killed := false
	for i := 0; time.Now().Before(deadline); i++ {
		id := ids[i%len(ids)]
		if i == 20 && !killed {
			users.Kill()
			users.Wait()
			if err := users.Start(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
		method, path, body := roleChange(id, role, held[id])
		r, err := send(s, method, path, tracker, body)
		if r.took > bounded {
			hung.Add(1)
		}
		switch {
		case err != nil || r.status >= 500:
			// Not acknowledged: the change may or may not have happened. Ask.
			unacknowledged++
			eventually(t, 60*time.Second, "users answering", func() error {
				rr, err := send(s, "GET", fmt.Sprintf("/api/v0/users/%d/roles", id), tracker, "")
				if err != nil || rr.status != 200 {
					return fmt.Errorf("%v %d", err, rr.status)
				}
				held[id] = holdsRole(rr.body, role)
				return nil
			})
		case r.status == 204:
			held[id] = !held[id]
		default:
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	if !killed {
		t.Fatal("the loop ended before the kill")
	}
	if hung.Load() > 0 {
		t.Fatalf("%d requests took more than %v", hung.Load(), bounded)
	}
	if err := users.WaitReady(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	checkMemberships(t, s, role, held)
	t.Logf("%d role changes not acknowledged around the kill; the database matches the ledger", unacknowledged)
}

// sigkillRefresh rotates a refresh token in a loop while auth is killed and
// restarted: when a rotation's answer is lost, the old or the new token must
// still work (no half-rotated family).
func sigkillRefresh(t *testing.T, s *stack.Stack, app *oauth2.Config) {
	auth := s.Services["auth"]
	current := userToken(t, s.GatewayURL, app, authAlice, authAlicePass).RefreshToken
	lost := 0
	rotate := func(rt string) (string, reply, error) {
		r, err := tokenRequest(s, authBadgeID, authBadgeSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
		if err != nil || r.status != 200 {
			return "", r, err
		}
		i := strings.Index(r.body, `"refresh_token":"`)
		if i < 0 {
			return "", r, errors.New("no refresh_token in " + r.body)
		}
		rest := r.body[i+len(`"refresh_token":"`):]
		return rest[:strings.Index(rest, `"`)], r, nil
	}
	for i := range 30 {
		if i == 10 {
			auth.Kill()
			auth.Wait()
			if err := auth.Start(); err != nil {
				t.Fatal(err)
			}
		}
		next, r, err := rotate(current)
		if r.took > bounded {
			t.Fatalf("rotation %d took %v", i, r.took)
		}
		if err == nil && next != "" {
			current = next
			continue
		}
		if r.status == 400 {
			t.Fatalf("rotation %d: the client's refresh token was refused: %s", i, r.body)
		}
		lost++
		// Auth is down or restarting: the token the client holds must work once it is back.
		if err := auth.WaitReady(context.Background(), 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, r, err := rotate(current); err != nil || r.status != 200 {
		t.Fatalf("the last refresh token: %v %d %s", err, r.status, r.body)
	}
	if lost == 0 {
		t.Fatal("no rotation met the killed auth service")
	}
	t.Logf("%d rotations failed while auth was down; the token held afterwards still rotated", lost)
}
