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

// Options of a baseline run.
type Options struct {
	AdminURL string // PostgreSQL server (a database on it is created)
	Database string // default bench_pgbench
	Scale    int    // pgbench -i -s (default 10)
	Clients  int    // -c (default 16)
	Threads  int    // -j (default 2)
	Duration time.Duration
}

// Run initializes the pgbench tables when they are missing (kept between runs)
// and runs `pgbench -S`.
func Run(ctx context.Context, o Options) (report.PgBench, error) {
	if o.Database == "" {
		o.Database = "bench_pgbench"
	}
	if o.Scale == 0 {
		o.Scale = 10
	}
	if o.Clients == 0 {
		o.Clients = 16
	}
	if o.Threads == 0 {
		o.Threads = 2
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	secs := max(1, int(o.Duration/time.Second))
	res := report.PgBench{Clients: o.Clients, Threads: o.Threads, DurationSeconds: secs, ScaleFactor: o.Scale}
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return res, fmt.Errorf("pgbench not found (Debian: postgresql-client): %w", err)
	}
	dsn, err := testkit.CreateDatabase(ctx, o.AdminURL, o.Database, false)
	if err != nil {
		return res, fmt.Errorf("creating the pgbench database: %w", err)
	}
	ready, err := initialized(ctx, dsn, o.Scale)
	if err != nil {
		return res, err
	}
	if !ready {
		if out, err := exec.CommandContext(ctx, bin, "-i", "-q", "-s", strconv.Itoa(o.Scale), dsn).CombinedOutput(); err != nil {
			return res, fmt.Errorf("pgbench -i: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, "-S", "-n", "-c", strconv.Itoa(o.Clients), "-j", strconv.Itoa(o.Threads), "-T", strconv.Itoa(secs), dsn)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("pgbench -S: %v\n%s", err, out.String())
	}
	tps, err := ParseTPS(out.Bytes())
	if err != nil {
		return res, err
	}
	res.TPS = tps
	return res, nil
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

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \((without initial connection time|excluding connections establishing)\)`)

// ParseTPS reads the throughput from pgbench's summary.
func ParseTPS(out []byte) (float64, error) {
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps line in pgbench's output:\n%s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, fmt.Errorf("parsing pgbench's tps %q: %w", m[1], err)
	}
	return tps, nil
}
