package service

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// TestGenerateCommand: the flags and defaults every service's `generate`
// shares reach the service's generator, and its count is reported.
func TestGenerateCommand(t *testing.T) {
	// The generator is a double: the pool is opened but never reached.
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	run := func(t *testing.T, convention string, args ...string) (bulkload.Users, string, error) {
		t.Helper()
		t.Setenv("CONVENTION_ID", convention)
		var got bulkload.Users
		cmd := GenerateCommand("things", "Write things", func(_ context.Context, _ *pgxpool.Pool, o bulkload.Users) (int64, error) {
			got = o
			return o.Count, nil
		})
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(context.Background())
		return got, out.String(), err
	}
	t.Run("defaults: CONVENTION_ID, users-to from the count", func(t *testing.T) {
		o, out, err := run(t, "2026", "--things", "50", "--users-from", "11")
		if err != nil {
			t.Fatal(err)
		}
		if o.ConventionID != "2026" || o.Count != 50 || o.UsersFrom != 11 || o.UsersTo != 60 || o.Progress == nil {
			t.Fatalf("generator got %+v", o)
		}
		if !strings.HasPrefix(out, "generated 50 things of convention 2026 for users 11..60 in ") {
			t.Fatalf("printed %q", out)
		}
	})
	t.Run("flags win over CONVENTION_ID", func(t *testing.T) {
		o, _, err := run(t, "2026", "--convention", "2030", "--users-to", "5000")
		if err != nil {
			t.Fatal(err)
		}
		if o.ConventionID != "2030" || o.Count != 1000 || o.UsersFrom != 1 || o.UsersTo != 5000 {
			t.Fatalf("generator got %+v", o)
		}
	})
	t.Run("no convention is refused before generating", func(t *testing.T) {
		o, _, err := run(t, "")
		if err == nil || err.Error() != "generate: give --convention or set CONVENTION_ID" || o.Count != 0 {
			t.Fatalf("got %v (generator got %+v)", err, o)
		}
	})
}
