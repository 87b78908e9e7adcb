package pgdb_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestPoolFollowsAFailover: a pool on a DSN naming a primary and a standby
// (target_session_attrs=read-write) writes to the primary whichever host is
// listed first; while writers insert rows, the primary stops as in a crash:
// every write fails as unavailable within the bound, none hangs; the standby
// is promoted and the same pool writes again on its own. With synchronous
// replication no acknowledged row is lost; with asynchronous replication
// (PostgreSQL's default) the loss is measured and reported.
func TestPoolFollowsAFailover(t *testing.T) {
	testkit.NeedsServers(t, "a PostgreSQL primary and standby") // here, not in each case
	for _, synchronous := range []bool{true, false} {
		name := map[bool]string{true: "synchronous replication: nothing acknowledged is lost", false: "asynchronous replication: loss measured"}[synchronous]
		t.Run(name, func(t *testing.T) { poolFailover(t, synchronous) })
	}
}

// outageBound is how long a request may take to fail while there is no
// primary: the stopped primary refuses at once and the standby is refused
// by target_session_attrs, so this is far more than needed.
const outageBound = 2 * time.Second

func poolFailover(t *testing.T, synchronous bool) {
	ctx := context.Background()
	pair := testkit.StartPostgresPair(t, testkit.PairOptions{Synchronous: synchronous})
	open := func(dsn string) *pgxpool.Pool {
		t.Helper()
		pool, err := pgdb.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	for _, order := range [][]int{{pair.PrimaryPort, pair.StandbyPort}, {pair.StandbyPort, pair.PrimaryPort}} {
		var port int
		if err := open(pair.URL("postgres", order...)).QueryRow(ctx, "SELECT inet_server_port()").Scan(&port); err != nil || port != pair.PrimaryPort {
			t.Fatalf("hosts %v: the pool's session is on port %d (%v), want the primary's %d", order, port, err, pair.PrimaryPort)
		}
	}
	pool := open(pair.URL("postgres", pair.StandbyPort, pair.PrimaryPort))
	if _, err := pool.Exec(ctx, "CREATE TABLE acked (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	// Writers insert ids and keep those acknowledged.
	var (
		next, failed atomic.Int64
		// The outage: from the primary being gone to asking the standby
		// to take over.
		stoppedAt, promotingAt atomic.Pointer[time.Time]
		mu                     sync.Mutex
		acked                  []int64
		unexpected             []error
		outageLatencies        []time.Duration
		maxOutage              time.Duration
		okDuringOutage         int
		recoveredAt            time.Time
		stop                   = make(chan struct{})
		wg                     sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				id := next.Add(1)
				start := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := pool.Exec(cctx, "INSERT INTO acked VALUES ($1)", id)
				cancel()
				took := time.Since(start)
				stopped, promoting := stoppedAt.Load(), promotingAt.Load()
				inOutage := stopped != nil && start.After(*stopped) && promoting == nil
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, id)
					if inOutage {
						okDuringOutage++
					}
					if promoting != nil && recoveredAt.IsZero() {
						recoveredAt = time.Now()
					}
				case pgdb.IsUnavailable(err):
					failed.Add(1)
				default:
					unexpected = append(unexpected, err)
				}
				if inOutage {
					outageLatencies = append(outageLatencies, took)
					maxOutage = max(maxOutage, took)
				}
				mu.Unlock()
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	if err := testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
		if n := count(); n < 200 {
			return fmt.Errorf("%d rows acknowledged", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	pair.StopPrimary(t)
	gone := time.Now()
	stoppedAt.Store(&gone)
	ackedBeforeStop := count()
	// The outage lasts until writers have failed for a second.
	failedAtStop := failed.Load()
	if err := testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
		if time.Since(gone) < time.Second || failed.Load()-failedAtStop < 20 {
			return fmt.Errorf("%d writes failed since the stop", failed.Load()-failedAtStop)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	promoting := time.Now()
	promotingAt.Store(&promoting)
	pair.Promote(t)
	if err := testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if recoveredAt.IsZero() {
			return fmt.Errorf("no write acknowledged since the promotion began")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()

	ids := append([]int64(nil), acked...)
	var found int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM acked WHERE id = ANY($1)", ids).Scan(&found); err != nil {
		t.Fatal(err)
	}
	lost := len(ids) - found
	slices.Sort(outageLatencies)
	if len(outageLatencies) == 0 {
		t.Fatal("no write was tried during the outage")
	}
	t.Logf("synchronous=%v: %d writes, %d acknowledged (%d before the stop), %d unavailable, latency during the outage p50 %v max %v, "+
		"writing again %v after the promotion began (%v after the stop), %d acknowledged rows lost",
		synchronous, next.Load(), len(ids), ackedBeforeStop, failed.Load(),
		outageLatencies[len(outageLatencies)/2].Round(time.Millisecond/10), maxOutage.Round(time.Millisecond/10),
		recoveredAt.Sub(promoting).Round(time.Millisecond), recoveredAt.Sub(now).Round(time.Millisecond), lost)
	if len(unexpected) > 0 {
		t.Errorf("%d writes failed other than as unavailable, e.g. %v", len(unexpected), unexpected[0])
	}
	if okDuringOutage > 0 {
		t.Errorf("%d writes acknowledged while there was no primary", okDuringOutage)
	}
	if maxOutage > outageBound {
		t.Errorf("a write took %v to fail during the outage (bound %v)", maxOutage, outageBound)
	}
	if synchronous && lost > 0 {
		t.Errorf("%d acknowledged rows lost with synchronous replication", lost)
	}
}
