package registrationdb

import (
	"context"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSearchPlansUseTheIndex proves at small scale what keeps a page's cost
// independent of its depth: every read is an index scan on the primary key
// starting at the cursor, with no sort and no scan of the rows before it.
func TestSearchPlansUseTheIndex(t *testing.T) {
	ctx := context.Background()
	_, pool := resourcetest.NewPool(t, migrations.Set())
	st := New(pool)
	if _, err := st.Generate(ctx, GenerateOptions{ConventionID: "2026", Count: 5000, UsersFrom: 1, UsersTo: 10000}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Generate(ctx, GenerateOptions{ConventionID: "2025", Count: 5000, UsersFrom: 1, UsersTo: 10000}); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		sql       string
		args      []any
		sortAllow bool
	}{
		"search": {searchSQL, []any{"2026", int64(9000), 101}, false},
		// At most 100 ids: the index finds each one and sorting them is bounded.
		"search by users": {searchUsersSQL, []any{"2026", int64(10), 101, []int64{11, 500, 9001}}, true},
		"get":             {getSQL, []any{"2026", int64(9001)}, false},
	}
	for name, tc := range cases {
		t.Run(name+" is an index scan without a sort", func(t *testing.T) {
			var kinds []string
			for _, n := range testkit.Explain(t, pool, tc.sql, tc.args...) {
				kinds = append(kinds, n.Kind)
			}
			joined := strings.Join(kinds, ",")
			if !strings.Contains(joined, "Index Scan") && !strings.Contains(joined, "Index Only Scan") {
				t.Fatalf("plan has no index scan: %s", joined)
			}
			bads := []string{"Seq Scan", "Bitmap Heap Scan"}
			if !tc.sortAllow {
				bads = append(bads, "Sort")
			}
			for _, bad := range bads {
				if strings.Contains(joined, bad) {
					t.Fatalf("plan has a %s: %s", bad, joined)
				}
			}
		})
	}
}
