package pgdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestUnreachableDatabaseIsUnavailableQuickly(t *testing.T) {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	start := time.Now()
	err = pgdb.Ping(pool)(ctx)
	if err == nil || !pgdb.IsUnavailable(err) {
		t.Fatalf("want unavailable, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

func TestBadDSNDoesNotEchoIt(t *testing.T) {
	_, err := pgdb.Open(context.Background(), "postgres://user:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("got %v", err)
	}
}

func TestConstraintErrors(t *testing.T) {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, testkit.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (p int REFERENCES p(id))`); err != nil {
		t.Fatal(err)
	}
	_, _ = pool.Exec(ctx, `INSERT INTO p VALUES (1)`)
	_, err = pool.Exec(ctx, `INSERT INTO p VALUES (1)`)
	if !pgdb.UniqueViolation(err) || pgdb.IsUnavailable(err) {
		t.Fatalf("unique: %v", err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO c VALUES (2)`)
	if !pgdb.ForeignKeyViolation(err) {
		t.Fatalf("fk: %v", err)
	}
	if pgdb.IsUnavailable(errors.New("other")) {
		t.Fatal("a plain error is not unavailability")
	}
}

func TestGenericPlansUnlessTheDSNSaysOtherwise(t *testing.T) {
	ctx := context.Background()
	dsn := testkit.NewDatabase(t)
	mode := func(t *testing.T, dsn string) string {
		t.Helper()
		pool, err := pgdb.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var m string
		if err := pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := mode(t, dsn); m != "force_generic_plan" {
		t.Errorf("default plan_cache_mode %q, want force_generic_plan", m)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	if m := mode(t, dsn+sep+"plan_cache_mode=auto"); m != "auto" {
		t.Errorf("with plan_cache_mode=auto in the DSN: %q", m)
	}
}

func TestRefusedSessionIsUnavailable(t *testing.T) {
	ctx := context.Background()
	dsn := testkit.NewDatabase(t)
	admin, err := testkit.AdminURL()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cfg, _ := pgx.ParseConfig(dsn)
	db := pgx.Identifier{cfg.Database}.Sanitize()
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	// testkit's cleanup drops it: DROP DATABASE does not need to connect to it.
	pool, err := pgdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pgdb.Ping(pool)(ctx); err == nil || !pgdb.IsUnavailable(err) {
		t.Fatalf("a database refusing sessions: want unavailable, got %v", err)
	}
}
