package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/pgdb"
)

// DefaultAdminURL is tried when TEST_DATABASE_URL is not set.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

var (
	adminOnce sync.Once
	adminURL  string
	adminErr  error
	adminProc *Process
)

// AdminURL returns a DSN of a PostgreSQL server on which tests may create
// databases: TEST_DATABASE_URL, else the default local server when it answers,
// else a throwaway server started for this test process.
func AdminURL() (string, error) {
	adminOnce.Do(func() {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			adminURL = u
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if PingPostgres(ctx, DefaultAdminURL) == nil {
			adminURL = DefaultAdminURL
			return
		}
		dir, err := os.MkdirTemp("", "eventreg-pg-")
		if err != nil {
			adminErr = err
			return
		}
		port, err := FreePort()
		if err != nil {
			adminErr = err
			return
		}
		adminProc, adminURL, adminErr = StartPostgres(context.Background(), filepath.Join(dir, "data"), port)
	})
	return adminURL, adminErr
}

// Main wraps testing.M: it stops what the package started. Use from TestMain:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if adminProc != nil {
		_ = adminProc.Stop()
	}
	os.Exit(code)
}

// NeedsServers skips tb under -short, saying what it needs (e.g.
// "redis-server"): `go test -short` (make test-short) runs only what needs
// nothing running. Every helper here that starts or needs a server
// (NewDatabase, NewPool, NewRedis, StartRedisT, NewRedisClient, StartPostgresPair,
// StartRedisCluster, StartRedisSentinel, CheckOldestSchema) calls it before
// it does, so a test using them checks nothing itself; a test that starts a
// server by other means (StartPostgres, StartRedis) calls it.
func NeedsServers(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs " + what + " (skipped under -short)")
	}
}

// NewDatabase creates an empty database for t and drops it when t ends. It
// returns the database's DSN. It skips t under -short.
func NewDatabase(t testing.TB) string {
	t.Helper()
	NeedsServers(t, "PostgreSQL")
	admin, err := AdminURL()
	if err != nil {
		t.Fatalf("no PostgreSQL for tests: %v", err)
	}
	name := "test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database: %v", err)
	}
	t.Cleanup(func() { DropDatabase(admin, name) })
	return withDatabase(admin, name)
}

// NewPool creates an empty database for t (NewDatabase) and opens a pool on
// it (OpenPool); the database is dropped when t ends. It returns the
// database's DSN and the pool. It skips t under -short.
func NewPool(t testing.TB) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := NewDatabase(t)
	return dsn, OpenPool(t, dsn)
}

// OpenPool opens a pool on dsn as the services do (pgdb.Open), closed when
// t ends.
func OpenPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("opening a pool on the test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// DropDatabase drops name on the server of admin, ending its sessions.
func DropDatabase(admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// CreateDatabase creates a database named name on admin's server (dropping
// any old one) and returns its DSN; for the stack runner.
func CreateDatabase(ctx context.Context, admin, name string, recreate bool) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if recreate {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", fmt.Errorf("dropping database %s: %w", name, err)
		}
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("creating database %s: %w", name, err)
		}
	}
	return withDatabase(admin, name), nil
}

// NewRedis starts a throwaway redis-server for t and returns its URL. It
// skips t under -short.
func NewRedis(t testing.TB) string {
	t.Helper()
	p, url := StartRedisT(t, false)
	_ = p
	return url
}

// StartRedisT starts a redis-server for t (stopped when t ends) and returns
// the process, to stop or kill it in fault tests. It skips t under -short.
func StartRedisT(t testing.TB, aof bool) (*Process, string) {
	t.Helper()
	NeedsServers(t, "redis-server")
	dir := t.TempDir()
	var lastErr error
	for i := 0; i < 5; i++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p, url, err := StartRedis(context.Background(), dir, port, aof)
		if err == nil {
			t.Cleanup(func() { _ = p.Stop() })
			return p, url
		}
		lastErr = err
	}
	t.Fatalf("starting redis: %v", lastErr)
	return nil, ""
}

func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
