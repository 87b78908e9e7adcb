package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestUpgradeWithoutOutage plays the upgrade of docs/deployment.md ("Upgrade")
// on volunteers with the real binaries behind the real gateway, under load:
// release N serves; release N+1's migration is applied; N stays ready; N+1
// starts beside it and the gateway moves to it; N stops with SIGTERM. No
// request may fail and N's /readyz must answer 200 from start to SIGTERM.
//
// There is one set of binaries here, so release N+1 is simulated where it
// matters and nothing else: its migration is written to the database the way
// golang-migrate applies it (schema_migrations at the new version and dirty,
// the migration's statements, then clean), and it is a compatible expand step
// (a new nullable column nobody reads yet). Whether a binary is ready and
// serves depends only on that recorded version and a schema it can run on
// (libs/migrations: Status.Serves), so N sees exactly what it would see in a
// real upgrade. N+1 is a second process of the same binary on new ports,
// against the same database: like the new release, it is ready on a schema
// at or ahead of its own.
func TestUpgradeWithoutOutage(t *testing.T) {
	// The rate limit is not under test. SHUTDOWN_DELAY as deployed for rolling
	// restarts (docs/reliability.md).
	s := stack.Start(t, stack.Options{Env: map[string]string{"RATE_LIMIT_PER_SECOND": "5000", "SHUTDOWN_DELAY": "2s"}})
	ctx := context.Background()
	token := serviceToken(t, s, trackerID, trackerSecret, "volunteer:read", "user:read", "user:roles:update")
	oldRelease := s.Services["volunteers"]
	started := time.Now()

	// Reads that only volunteers answers, straight through the gateway (the
	// forwarded /api/v0/users/{id}/volunteer goes from users to the address
	// it was started with, which in Kubernetes is a Service and here is N).
	reads := []struct{ method, path, body string }{
		{"GET", "/api/v0/volunteers/departments", ""},
		{"POST", "/api/v0/volunteers/search", `{"limit": 100}`},
	}
	before := make([]string, len(reads))
	for i, r := range reads {
		before[i] = mustSend(t, s, r.method, r.path, token, r.body).body
	}

	// Writes beside the reads, through the same gateway and its reloads:
	// client-credentials token grants (auth) and role grants and removals
	// (users), toggling the staff role of a few users. Every one must be
	// acknowledged; the ledger of acknowledged role changes is checked
	// against the users database at the end.
	writes := newUpgradeWrites(t, s, token, "2", []int64{1001, 1002, 1004, 1005})

	// Steady load: a few workers, bounded in time whatever happens below.
	var workers []func(i int) upgradeRequest
	for range 4 {
		workers = append(workers, func(i int) upgradeRequest {
			r := reads[i%len(reads)]
			return upgradeRequest{method: r.method, path: r.path, want: http.StatusOK,
				build: func() (*http.Request, error) { return newRequest(s.GatewayURL, r.method, r.path, token, r.body) }}
		})
	}
	workers = append(workers, writes.next)
	load := startUpgradeLoad(s.HTTPClient(), workers, 45*time.Second)
	defer load.stop()
	readiness := startReadinessPolls(oldRelease.OpsURL, 25*time.Millisecond)
	defer readiness.stop()
	load.hold(t, time.Second) // N serves

	// N+1's migration, as `volunteers migrate up` of release N+1 applies it.
	dsn := s.DatabaseURL("volunteers")
	var dirtyWindow string
	t.Run("the next release's migration is applied: the running release stays ready", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var current int64
		var dirty bool
		if err := conn.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&current, &dirty); err != nil || dirty {
			t.Fatalf("schema before the upgrade: version %d dirty=%v: %v", current, dirty, err)
		}
		next := current + 1
		recordVersion(t, conn, next, true)
		// A readiness probe that lands while the migration runs (here, for as
		// long as the test looks; in production, as long as the migration
		// takes: a backfill or an index can take minutes).
		dirtyWindow = readyzOnce(oldRelease.OpsURL)
		if _, err := conn.Exec(ctx, `ALTER TABLE volunteers ADD COLUMN upgrade_note text NULL`); err != nil {
			t.Fatal(err)
		}
		recordVersion(t, conn, next, false)
		if dirtyWindow != "" {
			t.Errorf("while migration %d ran (recorded dirty, as golang-migrate does), release N's /readyz answered %s: "+
				"every running replica leaves the load balancer for the length of the next release's migration", next, dirtyWindow)
		}
		status := s.Command(t, "volunteers", "migrate", "status")
		if !strings.Contains(status, "ahead of this binary") {
			t.Errorf("migrate status of release N after N+1's migration: %q, want it to say the schema is ahead", status)
		}
		load.hold(t, time.Second) // N serves on the newer schema
	})

	var newAddr string
	var newRelease *stack.Service
	defer func() {
		if newRelease != nil {
			if t.Failed() {
				t.Logf("--- volunteers N+1 log (last lines) ---\n%s", newRelease.LogTail(40))
			}
			newRelease.Stop()
		}
	}()
	t.Run("the next release starts beside it and the gateway moves to it; the old one stops with SIGTERM", func(t *testing.T) {
		var err error
		newRelease, err = s.StartReplica(ctx, "volunteers")
		if err != nil {
			t.Fatal(err)
		}
		newAddr = strings.TrimPrefix(newRelease.PublicURL, "http://")
		oldAddr := strings.TrimPrefix(oldRelease.PublicURL, "http://")

		if err := s.RouteUpstream(ctx, "volunteers", oldAddr, newAddr); err != nil {
			t.Fatal(err)
		}
		load.hold(t, time.Second) // both serve
		if err := s.RouteUpstream(ctx, "volunteers", newAddr); err != nil {
			t.Fatal(err)
		}
		load.hold(t, time.Second) // only N+1 serves

		// Readiness of N is watched up to the signal: after it, /readyz fails
		// on purpose (SHUTDOWN_DELAY) so that load balancers stop sending.
		readiness.stop()
		oldRelease.Signal(syscall.SIGTERM)
		oldRelease.Wait()
		load.hold(t, time.Second) // and goes on without N
	})
	load.stop()
	readiness.stop()
	elapsed := time.Since(started)

	sent, failures := load.sent.Load(), load.failures()
	polls, unready := readiness.polls.Load(), readiness.failures()
	t.Logf("upgrade of volunteers under load: %d requests (%d writes: %d token grants, %d role changes), %d failures (%d resent once: kept-alive connection closed by a gateway reload), %d readiness polls of N (%d unready), %.1f s",
		sent, writes.grants.Load()+writes.roleChanges.Load(), writes.grants.Load(), writes.roleChanges.Load(), len(failures), load.resent.Load(), polls, len(unready), elapsed.Seconds())
	if writes.grants.Load() == 0 || writes.roleChanges.Load() == 0 {
		t.Errorf("the load made %d token grants and %d role changes: the writes were not exercised", writes.grants.Load(), writes.roleChanges.Load())
	}
	checkMemberships(t, s, writes.role, writes.held)
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed, e.g. %s", len(failures), sent, failures[0])
	}
	if polls == 0 || len(unready) > 0 {
		t.Errorf("release N's /readyz: %d polls, %d not 200, e.g. %v", polls, len(unready), unready)
	}
	if t.Failed() {
		return
	}

	// The gateway really moved: N answered some requests and N+1 others.
	// (Every request was answered as wanted, so the reads are the rest.)
	byUpstream := upstreamCounts(t, s, "/api/v0/volunteers/", sent-writes.grants.Load()-writes.roleChanges.Load())
	oldAddr := strings.TrimPrefix(oldRelease.PublicURL, "http://")
	if byUpstream[oldAddr] == 0 || byUpstream[newAddr] == 0 {
		t.Errorf("requests by upstream in the gateway's log: %v; want some answered by N (%s) and some by N+1 (%s)", byUpstream, oldAddr, newAddr)
	}
	// Same volunteers data after as before (its API takes no writes).
	for i, r := range reads {
		after := mustSend(t, s, r.method, r.path, token, r.body).body
		if diff := testkit.BytesDiff([]byte(before[i]), []byte(after)); diff != "" {
			t.Errorf("%s %s after the upgrade differs (-before +after):\n%s", r.method, r.path, diff)
		}
	}
}

