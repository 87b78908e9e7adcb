// Package pgbench runs PostgreSQL's own pgbench (select-only, -S) against the server the services use, as the baseline for authenticated reads.
package pgbench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/bench/internal/report"
	"github.com/eventreg/eventreg/libs/testkit"
)

// Options of the baseline.
type Options struct {
	AdminURL string // PostgreSQL server (a database on it is created)
	Database string // default bench_pgbench
	Scale    int    // pgbench -i -s (default 10)
	Threads  int    // -j (default 2; never more than the clients)
}

// Warmup is the unmeasured start of every measured pgbench run: long enough
// for its new connections and PostgreSQL's shared buffers to reach their
// steady rate (pgbench climbs for about ten seconds after the services'
// reads evicted its pages, on the 2-core VM).
const Warmup = 15 * time.Second

// Baseline is a prepared pgbench database that can be measured in slices.
type Baseline struct {
	bin, dsn string
	o        Options
}

// Prepare initializes the pgbench tables when they are missing (kept between
// runs).
func Prepare(ctx context.Context, o Options) (*Baseline, error) {
	if o.Database == "" {
		o.Database = "bench_pgbench"
	}
	if o.Scale == 0 {
		o.Scale = 10
	}
	if o.Threads == 0 {
		o.Threads = 2
	}
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return nil, fmt.Errorf("pgbench not found (Debian: postgresql-client): %w", err)
	}
	dsn, err := testkit.CreateDatabase(ctx, o.AdminURL, o.Database, false)
	if err != nil {
		return nil, fmt.Errorf("creating the pgbench database: %w", err)
	}
	ready, err := initialized(ctx, dsn, o.Scale)
	if err != nil {
		return nil, err
	}
	if !ready {
		if out, err := exec.CommandContext(ctx, bin, "-i", "-q", "-s", strconv.Itoa(o.Scale), dsn).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("pgbench -i: %v\n%s", err, out)
		}
	}
	return &Baseline{bin: bin, dsn: dsn, o: o}, nil
}

// threads is -j for a number of clients: pgbench refuses more threads than clients.
func (b *Baseline) threads(clients int) int { return max(1, min(b.o.Threads, clients)) }

// Result describes the baseline at a number of clients before any
// measurement (TPS 0).
func (b *Baseline) Result(clients int) report.PgBench {
	return report.PgBench{Clients: clients, Threads: b.threads(clients), ScaleFactor: b.o.Scale}
}

// Measure runs one `pgbench -S -c clients` for warmup + d (whole seconds) and returns
// its throughput over the last d seconds, from its per-second progress
// lines: the figure of warmed-up connections. A new pgbench's backends start
// cold (on the 2-core VM its first seconds run at half the rate of its
// later ones, even with PostgreSQL's buffers warm), and the services' pools
// keep their connections open, so only pgbench's steady state compares.
func (b *Baseline) Measure(ctx context.Context, clients int, warmup, d time.Duration) (tps float64, secs int, err error) {
	skip := int((warmup + time.Second/2) / time.Second)
	secs = max(1, int((d+time.Second/2)/time.Second))
	cmd := exec.CommandContext(ctx, b.bin, "-S", "-n", "-P", "1", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(b.threads(clients)),
		"-T", strconv.Itoa(skip+secs), b.dsn)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, secs, fmt.Errorf("pgbench -S: %v\n%s", err, out.String())
	}
	tps, err = SteadyTPS(out.Bytes(), float64(skip))
	return tps, secs, err
}

var progressLine = regexp.MustCompile(`(?m)^progress: ([0-9.]+) s, ([0-9.]+) tps`)

// SteadyTPS averages pgbench's per-second progress lines (-P 1) of the
// intervals ending after skip seconds.
func SteadyTPS(out []byte, skip float64) (float64, error) {
	var sum float64
	n := 0
	for _, m := range progressLine.FindAllSubmatch(out, -1) {
		at, err1 := strconv.ParseFloat(string(m[1]), 64)
		tps, err2 := strconv.ParseFloat(string(m[2]), 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("parsing pgbench's progress line %q", m[0])
		}
		if at > skip {
			sum += tps
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no progress line after %.0f s in pgbench's output:\n%s", skip, out)
	}
	return sum / float64(n), nil
}

// initialized reports whether pgbench_accounts holds the rows of scale.
func initialized(ctx context.Context, dsn string, scale int) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, fmt.Errorf("connecting to the pgbench database: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('pgbench_accounts') IS NOT NULL`).Scan(&exists); err != nil {
		return false, fmt.Errorf("looking for pgbench_accounts: %w", err)
	}
	if !exists {
		return false, nil
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pgbench_accounts`).Scan(&n); err != nil {
		return false, fmt.Errorf("counting pgbench_accounts: %w", err)
	}
	return n == int64(scale)*100_000, nil
}
