package migrations

import (
	"context"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	libmigrations "github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// before returns the migrations older than version.
func before(t *testing.T, version int) libmigrations.Set {
	t.Helper()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	older := fstest.MapFS{}
	for _, e := range entries {
		n, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil || n >= version {
			continue
		}
		b, err := fs.ReadFile(files, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		older[e.Name()] = &fstest.MapFile{Data: b}
	}
	return libmigrations.New(older, ".")
}

func TestRequirePKCEMigration(t *testing.T) {
	ctx := context.Background()
	dsn, pool := resourcetest.NewPool(t, before(t, 3))
	insert := `INSERT INTO clients (id, name, kind, secret_hash, redirect_uris, scopes) VALUES ($1, 'app', 'obo', '\x00', '{https://a.example/cb}', '{pii:basic}')`
	if _, err := pool.Exec(ctx, insert, 1); err != nil {
		t.Fatal(err)
	}
	if err := before(t, 4).Up(dsn); err != nil {
		t.Fatal(err)
	}
	requirePKCE := func(id int) bool {
		t.Helper()
		var v bool
		if err := pool.QueryRow(ctx, `SELECT require_pkce FROM clients WHERE id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("a client registered before keeps working without PKCE", func(t *testing.T) {
		if requirePKCE(1) {
			t.Fatal("an existing client now requires PKCE")
		}
	})
	t.Run("a client registered after requires PKCE unless told otherwise", func(t *testing.T) {
		if _, err := pool.Exec(ctx, insert, 2); err != nil {
			t.Fatal(err)
		}
		if !requirePKCE(2) {
			t.Fatal("the column's default is not true")
		}
	})
	t.Run("down drops the column", func(t *testing.T) {
		if err := Set().Down(dsn); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'clients' AND column_name = 'require_pkce'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d %v", n, err)
		}
	})
}

func TestWebhooksMigration(t *testing.T) {
	ctx := context.Background()
	dsn, pool := resourcetest.NewPool(t, Set())
	tables := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'webhook\_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if tables() != 4 { // 0004's three and 0005's webhook_private_apps
		t.Fatalf("%d webhook tables after up", tables())
	}
	t.Run("down drops the webhook tables and nothing else", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `INSERT INTO clients (id, name, kind, secret_hash) VALUES (1, 'app', 'service', '\x00')`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO webhook_subscriptions (id, client_id, url, events) VALUES (gen_random_uuid(), 1, 'https://a.example/', '{user-updated}')`); err != nil {
			t.Fatal(err)
		}
		if err := Set().UpTo(dsn, 3); err != nil {
			t.Fatal(err)
		}
		var clients int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM clients`).Scan(&clients); err != nil || clients != 1 || tables() != 0 {
			t.Fatalf("%d clients, %d webhook tables (%v)", clients, tables(), err)
		}
	})
	t.Run("up again", func(t *testing.T) {
		if err := Set().Up(dsn); err != nil || tables() != 4 {
			t.Fatalf("%v", err)
		}
	})
}

func TestWebhookOperatorControlsMigration(t *testing.T) {
	ctx := context.Background()
	dsn, pool := resourcetest.NewPool(t, before(t, 5))
	if _, err := pool.Exec(ctx, `INSERT INTO clients (id, name, kind, secret_hash) VALUES (1, 'app', 'service', '\x00')`); err != nil {
		t.Fatal(err)
	}
	for _, s := range [][2]string{{"active", ""}, {"disabled", "disabled by an operator"}, {"disabled", "disabled by the app"},
		{"disabled", "no successful delivery since 2026-01-01T00:00:00Z; last: HTTP 500"}} {
		if _, err := pool.Exec(ctx, `INSERT INTO webhook_subscriptions (id, client_id, url, events, state, disabled_reason)
			VALUES (gen_random_uuid(), 1, 'https://a.example/', '{user-updated}', $1, nullif($2, ''))`, s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := Set().Up(dsn); err != nil {
		t.Fatal(err)
	}
	t.Run("the subscriptions disabled before say who disabled them", func(t *testing.T) {
		rows, err := pool.Query(ctx, `SELECT coalesce(disabled_reason, ''), coalesce(disabled_by, '') FROM webhook_subscriptions`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Reason, By string }])
		if err != nil || len(got) != 4 {
			t.Fatalf("%v %v", got, err)
		}
		want := map[string]string{"": "", "disabled by an operator": "operator", "disabled by the app": "app",
			"no successful delivery since 2026-01-01T00:00:00Z; last: HTTP 500": "failures"}
		for _, r := range got {
			if want[r.Reason] != r.By {
				t.Errorf("%q: disabled by %q", r.Reason, r.By)
			}
		}
	})
	t.Run("down drops the column and keeps the subscriptions", func(t *testing.T) {
		if err := Set().UpTo(dsn, 4); err != nil {
			t.Fatal(err)
		}
		var cols, subs int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM information_schema.columns WHERE table_name = 'webhook_subscriptions' AND column_name = 'disabled_by'),
			(SELECT count(*) FROM webhook_subscriptions)`).Scan(&cols, &subs); err != nil || cols != 0 || subs != 4 {
			t.Fatalf("%d columns, %d subscriptions (%v)", cols, subs, err)
		}
		var private int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'webhook_private_apps'`).Scan(&private); err != nil || private != 0 {
			t.Fatalf("webhook_private_apps: %d (%v)", private, err)
		}
	})
}
