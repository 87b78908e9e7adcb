package testkit

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PlanNode is one node of a PostgreSQL query plan.
type PlanNode struct {
	Kind      string // "Node Type", e.g. "Index Scan"
	Relation  string // "Relation Name", empty when the node reads none
	InSubplan bool   // under a node with a "Subplan Name" (an InitPlan or SubPlan)
}

// Explain runs EXPLAIN (FORMAT JSON) of query on db and returns the plan's
// nodes, depth first from the top.
func Explain(t testing.TB, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, query string, args ...any) []PlanNode {
	t.Helper()
	var raw []byte
	if err := db.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Plan map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan: %v %s", err, raw)
	}
	var out []PlanNode
	var walk func(n map[string]any, sub bool)
	walk = func(n map[string]any, sub bool) {
		rel, _ := n["Relation Name"].(string)
		out = append(out, PlanNode{Kind: n["Node Type"].(string), Relation: rel, InSubplan: sub})
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
