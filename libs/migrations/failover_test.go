package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestUpOnAPrimaryAndStandbyDSN: a DSN naming a primary and a standby with
// target_session_attrs=read-write migrates the primary, in the URL and the
// keyword form, whichever host is listed first; a DSN naming only the
// standby fails (it refuses writes).
func TestUpOnAPrimaryAndStandbyDSN(t *testing.T) {
	ctx := context.Background()
	pair := testkit.StartPostgresPair(t, testkit.PairOptions{})
	set := migrations.New(files, "sql")
	keyword := func(db string, ports ...int) string {
		return fmt.Sprintf("host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=%s sslmode=disable target_session_attrs=read-write", ports[0], ports[1], db)
	}
	p, s := pair.PrimaryPort, pair.StandbyPort
	cases := []struct{ name, db, dsn string }{
		{"URL, primary first", "url_ps", pair.URL("url_ps", p, s)},
		{"URL, standby first", "url_sp", pair.URL("url_sp", s, p)},
		{"keyword form, primary first", "kw_ps", keyword("kw_ps", p, s)},
		{"keyword form, standby first", "kw_sp", keyword("kw_sp", s, p)},
	}
	admin, err := pgx.Connect(ctx, pair.ServerURL(p, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, c := range append(cases, struct{ name, db, dsn string }{"standby only", "standby_only", ""}) {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+c.db); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := set.Up(c.dsn); err != nil {
				t.Fatalf("up: %v", err)
			}
			// Readiness reads the version through the service's pool on the
			// same DSN; the standby has it too once replayed.
			pool, err := pgdb.Open(ctx, c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if err := set.Check(pool)(ctx); err != nil {
				t.Fatalf("readiness after up: %v", err)
			}
			standby, err := pgdb.Open(ctx, pair.ServerURL(s, c.db))
			if err != nil {
				t.Fatal(err)
			}
			defer standby.Close()
			if err := testkit.Poll(ctx, 10*time.Second, set.Check(standby)); err != nil {
				t.Fatalf("the standby does not have the migrations: %v", err)
			}
		})
	}
	t.Run("a DSN naming only the standby fails", func(t *testing.T) {
		if err := set.Up(pair.URL("standby_only", s)); err == nil {
			t.Fatal("migrated through the standby alone")
		}
	})
}
