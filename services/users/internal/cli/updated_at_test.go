package cli_test

import (
	"context"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

// TestWritesMoveUpdatedAt: every command that writes a user moves the
// record's updated_at (UserInfo's updated_at), and only for the users it
// changed.
func TestWritesMoveUpdatedAt(t *testing.T) {
	newDemoDatabase(t)
	pool, err := pgdb.Open(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	backdate := func(t *testing.T) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), `UPDATE users SET updated_at = $1`, long); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("an import that changes nothing moves nothing", func(t *testing.T) {
		backdate(t)
		mustRun(t, "", "import", usertest.DemoPath(t))
		if got := movedSince(t, pool, long); len(got) != 0 {
			t.Fatalf("moved %v", got)
		}
	})
	t.Run("an import moves the users it changed, and only them", func(t *testing.T) {
		backdate(t)
		doc := usertest.Demo(t)
		doc.Users[1].FirstName = "Bobby" // 1002
		mustRun(t, "", "import", resourcetest.WriteFixtureJSON(t, doc))
		if got := movedSince(t, pool, long); len(got) != 1 || got[0] != 1002 {
			t.Fatalf("moved %v", got)
		}
		mustRun(t, "", "import", usertest.DemoPath(t))
	})
	t.Run("set-password moves the user's", func(t *testing.T) {
		backdate(t)
		mustRun(t, "another password\n", "set-password", "1003")
		if got := movedSince(t, pool, long); len(got) != 1 || got[0] != 1003 {
			t.Fatalf("moved %v", got)
		}
	})
	t.Run("create sets it to now", func(t *testing.T) {
		backdate(t)
		mustRun(t, "", "create", "--username", "zoe", "--email", "zoe@example.org", "--first-name", "Zoe", "--last-name", "Quinn",
			"--born-at", "1999-09-09")
		if got := movedSince(t, pool, long); len(got) != 1 || got[0] != 1006 {
			t.Fatalf("moved %v", got)
		}
	})
}

// movedSince returns the ids of the users whose updated_at is not since,
// failing unless each is within a minute of now.
func movedSince(t *testing.T, pool *pgxpool.Pool, since time.Time) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, updated_at FROM users WHERE updated_at <> $1 ORDER BY id`, since)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(at); d < -time.Minute || d > time.Minute {
			t.Errorf("user %d: updated_at %s is not now", id, at)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
