package registrationstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/registrations/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSearchPlansUseTheIndex proves at small scale what keeps a page's cost
// independent of its depth: every read is an index scan on the primary key
// starting at the cursor, with no sort and no scan of the rows before it.
func TestSearchPlansUseTheIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: needs PostgreSQL")
	}
	ctx := context.Background()
	dsn := testkit.NewDatabase(t)
	if err := migrations.Set().Up(dsn); err != nil {
		t.Fatal(err)
	}
	pool, err := pgdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
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
			var plan []byte
			if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+tc.sql, tc.args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			nodes := planNodes(t, plan)
			joined := strings.Join(nodes, ",")
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

func planNodes(t *testing.T, raw []byte) []string {
	t.Helper()
	var doc []struct {
		Plan map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan: %v %s", err, raw)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		out = append(out, n["Node Type"].(string))
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				walk(k.(map[string]any))
			}
		}
	}
	walk(doc[0].Plan)
	return out
}
