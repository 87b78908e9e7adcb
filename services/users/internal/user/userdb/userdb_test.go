package userdb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	PlanRows     float64    `json:"Plan Rows"`
	Plans        []planNode `json:"Plans"`
}

func walk(n planNode, f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		walk(c, f)
	}
}

// explain returns the plan of q with args as PostgreSQL makes it in mode
// (plan_cache_mode: force_custom_plan plans for the values, force_generic_plan
// once for any values, as the services' connections do; see pgdb.Open).
func explain(t *testing.T, pool *pgxpool.Pool, mode, q string, args []any) ([]byte, planNode) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			lits[i] = fmt.Sprint(v)
		}
	}
	var raw []byte
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode+"; PREPARE q AS "+q); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE q; RESET plan_cache_mode") //nolint:errcheck
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE q("+strings.Join(lits, ", ")+")").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	return raw, plans[0].Plan
}

// TestSearchUsesIndexes proves, on a table large enough for the planner to
// care, that every search shape walks an index and never scans or sorts a
// whole table: the cost of a page does not grow with its depth. It holds for
// the plan made for the values and for the generic plan the services use.
func TestSearchUsesIndexes(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	usertest.LoadDemo(t, pool)
	gen := usertest.Generate(t, pool, 30_000, 20)
	deep := gen.FirstUserID + 25_000
	filters := map[string]user.Filter{
		"no filter":    {},
		"role":         {RoleID: gen.FirstRoleID + 3},
		"email":        {Email: "gen10020000@example.invalid"},
		"role + email": {RoleID: gen.FirstRoleID + 3, Email: "gen10020000@example.invalid"},
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for name, f := range filters {
			for _, after := range []int64{0, deep} {
				t.Run(fmt.Sprintf("%s %s after %d", mode, name, after), func(t *testing.T) {
					q, args := userdb.SearchSQL(f, usertest.ConventionID, keyset.Seek{After: after, Limit: 100})
					raw, plan := explain(t, pool, mode, q, args)
					indexes := []string{}
					walk(plan, func(n planNode) {
						switch {
						case n.NodeType == "Seq Scan":
							t.Errorf("sequential scan of %s", n.RelationName)
						case n.NodeType == "Sort" && n.PlanRows > 1000:
							t.Errorf("sort of %.0f rows", n.PlanRows)
						case strings.Contains(n.NodeType, "Index"):
							indexes = append(indexes, n.IndexName)
						}
					})
					if len(indexes) == 0 {
						t.Errorf("no index used: %s", raw)
					}
					t.Logf("indexes: %v", indexes)
				})
			}
		}
	}
}

func TestSearchPagesInIDOrder(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	usertest.LoadDemo(t, pool)
	store := userdb.New(pool)
	ctx := context.Background()
	t.Run("email ignores case", func(t *testing.T) {
		got, err := store.Search(ctx, user.Filter{Email: "dave.mixed@example.org"}, usertest.ConventionID, keyset.Seek{Limit: 10})
		if err != nil || len(got) != 1 || got[0].ID != 1004 {
			t.Fatalf("got %v %v", got, err)
		}
	})
	t.Run("role counts global and current-convention members only", func(t *testing.T) {
		got, err := store.Search(ctx, user.Filter{RoleID: 5}, usertest.ConventionID, keyset.Seek{Limit: 10})
		if err != nil || len(got) != 2 || got[0].ID != 1001 || got[1].ID != 1004 {
			t.Fatalf("got %v %v", got, err)
		}
		got, err = store.Search(ctx, user.Filter{RoleID: 5}, "1999", keyset.Seek{Limit: 10})
		if err != nil || len(got) != 0 {
			t.Fatalf("another convention: %v %v", got, err)
		}
	})
	t.Run("limit+1 rows after the key", func(t *testing.T) {
		got, err := store.Search(ctx, user.Filter{}, usertest.ConventionID, keyset.Seek{After: 1001, Limit: 2})
		if err != nil || len(got) != 3 || got[0].ID != 1002 || got[2].ID != 1004 {
			t.Fatalf("got %v %v", got, err)
		}
	})
}
