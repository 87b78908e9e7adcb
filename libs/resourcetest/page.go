package resourcetest

import (
	"strings"
	"testing"
)

// JoinIDs is the ids of items (id reads one) joined with commas, in order:
// what a page holds.
func JoinIDs[T any](items []T, id func(T) string) string {
	s := make([]string, len(items))
	for i, item := range items {
		s[i] = id(item)
	}
	return strings.Join(s, ",")
}

// ExplicitLastPage fails t unless r's body says it is the last page in so
// many words: "nextPage": null and "hasMore": false, not left out.
func ExplicitLastPage(t testing.TB, r Response) {
	t.Helper()
	if !strings.Contains(string(r.Body), `"nextPage":null`) || !strings.Contains(string(r.Body), `"hasMore":false`) {
		t.Fatalf("nextPage/hasMore not explicit: %s", r.Body)
	}
}

// PageKeys is a UserIDFilter.Keys: the ids of the items of a page of T (id
// reads one), joined with commas.
func PageKeys[T any](id func(T) string) func(testing.TB, Response) string {
	return func(t testing.TB, r Response) string {
		t.Helper()
		var p struct {
			Data []T `json:"data"`
		}
		r.JSON(t, &p)
		return JoinIDs(p.Data, id)
	}
}
