package resourcetest

import (
	"strconv"
	"testing"
)

// WalkIDs is WalkSearch with each item reduced to its id by id: the ids a
// walk sees, in the order it sees them.
func WalkIDs[T any](t testing.TB, e *Env, path, token string, limit int, filter string, id func(T) string) []string {
	t.Helper()
	var seen []string
	for _, page := range WalkSearch[T](t, e, path, token, limit, filter) {
		for _, item := range page {
			seen = append(seen, id(item))
		}
	}
	return seen
}

// SameIDs fails t unless seen holds the ids of want (id reads one) in
// want's order, each once.
func SameIDs[R any](t testing.TB, seen []string, want []R, id func(R) int64) {
	t.Helper()
	if len(seen) != len(want) {
		t.Fatalf("saw %d items, want %d", len(seen), len(want))
	}
	for i, got := range seen {
		if w := strconv.FormatInt(id(want[i]), 10); got != w {
			t.Fatalf("item %d is %s, want %s", i, got, w)
		}
	}
}
