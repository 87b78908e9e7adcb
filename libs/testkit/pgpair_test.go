package testkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/testkit"
)

// TestPostgresPairStreamsAndFailsOver: what the standby is before and after
// the primary stops and it is promoted.
func TestPostgresPairStreamsAndFailsOver(t *testing.T) {
	ctx := context.Background()
	pair := testkit.StartPostgresPair(t, testkit.PairOptions{Synchronous: true})
	connect := func(t *testing.T, dsn string) *pgx.Conn {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		return conn
	}
	primary := connect(t, pair.ServerURL(pair.PrimaryPort, "postgres"))
	if _, err := primary.Exec(ctx, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	standby := connect(t, pair.ServerURL(pair.StandbyPort, "postgres"))
	t.Run("the standby replays the primary's writes and refuses its own", func(t *testing.T) {
		// Synchronous commit waits for the standby's flush, not its replay.
		if err := testkit.Poll(ctx, 10*time.Second, func(ctx context.Context) error {
			var n int
			if err := standby.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
				return fmt.Errorf("rows on the standby: %d, %v", n, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := standby.Exec(ctx, "INSERT INTO kept VALUES (2)"); err == nil {
			t.Fatal("the standby accepted a write")
		}
	})
	pair.StopPrimary(t)
	t.Run("the stopped primary refuses connections", func(t *testing.T) {
		if conn, err := pgx.Connect(ctx, pair.ServerURL(pair.PrimaryPort, "postgres")); err == nil {
			conn.Close(ctx)
			t.Fatal("the primary still answers")
		}
	})
	pair.Promote(t)
	t.Run("the promoted standby takes writes, through the read-write DSN too", func(t *testing.T) {
		conn := connect(t, pair.URL("postgres"))
		if _, err := conn.Exec(ctx, "INSERT INTO kept VALUES (2)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 2 {
			t.Fatalf("rows after promotion: %d, %v", n, err)
		}
	})
}
