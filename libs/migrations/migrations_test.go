package migrations_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var files = fstest.MapFS{
	"sql/0001_things.up.sql":   {Data: []byte("CREATE TABLE things (id bigint PRIMARY KEY);")},
	"sql/0001_things.down.sql": {Data: []byte("DROP TABLE things;")},
	"sql/0002_more.up.sql":     {Data: []byte("ALTER TABLE things ADD COLUMN name text;")},
	"sql/0002_more.down.sql":   {Data: []byte("ALTER TABLE things DROP COLUMN name;")},
}

func TestUpStatusDownAndReadiness(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	dsn := testkit.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	set := migrations.New(files, "sql")

	if err := set.Check(pool)(ctx); err == nil {
		t.Fatal("readiness passes before migrating")
	}
	if err := set.Up(dsn); err != nil {
		t.Fatal(err)
	}
	if err := set.Up(dsn); err != nil {
		t.Fatalf("second up is not a no-op: %v", err)
	}
	st, err := set.Status(ctx, pool)
	if err != nil || !st.Current() || st.Version != 2 {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := set.Check(pool)(ctx); err != nil {
		t.Fatalf("readiness after up: %v", err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO things (id, name) VALUES (1, 'x')"); err != nil {
		t.Fatal(err)
	}
	if err := set.Down(dsn); err != nil {
		t.Fatal(err)
	}
	if st, _ := set.Status(ctx, pool); st.Version != 1 || st.Current() {
		t.Fatalf("after down: %+v", st)
	}
	if err := set.Check(pool)(ctx); err == nil {
		t.Fatal("readiness passes with a pending migration")
	}
}
