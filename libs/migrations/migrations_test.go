package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/migrations"
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
	dsn, pool := testkit.NewPool(t)
	ctx := context.Background()
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

// TestReadinessFollowsSchemaCompatibility: a binary stays ready when a newer
// release migrates the schema ahead of it, is unready on an older schema
// (unless it declares it runs on it) or a dirty one, and `force` repairs a
// dirty state.
func TestReadinessFollowsSchemaCompatibility(t *testing.T) {
	dsn, pool := testkit.NewPool(t)
	ctx := context.Background()
	release1 := migrations.New(fstest.MapFS{
		"sql/0001_things.up.sql":   files["sql/0001_things.up.sql"],
		"sql/0001_things.down.sql": files["sql/0001_things.down.sql"],
	}, "sql")
	release2 := migrations.New(files, "sql")

	if err := release1.Up(dsn); err != nil {
		t.Fatal(err)
	}
	t.Run("the next release's binary is unready on the old schema", func(t *testing.T) {
		if err := release2.Check(pool)(ctx); err == nil || !strings.Contains(err.Error(), "older than this binary needs") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unless it declares it runs on it", func(t *testing.T) {
		if err := release2.RunsOn(1).Check(pool)(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if err := release2.Up(dsn); err != nil {
		t.Fatal(err)
	}
	t.Run("the running release stays ready when the schema moves ahead of it", func(t *testing.T) {
		if err := release1.Check(pool)(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := release1.Status(ctx, pool); !st.Ahead() || !st.Serves() || st.Current() {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("a dirty schema stops the binary whose migration it is, and force makes it clean", func(t *testing.T) {
		if _, err := pool.Exec(ctx, "UPDATE schema_migrations SET dirty = true"); err != nil {
			t.Fatal(err)
		}
		if err := release2.Check(pool)(ctx); err == nil || !strings.Contains(err.Error(), "dirty") {
			t.Fatalf("dirty at its own version: %v", err)
		}
		// A newer release's migration running (or failed) does not stop the older one.
		if err := release1.Check(pool)(ctx); err != nil {
			t.Fatalf("dirty at a version ahead of the binary: %v", err)
		}
		if err := release2.Force(dsn, 2); err != nil {
			t.Fatal(err)
		}
		if err := release2.Check(pool)(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEveryFormOfTheServicesDSN: migrate takes what the services' pools
// take (the keyword form, pool settings) and never echoes a DSN it cannot
// parse, which may hold a password.
func TestEveryFormOfTheServicesDSN(t *testing.T) {
	if err := migrations.New(files, "sql").Up("postgres://u:s3cret@host:notaport/db"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a bad DSN: %v", err)
	}
	dsn := testkit.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	keyword := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable pool_max_conns=2", cfg.Host, cfg.Port, cfg.User, cfg.Database)
	if cfg.Password != "" {
		keyword += " password=" + cfg.Password
	}
	set := migrations.New(files, "sql")
	if err := set.Up(keyword); err != nil {
		t.Fatalf("keyword form with pool_max_conns: %v", err)
	}
	if st, err := set.Status(context.Background(), testkit.OpenPool(t, dsn)); err != nil || !st.Current() {
		t.Fatalf("status after up: %+v %v", st, err)
	}
}

// TestWithALibrarysMigrations: a set with a library's migration lists it
// between the service's own, applies each in version order and rolls them
// back; a file both hold is refused.
func TestWithALibrarysMigrations(t *testing.T) {
	own := fstest.MapFS{
		"sql/0001_things.up.sql":   files["sql/0001_things.up.sql"],
		"sql/0001_things.down.sql": files["sql/0001_things.down.sql"],
		"sql/0003_more.up.sql":     files["sql/0002_more.up.sql"],
		"sql/0003_more.down.sql":   files["sql/0002_more.down.sql"],
	}
	library := fstest.MapFS{
		"0002_lib.up.sql":   {Data: []byte("CREATE TABLE lib (id bigint PRIMARY KEY);")},
		"0002_lib.down.sql": {Data: []byte("DROP TABLE lib;")},
	}
	set := migrations.New(own, "sql").With(library)
	names, err := set.Names()
	if diff := cmp.Diff(map[uint]string{1: "things", 2: "lib", 3: "more"}, names); err != nil || diff != "" {
		t.Fatalf("names (-want +got):\n%s%v", diff, err)
	}
	if latest, err := set.Latest(); err != nil || latest != 3 {
		t.Fatalf("latest %d %v", latest, err)
	}
	clash := fstest.MapFS{"0002_lib.up.sql": {Data: []byte("SELECT 1;")}}
	if _, err := migrations.New(clash, ".").With(library).Latest(); err == nil {
		t.Fatal("a migration both the service and the library hold is taken")
	}

	dsn, pool := testkit.NewPool(t)
	ctx := context.Background()
	if err := set.UpTo(dsn, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO lib (id) VALUES (1)"); err != nil {
		t.Fatalf("the library's table at version 2: %v", err)
	}
	if err := set.Up(dsn); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO things (id, name) VALUES (1, 'x')"); err != nil {
		t.Fatalf("version 3: %v", err)
	}
	if err := set.UpTo(dsn, 1); err != nil {
		t.Fatal(err)
	}
	var libs int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'lib'").Scan(&libs); err != nil || libs != 0 {
		t.Fatalf("the library's table after rolling back to 1: %d %v", libs, err)
	}
}
