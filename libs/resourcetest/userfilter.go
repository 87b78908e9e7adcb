package resourcetest

import (
	"fmt"
	"strings"
	"testing"
)

// UserIDFilter describes a search filtered by user ids (filter.userIds)
// over a test's records.
type UserIDFilter struct {
	Path, Token string
	// Keys names the records of a page in order ("11,15"), as the test
	// identifies them.
	Keys func(t testing.TB, r Response) string
	// Mixed is the keys filter.userIds ["1005", 1001, "1003", "9999"]
	// selects; All those of the first page without a filter (at least two,
	// their users among 1001–1100).
	Mixed, All string
}

// CheckUserIDFilter runs the subtests every search filtered by user ids
// passes: ids as strings and numbers, the most ids a filter takes, an empty
// list matching nothing, no filter in its null and empty forms, and the
// limit's bounds and forms.
func (e *Env) CheckUserIDFilter(t *testing.T, f UserIDFilter) {
	t.Helper()
	keys := func(t *testing.T, body, want string) {
		t.Helper()
		r := e.Post(t, f.Path, f.Token, body)
		if r.Status != 200 {
			t.Fatalf("%q: %d %s", body, r.Status, r.Body)
		}
		if got := f.Keys(t, r); got != want {
			t.Fatalf("%q: %s, want %s", body, got, want)
		}
	}
	t.Run("filter.userIds takes strings and numbers", func(t *testing.T) {
		keys(t, `{"filter": {"userIds": ["1005", 1001, "1003", "9999"]}}`, f.Mixed)
	})
	t.Run("100 ids are accepted", func(t *testing.T) {
		list := make([]string, 0, 100)
		for i := 1; i <= 100; i++ {
			list = append(list, fmt.Sprintf(`"%d"`, 1000+i))
		}
		keys(t, `{"filter":{"userIds":[`+strings.Join(list, ",")+`]}}`, f.All)
	})
	t.Run("an empty userIds list matches nothing", func(t *testing.T) {
		r := e.Post(t, f.Path, f.Token, `{"filter": {"userIds": []}}`)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"data":[]`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("an empty body, a null filter and null userIds are no filter", func(t *testing.T) {
		for _, body := range []string{``, `{"filter": null}`, `{"filter": {}}`, `{"filter": {"userIds": null}}`} {
			keys(t, body, f.All)
		}
	})
	t.Run("limit above 100 is treated as 100 and a numeric string is a limit", func(t *testing.T) {
		keys(t, `{"limit": 1000}`, f.All)
		keys(t, `{"limit": "2"}`, strings.Join(strings.Split(f.All, ",")[:2], ","))
	})
}
