package volunteerdb

import (
	"context"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/bulkload"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestReadPlansUseTheIndex proves at small scale what keeps a page's cost
// independent of its depth: volunteers are read by an index scan on the
// primary key from the cursor on, with no sort.
func TestReadPlansUseTheIndex(t *testing.T) {
	ctx := context.Background()
	_, pool := resourcetest.NewPool(t, migrations.Set())
	st := New(pool)
	for _, c := range []string{"2025", "2026"} {
		if _, err := st.Generate(ctx, GenerateOptions{Users: bulkload.Users{ConventionID: c, Count: 5000, UsersFrom: 1, UsersTo: 10000}, Departments: 20}); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		sql  string
		args []any
	}{
		"search": {searchSQL, []any{"2026", int64(9000), 101}},
		"get":    {getSQL, []any{"2026", int64(9001)}},
	}
	for name, tc := range cases {
		t.Run(name+" reads volunteers by an index scan without a sort", func(t *testing.T) {
			nodes := testkit.Explain(t, pool, tc.sql, tc.args...)
			var onVolunteers []string
			for _, n := range nodes {
				if n.Relation == "volunteers" {
					onVolunteers = append(onVolunteers, n.Kind)
				}
				if n.Kind == "Sort" && !n.InSubplan {
					t.Fatalf("the outer plan sorts: %+v", nodes)
				}
			}
			if len(onVolunteers) != 1 || !strings.HasPrefix(onVolunteers[0], "Index") {
				t.Fatalf("volunteers read by %v", onVolunteers)
			}
		})
	}
}
