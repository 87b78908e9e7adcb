package testkit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/migrations"
)

// CheckOldestSchema checks a service's migration set (the one its `serve`
// gives readiness): it declares want, the service's OldestSchema, as the
// oldest schema it runs on (migrations.Set.RunsOn, at least 1 and at most
// its newest migration), and readiness honours it on a real database:
// unready one version below it, ready at it and at the newest. Under -short
// it checks the declaration and skips the rest (NewDatabase).
func CheckOldestSchema(t *testing.T, set migrations.Set, want uint) {
	t.Helper()
	oldest := set.Declared()
	if oldest != want {
		t.Fatalf("the set declares %d, OldestSchema is %d", oldest, want)
	}
	latest, err := set.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if oldest == 0 || oldest > latest {
		t.Fatalf("the migration set declares %d as the oldest schema it runs on (newest migration %d): declare it with RunsOn(1..%d) where the set is made", oldest, latest, latest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := NewDatabase(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ready := set.Check(pool)
	if oldest > 1 {
		if err := set.UpTo(dsn, oldest-1); err != nil {
			t.Fatal(err)
		}
		if err := ready(ctx); err == nil || !strings.Contains(err.Error(), "older than this binary needs") {
			t.Fatalf("readiness on schema %d, below the declared %d: %v", oldest-1, oldest, err)
		}
	}
	if err := set.UpTo(dsn, oldest); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil {
		t.Fatalf("readiness on the declared oldest schema %d: %v", oldest, err)
	}
	if err := set.Up(dsn); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil {
		t.Fatalf("readiness on the newest schema %d: %v", latest, err)
	}
}
