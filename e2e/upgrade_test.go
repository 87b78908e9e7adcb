package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
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
	token := serviceToken(t, s, trackerID, trackerSecret, "volunteer:read")
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
		before[i] = mustSend(t, s, r.method, r.path, token, contentTypeOf(r.body), r.body).body
	}

	// Steady load: a few workers, bounded in time whatever happens below.
	load := startUpgradeLoad(s, token, reads, 4, 45*time.Second)
	defer load.stop()
	readiness := startReadinessPolls(oldRelease.InternalURL, 25*time.Millisecond)
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
		dirtyWindow = readyzOnce(oldRelease.InternalURL)
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
	t.Logf("upgrade of volunteers under load: %d requests, %d failures (%d resent once: kept-alive connection closed by a gateway reload), %d readiness polls of N (%d unready), %.1f s",
		sent, len(failures), load.resent.Load(), polls, len(unready), elapsed.Seconds())
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
	byUpstream := upstreamCounts(t, s, "/api/v0/volunteers/", sent)
	oldAddr := strings.TrimPrefix(oldRelease.PublicURL, "http://")
	if byUpstream[oldAddr] == 0 || byUpstream[newAddr] == 0 {
		t.Errorf("requests by upstream in the gateway's log: %v; want some answered by N (%s) and some by N+1 (%s)", byUpstream, oldAddr, newAddr)
	}
	// Same data after as before (the API takes no writes to check).
	for i, r := range reads {
		if after := mustSend(t, s, r.method, r.path, token, contentTypeOf(r.body), r.body).body; after != before[i] {
			t.Errorf("%s %s after the upgrade differs:\nbefore %.300s\nafter  %.300s", r.method, r.path, before[i], after)
		}
	}
}

func contentTypeOf(body string) string {
	if body == "" {
		return ""
	}
	return "application/json"
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

// upgradeLoad is a few workers repeating reads through the gateway until
// stopped or their time is up; every answer that is not a 200, and every
// transport error but the one read resends, is a failure.
type upgradeLoad struct {
	sent     atomic.Int64
	resent   atomic.Int64
	mu       sync.Mutex
	failed   []string
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func startUpgradeLoad(s *stack.Stack, token string, reads []struct{ method, path, body string }, workers int, limit time.Duration) *upgradeLoad {
	l := &upgradeLoad{done: make(chan struct{})}
	deadline := time.Now().Add(limit)
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := w; time.Now().Before(deadline); i++ {
				select {
				case <-l.done:
					return
				default:
				}
				r := reads[i%len(reads)]
				got, err := l.read(s, token, r.method, r.path, r.body)
				l.sent.Add(1)
				if err != nil || got.status != http.StatusOK {
					l.mu.Lock()
					l.failed = append(l.failed, fmt.Sprintf("%s %s at %s: %v %d %.200s", r.method, r.path, time.Now().Format("15:04:05.000"), err, got.status, got.body))
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// read sends one read through the gateway. A read sent on a kept-alive
// connection that the gateway closed before answering anything is sent once
// more (counted in resent): nginx closes its idle client connections when the
// workers of the previous configuration exit at a reload, and a request can
// cross that close on the wire. HTTP lets a client resend a request that got
// no answer when it is safe (RFC 9110 §9.2.2, RFC 9112 §9.3.1), and Go's
// client does so by itself for a GET, but not for a POST, though the search
// is a read.
func (l *upgradeLoad) read(s *stack.Stack, token, method, path, body string) (reply, error) {
	var reused, answered bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(info httptrace.GotConnInfo) { reused = info.Reused },
		GotFirstResponseByte: func() { answered = true },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), method, s.GatewayURL+path, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		if reused && !answered && closedBeforeAnswer(err) {
			l.resent.Add(1)
			return send(s, method, path, token, contentTypeOf(body), body)
		}
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b)}, err
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

func (l *upgradeLoad) stop() {
	l.stopOnce.Do(func() { close(l.done) })
	l.wg.Wait()
}

func (l *upgradeLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failed...)
}

// readinessPolls GETs a service's internal /readyz at an interval, as a
// readiness probe would, counting polls and keeping every answer but a 200.
type readinessPolls struct {
	polls    atomic.Int64
	mu       sync.Mutex
	failed   []string
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func startReadinessPolls(internalURL string, every time.Duration) *readinessPolls {
	p := &readinessPolls{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			p.polls.Add(1)
			if bad := readyzOnce(internalURL); bad != "" {
				p.mu.Lock()
				p.failed = append(p.failed, bad)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *readinessPolls) stop() {
	p.stopOnce.Do(func() { close(p.done) })
	p.wg.Wait()
}

func (p *readinessPolls) failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failed...)
}

// readyzOnce asks /readyz once: "" for a 200, else what came back.
func readyzOnce(internalURL string) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(internalURL + "/readyz")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return ""
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
