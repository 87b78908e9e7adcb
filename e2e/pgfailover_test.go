package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
)

// Role grants of the failover test: every user of the demo fixture gets
// roles failoverRoles.. from a fixture that adds them, each pair once, so
// every acknowledged grant is a row that must survive.
const (
	failoverFirstRole = 101
	failoverRoles     = 600
)

// TestPostgresFailover runs the whole system on a PostgreSQL primary and a
// streaming standby (synchronous replication), every service's DATABASE_URL
// naming both, the standby first, with target_session_attrs=read-write:
// migrate, import and serve all find the primary. Under load the primary
// stops as in a crash. While there is no primary every request that needs
// the database answers 503 in the documented shape within the bound; the
// standby is promoted and every service answers again by itself (same
// processes); every role grant acknowledged before the stop is there.
func TestPostgresFailover(t *testing.T) {
	pair := testkit.StartPostgresPair(t, testkit.PairOptions{Synchronous: true})
	s := stack.Start(t, stack.Options{
		Fixture:          failoverFixture(t),
		AdminDatabaseURL: pair.URL("postgres", pair.StandbyPort, pair.PrimaryPort),
		// Auth looks every client up in its database (no cache), so the
		// token endpoint shows auth's own failover.
		Env: map[string]string{"RATE_LIMIT_PER_SECOND": "5000", "CLIENT_CACHE_TTL": "0s"},
	})
	pids := map[string]int{}
	for _, name := range stack.ServiceNames {
		dsn := s.DatabaseURL(name)
		if !strings.Contains(dsn, ","+"127.0.0.1:"+strconv.Itoa(pair.PrimaryPort)) || !strings.Contains(dsn, "target_session_attrs=read-write") {
			t.Fatalf("%s's DATABASE_URL does not name the standby then the primary: %s", name, dsn)
		}
		pids[name] = s.Services[name].PID()
	}
	tracker := serviceToken(t, s, trackerID, trackerSecret, "user:read", "user:roles:update", "volunteer:read", "registration:read")

	var nextGrant atomic.Int64
	grants := (failoverRoles - failoverFirstRole + 1) * 5
	kinds := []failoverKind{
		{name: "users read", ok: 200, shape: `{"errors":{"server"`, do: func() (reply, string, error) {
			r, err := send(s, "GET", "/api/v0/users/1001", tracker, "")
			return r, "", err
		}},
		{name: "role grant (users)", ok: 204, shape: `{"errors":{"server"`, workers: 2, do: func() (reply, string, error) {
			i := nextGrant.Add(1) - 1
			if i >= int64(grants) {
				return reply{}, "", errGrantsUsedUp
			}
			user, role := 1001+i%5, failoverFirstRole+i/5
			r, err := send(s, "PUT", fmt.Sprintf("/api/v0/users/%d/roles/%d", user, role), tracker, `{"scope": "convention"}`)
			return r, fmt.Sprintf("%d/%d", user, role), err
		}},
		{name: "volunteers search", ok: 200, shape: `{"errors":{"server"`, do: func() (reply, string, error) {
			r, err := send(s, "POST", "/api/v0/volunteers/search", tracker, `{"limit": 10}`)
			return r, "", err
		}},
		{name: "registrations search", ok: 200, shape: `{"errors":{"server"`, do: func() (reply, string, error) {
			r, err := send(s, "POST", "/api/v0/registration/search", tracker, `{"limit": 10}`)
			return r, "", err
		}},
		{name: "token (auth)", ok: 200, shape: `"error":"temporarily_unavailable"`, do: func() (reply, string, error) {
			r, err := tokenRequest(s, trackerID, trackerSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read"}})
			return r, "", err
		}},
	}

	// The outage: from the primary being gone to asking the standby to
	// take over.
	var stoppedAt, promotingAt atomic.Pointer[time.Time]
	var mu sync.Mutex
	var log []failoverAnswer
	var fns []func(int) bool
	for k := range kinds {
		for range max(1, kinds[k].workers) {
			fns = append(fns, func(int) bool {
				start := time.Now()
				stopped, promoting := stoppedAt.Load(), promotingAt.Load()
				r, key, err := kinds[k].do()
				if errors.Is(err, errGrantsUsedUp) {
					return false
				}
				a := failoverAnswer{kind: k, key: key, start: start, end: time.Now(), status: r.status, body: r.body, err: err,
					outage: stopped != nil && start.After(*stopped) && promoting == nil && promotingAt.Load() == nil,
					after:  promoting != nil}
				mu.Lock()
				log = append(log, a)
				mu.Unlock()
				return true
			})
		}
	}
	load := startWorkers(10*time.Millisecond, time.Time{}, fns...)
	defer load.stop()
	// count returns, per kind, the answers matching pick.
	count := func(pick func(failoverAnswer) bool) []int {
		mu.Lock()
		defer mu.Unlock()
		n := make([]int, len(kinds))
		for _, a := range log {
			if pick(a) {
				n[a.kind]++
			}
		}
		return n
	}
	eventually(t, 30*time.Second, "every kind of request served before the stop", func() error {
		for k, n := range count(func(a failoverAnswer) bool { return a.err == nil && a.status == kinds[a.kind].ok }) {
			if n < 20 {
				return fmt.Errorf("%s: %d served", kinds[k].name, n)
			}
		}
		return nil
	})

	stopping := time.Now()
	pair.StopPrimary(t)
	gone := time.Now()
	stoppedAt.Store(&gone)
	eventually(t, 30*time.Second, "every service answering 503 without a primary", func() error {
		if time.Since(gone) < 1500*time.Millisecond {
			return fmt.Errorf("outage of %v so far", time.Since(gone))
		}
		for k, n := range count(func(a failoverAnswer) bool { return a.outage && a.status == 503 }) {
			if n == 0 {
				return fmt.Errorf("%s: no 503 yet", kinds[k].name)
			}
		}
		return nil
	})
	promoting := time.Now()
	promotingAt.Store(&promoting)
	pair.Promote(t)
	promoted := time.Now()
	eventually(t, 30*time.Second, "every service answering again after the promotion", func() error {
		for k, n := range count(func(a failoverAnswer) bool { return a.after && a.err == nil && a.status == kinds[a.kind].ok }) {
			if n < 10 {
				return fmt.Errorf("%s: %d served since the promotion began", kinds[k].name, n)
			}
		}
		return nil
	})
	load.stop()

	// What the clients saw.
	var total, unavailable int
	var outageLatencies, unavailableLatencies []time.Duration
	outageStatuses := map[int]int{}
	recovered := make([]time.Time, len(kinds))
	acked := map[string]bool{}
	unacked := map[string]bool{}
	for _, a := range log {
		k := kinds[a.kind]
		total++
		if a.err != nil {
			t.Errorf("%s: transport error %v after %v", k.name, a.err, a.end.Sub(a.start))
			continue
		}
		switch {
		case a.status == k.ok:
			if a.outage {
				t.Errorf("%s answered %d while there was no primary", k.name, a.status)
			}
			if a.key != "" {
				acked[a.key] = true
			}
			if a.after && (recovered[a.kind].IsZero() || a.end.Before(recovered[a.kind])) {
				recovered[a.kind] = a.end
			}
		case a.status == 503:
			unavailable++
			if !strings.Contains(a.body, k.shape) {
				t.Errorf("%s: 503 not in the documented shape (%s): %.300s", k.name, k.shape, a.body)
			}
			if a.key != "" {
				unacked[a.key] = true
			}
		default:
			t.Errorf("%s: %d %.300s", k.name, a.status, a.body)
		}
		if a.outage {
			outageStatuses[a.status]++
			outageLatencies = append(outageLatencies, a.end.Sub(a.start))
			if a.status == 503 {
				unavailableLatencies = append(unavailableLatencies, a.end.Sub(a.start))
			}
		}
	}
	slices.Sort(outageLatencies)
	slices.Sort(unavailableLatencies)
	if len(unavailableLatencies) == 0 {
		t.Fatal("no request was answered 503 during the outage")
	}
	maxOutage, p50Unavailable := outageLatencies[len(outageLatencies)-1], unavailableLatencies[len(unavailableLatencies)/2]
	if maxOutage > bounded {
		t.Errorf("a request took %v to be answered while there was no primary (bound %v)", maxOutage, bounded)
	}
	// Recovery is for good: once a kind is served after the promotion,
	// every later request of that kind is.
	for _, a := range log {
		if a.after && !recovered[a.kind].IsZero() && a.start.After(recovered[a.kind]) && (a.err != nil || a.status != kinds[a.kind].ok) {
			t.Errorf("%s: %d after it had recovered: %.200s", kinds[a.kind].name, a.status, a.body)
		}
	}
	var recovery time.Duration
	for k, at := range recovered {
		t.Logf("%-20s served again %v after the promotion began", kinds[k].name, at.Sub(promoting).Round(time.Millisecond))
		recovery = max(recovery, at.Sub(promoting))
	}
	for name, pid := range pids {
		if s.Services[name].PID() != pid || !s.Services[name].Running() {
			t.Errorf("%s was restarted or stopped during the failover", name)
		}
	}

	// Nothing acknowledged is lost: every 204 grant is on the new primary.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DatabaseURL("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT user_id, role_id FROM role_members WHERE role_id >= $1", failoverFirstRole)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for rows.Next() {
		var user, role int64
		if err := rows.Scan(&user, &role); err != nil {
			t.Fatal(err)
		}
		held[fmt.Sprintf("%d/%d", user, role)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var lost, unackedKept int
	for key := range acked {
		if !held[key] {
			lost++
		}
	}
	for key := range unacked {
		if held[key] {
			unackedKept++
		}
	}
	t.Logf("postgres failover: %d requests, %d answered 503; during the %v outage %d answers %v, 503s in p50 %v, max latency %v; "+
		"every service serving again %.1fs after the promotion began (%.1fs after the stop; promotion took %v); "+
		"%d acknowledged grants, %d lost, %d unacknowledged kept",
		total, unavailable, promoting.Sub(gone).Round(time.Millisecond), len(outageLatencies), outageStatuses,
		p50Unavailable.Round(time.Millisecond/10), maxOutage.Round(time.Millisecond/10),
		recovery.Seconds(), recovery.Seconds()+promoting.Sub(stopping).Seconds(), promoted.Sub(promoting).Round(time.Millisecond),
		len(acked), lost, unackedKept)
	if len(acked) == 0 {
		t.Fatal("no grant was acknowledged")
	}
	if lost > 0 {
		t.Errorf("%d acknowledged role grants lost in the failover", lost)
	}
}

// failoverKind is one kind of request of the failover load.
type failoverKind struct {
	name string
	// ok is the status of success; shape is what a 503's body holds.
	ok      int
	shape   string
	workers int
	// do sends one request; key names the row a write makes.
	do func() (r reply, key string, err error)
}

type failoverAnswer struct {
	kind       int
	key        string
	start, end time.Time
	status     int
	body       string
	err        error
	// outage: sent after the primary was gone and answered before the
	// promotion began; after: sent once the promotion had begun.
	outage, after bool
}

var errGrantsUsedUp = errors.New("every role grant of the test was sent")

// failoverFixture is the demo fixture plus the roles the test grants.
func failoverFixture(t *testing.T) string {
	t.Helper()
	doc := demoFixture(t)
	roles, _ := doc["roles"].([]any)
	for id := failoverFirstRole; id <= failoverRoles; id++ {
		roles = append(roles, map[string]any{"id": id, "name": fmt.Sprintf("failover-%d", id), "permissions": []string{"con:read"}})
	}
	doc["roles"] = roles
	return resourcetest.WriteFixtureJSON(t, doc)
}
