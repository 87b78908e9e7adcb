package volunteerstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/volunteers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestReadPlansUseTheIndex proves at small scale what keeps a page's cost
// independent of its depth: volunteers are read by an index scan on the
// primary key from the cursor on, with no sort.
func TestReadPlansUseTheIndex(t *testing.T) {
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
	for _, c := range []string{"2025", "2026"} {
		if _, err := st.Generate(ctx, GenerateOptions{ConventionID: c, Count: 5000, UsersFrom: 1, UsersTo: 10000, Departments: 20}); err != nil {
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
			var plan []byte
			if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+tc.sql, tc.args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			nodes := planNodes(t, plan)
			var onVolunteers []string
			for _, n := range nodes {
				if n.relation == "volunteers" {
					onVolunteers = append(onVolunteers, n.kind)
				}
				if n.kind == "Sort" && !n.inSubplan {
					t.Fatalf("the outer plan sorts: %+v", nodes)
				}
			}
			if len(onVolunteers) != 1 || !strings.HasPrefix(onVolunteers[0], "Index") {
				t.Fatalf("volunteers read by %v", onVolunteers)
			}
		})
	}
}

type planNode struct {
	kind, relation string
	inSubplan      bool
}

func planNodes(t *testing.T, raw []byte) []planNode {
	t.Helper()
	var doc []struct {
		Plan map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan: %v %s", err, raw)
	}
	var out []planNode
	var walk func(n map[string]any, sub bool)
	walk = func(n map[string]any, sub bool) {
		rel, _ := n["Relation Name"].(string)
		out = append(out, planNode{kind: n["Node Type"].(string), relation: rel, inSubplan: sub})
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				km := k.(map[string]any)
				_, isSub := km["Subplan Name"]
				walk(km, sub || isSub)
			}
		}
	}
	walk(doc[0].Plan, false)
	return out
}