// recordVersion writes schema_migrations as golang-migrate's PostgreSQL
// drivers do (SetVersion): in one transaction, empty the table and insert
// the one row.
func recordVersion(t *testing.T, conn *pgx.Conn, version int64, dirty bool) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `TRUNCATE schema_migrations`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, dirty) VALUES ($1, $2)`, version, dirty)
		return err
	})
	if err != nil {
		t.Fatalf("recording version %d dirty=%v: %v", version, dirty, err)
	}
}

// upgradeRequest is one request of the upgrade load: build makes it afresh
// (a resend is a new request), want is the only acceptable answer, and ok,
// when set, is called once it came.
type upgradeRequest struct {
	method, path string
	build        func() (*http.Request, error)
	want         int
	ok           func()
}

// upgradeWrites makes the writes of the upgrade load, one at a time:
// client-credentials token grants alternating with role changes that toggle
// role for users in turn, keeping the ledger of acknowledged changes.
type upgradeWrites struct {
	s                   *stack.Stack
	token, role         string
	ids                 []int64
	held                map[int64]bool // the ledger: written only by next's ok, read after the load stops
	grants, roleChanges atomic.Int64
}

func newUpgradeWrites(t *testing.T, s *stack.Stack, token, role string, ids []int64) *upgradeWrites {
	t.Helper()
	return &upgradeWrites{s: s, token: token, role: role, ids: ids, held: rolesHeld(t, s, token, role, ids)}
}

// next is the write worker's i-th request.
func (w *upgradeWrites) next(i int) upgradeRequest {
	if i%2 == 0 {
		// A token grant: a POST that changes nothing, so it may be resent.
		return upgradeRequest{method: "POST", path: "/api/oauth/token", want: http.StatusOK, ok: func() { w.grants.Add(1) },
			build: func() (*http.Request, error) {
				return newFormRequest(w.s.GatewayURL, "/api/oauth/token", trackerID, trackerSecret,
					url.Values{"grant_type": {"client_credentials"}, "scope": {"volunteer:read"}}), nil
			}}
	}
	// A role change: PUT grants, DELETE removes; both are idempotent.
	id := w.ids[(i/2)%len(w.ids)]
	method, path, body := roleChange(id, w.role, w.held[id])
	return upgradeRequest{method: method, path: path, want: http.StatusNoContent,
		ok:    func() { w.held[id] = !w.held[id]; w.roleChanges.Add(1) },
		build: func() (*http.Request, error) { return newRequest(w.s.GatewayURL, method, path, w.token, body) }}
}

// upgradeLoad is a few workers repeating requests through the gateway until
// stopped or their time is up; every answer but the one wanted, and every
// transport error but the one request resends, is a failure.
type upgradeLoad struct {
	hc     *http.Client
	sent   atomic.Int64
	resent atomic.Int64
	mu     sync.Mutex
	failed []string
	*workers
}

// startUpgradeLoad runs one goroutine per worker; worker(i) is its i-th request.
func startUpgradeLoad(hc *http.Client, workers []func(i int) upgradeRequest, limit time.Duration) *upgradeLoad {
	l := &upgradeLoad{hc: hc}
	var fns []func(int) bool
	for _, worker := range workers {
		fns = append(fns, func(i int) bool {
			r := worker(i)
			got, err := l.do(r)
			l.sent.Add(1)
			if err != nil || got.status != r.want {
				l.mu.Lock()
				l.failed = append(l.failed, fmt.Sprintf("%s %s at %s: %v %d %.200s", r.method, r.path, time.Now().Format("15:04:05.000"), err, got.status, got.body))
				l.mu.Unlock()
			} else if r.ok != nil {
				r.ok()
			}
			return true
		})
	}
	l.workers = startWorkers(0, time.Now().Add(limit), fns...)
	return l
}

// do sends one request through the gateway. A request sent on a kept-alive
// connection that the gateway closed before answering anything is sent once
// more (counted in resent): nginx closes its idle client connections when the
// workers of the previous configuration exit at a reload, and a request can
// cross that close on the wire. HTTP lets a client resend a request that got
// no answer when it is safe (RFC 9110 §9.2.2, RFC 9112 §9.3.1), and Go's
// client does so by itself for a GET, but not for a POST or PUT: every
// request of this load may be resent (reads, idempotent PUT and DELETE, and
// token grants, which change nothing).
func (l *upgradeLoad) do(r upgradeRequest) (reply, error) {
	var reused, answered bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(info httptrace.GotConnInfo) { reused = info.Reused },
		GotFirstResponseByte: func() { answered = true },
	}
	req, err := r.build()
	if err != nil {
		return reply{}, err
	}
	got, err := do(l.hc, req.WithContext(httptrace.WithClientTrace(context.Background(), trace)))
	if err != nil && reused && !answered && closedBeforeAnswer(err) {
		l.resent.Add(1)
		if req, err = r.build(); err != nil {
			return reply{}, err
		}
		got, err = do(l.hc, req)
	}
	return got, err
}

// closedBeforeAnswer reports the errors Go's transport gives for a request
// written on a kept-alive connection the peer closed: a bare EOF or reset, or
// its own "server closed idle connection" (unexported, so matched by text),
// which it returns when it sees the close before writing and cannot resend a
// POST by itself.
func closedBeforeAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// hold keeps the current phase under load for at least d and 100 requests
// (bounded: a stalled load fails the test).
func (l *upgradeLoad) hold(t *testing.T, d time.Duration) {
	t.Helper()
	until, n := time.Now().Add(d), l.sent.Load()+100
	eventually(t, d+15*time.Second, fmt.Sprintf("load for %v and %d requests", d, n), func() error {
		if got := l.sent.Load(); got < n || time.Now().Before(until) {
			return fmt.Errorf("%d sent", got)
		}
		return nil
	})
}

func (l *upgradeLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failed...)
}

// upstreamCounts counts the gateway's access-log lines whose uri starts with
// prefix by upstream address, waiting until at least want lines are there
// (nginx writes its log buffer each second).
func upstreamCounts(t *testing.T, s *stack.Stack, prefix string, want int64) map[string]int {
	t.Helper()
	var counts map[string]int
	eventually(t, 10*time.Second, "the gateway's access log", func() error {
		f, err := os.Open(filepath.Join(s.Dir, "nginx", "access.log"))
		if err != nil {
			return err
		}
		defer f.Close()
		counts = map[string]int{}
		var total int64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, `"uri":"`+prefix) {
				continue
			}
			_, rest, ok := strings.Cut(line, `"upstream":"`)
			if !ok {
				continue
			}
			addr, _, _ := strings.Cut(rest, `"`)
			counts[addr]++
			total++
		}
		if err := sc.Err(); err != nil {
			return err
		}
		if total < want {
			return errors.New("not all requests logged yet")
		}
		return nil
	})
	return counts
}
