package testkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresPair is a PostgreSQL primary and a standby streaming from it, on
// loopback, for failover tests.
type PostgresPair struct {
	Primary, Standby         *Process
	PrimaryPort, StandbyPort int

	bin                    string
	cred                   *syscall.Credential
	primaryDir, standbyDir string
	primaryLog, standbyLog string
}

// PairOptions configure StartPostgresPair.
type PairOptions struct {
	// Synchronous makes the primary wait, before acknowledging a commit,
	// until the standby has flushed it (synchronous_standby_names = '*',
	// synchronous_commit = on): then no acknowledged commit is lost when the
	// standby takes over. Off, replication is asynchronous (PostgreSQL's
	// default) and the last commits before a primary's crash may be.
	Synchronous bool
}

// StartPostgresPair starts a primary and a streaming standby for t (both
// stopped when t ends) and waits until the standby streams. Running as
// root, the clusters belong to the "postgres" OS user, as with StartPostgres.
// It skips t under -short.
func StartPostgresPair(t testing.TB, opts PairOptions) *PostgresPair {
	t.Helper()
	NeedsServers(t, "a PostgreSQL primary and standby")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := PostgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	p := &PostgresPair{
		bin: bin, PrimaryPort: freePortT(t), StandbyPort: freePortT(t),
		primaryDir: filepath.Join(base, "primary"), standbyDir: filepath.Join(base, "standby"),
		primaryLog: filepath.Join(base, "primary.log"), standbyLog: filepath.Join(base, "standby.log"),
	}
	t.Cleanup(func() { // before t.TempDir's cleanup removes the logs
		if t.Failed() {
			for _, log := range []string{p.primaryLog, p.standbyLog} {
				b, _ := os.ReadFile(log)
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("--- %s (last lines) ---\n%s", filepath.Base(log), strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	})
	if p.cred, err = postgresDataDir(p.primaryDir); err != nil {
		t.Fatal(err)
	}
	if err := initdb(ctx, bin, p.primaryDir, p.cred); err != nil {
		t.Fatal(err)
	}
	hba, err := os.OpenFile(filepath.Join(p.primaryDir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = hba.WriteString("host replication all 127.0.0.1/32 trust\n")
	if cerr := hba.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	// fsync is off for speed: stopping a server (even with -m immediate)
	// loses nothing that fsync would keep; only the machine crashing does.
	common := []string{"wal_level=replica", "max_wal_senders=4", "hot_standby=on", "fsync=off", "max_connections=200",
		"synchronous_commit=on", "wal_receiver_status_interval=1s"}
	primary := common
	if opts.Synchronous {
		// Only on the primary: a promoted standby with no standby of its own
		// would wait for one forever.
		primary = append(append([]string(nil), common...), "synchronous_standby_names=*")
	}
	if p.Primary, _, err = startPostmaster(ctx, bin, p.primaryDir, p.PrimaryPort, p.cred, p.primaryLog, primary...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Primary.Stop() })

	if _, err := postgresDataDir(p.standbyDir); err != nil {
		t.Fatal(err)
	}
	if err := postgresCommand(ctx, bin, p.cred, "pg_basebackup", "-R", "-D", p.standbyDir, "-h", "127.0.0.1",
		"-p", strconv.Itoa(p.PrimaryPort), "-U", "postgres", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		t.Fatal(err)
	}
	if p.Standby, _, err = startPostmaster(ctx, bin, p.standbyDir, p.StandbyPort, p.cred, p.standbyLog, common...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Standby.Stop() })

	want := "state = 'streaming'"
	if opts.Synchronous {
		want += " AND sync_state = 'sync'"
	}
	if err := Poll(ctx, 30*time.Second, func(ctx context.Context) error {
		var n int
		if err := queryRow(ctx, p.ServerURL(p.PrimaryPort, "postgres"), "SELECT count(*) FROM pg_stat_replication WHERE "+want, &n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no standby in pg_stat_replication with %s", want)
		}
		return nil
	}); err != nil {
		t.Fatalf("the standby does not stream: %v", err)
	}
	return p
}

// URL is a DSN of database naming the servers on ports in that order (the
// primary then the standby when none are given) with
// target_session_attrs=read-write: a session goes to whichever accepts writes.
func (p *PostgresPair) URL(database string, ports ...int) string {
	if len(ports) == 0 {
		ports = []int{p.PrimaryPort, p.StandbyPort}
	}
	hosts := make([]string, len(ports))
	for i, port := range ports {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), database)
}

// ServerURL is a DSN of database on the one server on port, whatever its role.
func (p *PostgresPair) ServerURL(port int, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, database)
}

// StopPrimary stops the primary as a crash would (pg_ctl -m immediate: no
// shutdown checkpoint, sessions cut) and waits until it is gone.
func (p *PostgresPair) StopPrimary(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := postgresCommand(ctx, p.bin, p.cred, "pg_ctl", "-D", p.primaryDir, "-m", "immediate", "-w", "stop"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Primary.done:
	case <-ctx.Done():
		t.Fatal("the primary did not exit after pg_ctl stop")
	}
}

// Promote promotes the standby and waits until it accepts writes.
func (p *PostgresPair) Promote(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var promoted bool
	if err := queryRow(ctx, p.ServerURL(p.StandbyPort, "postgres"), "SELECT pg_promote(true, 25)", &promoted); err != nil || !promoted {
		t.Fatalf("promoting the standby: %v (promoted: %v)", err, promoted)
	}
	if err := Poll(ctx, 25*time.Second, func(ctx context.Context) error {
		var readOnly string
		if err := queryRow(ctx, p.ServerURL(p.StandbyPort, "postgres"), "SHOW transaction_read_only", &readOnly); err != nil {
			return err
		}
		if readOnly != "off" {
			return fmt.Errorf("still read-only")
		}
		return nil
	}); err != nil {
		t.Fatalf("the promoted standby does not accept writes: %v", err)
	}
}

func queryRow(ctx context.Context, dsn, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
