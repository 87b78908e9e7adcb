package resourcetest

import (
	"fmt"
	"testing"
)

// WalkSearch pages through the search at path of e, with pages of limit and
// filter (a JSON object; none when empty), following nextPage until hasMore
// is false, and returns the pages' items decoded as T. It fails t on a page
// that is not 200 or holds more than limit items, a last page with a
// cursor, a walk that does not end, and a users double asked for more than
// limit users in a call or called more than once a page.
func WalkSearch[T any](t testing.TB, e *Env, path, token string, limit int, filter string) [][]T {
	t.Helper()
	e.Users.Reset()
	var pages [][]T
	next := ""
	for {
		body := fmt.Sprintf(`{"limit": %d`, limit)
		if filter != "" {
			body += `, "filter": ` + filter
		}
		if next != "" {
			body += fmt.Sprintf(`, "nextPage": %q`, next)
		}
		r := e.Post(t, path, token, body+"}")
		if r.Status != 200 {
			t.Fatalf("page %d: %d %s", len(pages), r.Status, r.Body)
		}
		var p struct {
			Data     []T     `json:"data"`
			NextPage *string `json:"nextPage"`
			HasMore  bool    `json:"hasMore"`
		}
		r.JSON(t, &p)
		if len(p.Data) > limit {
			t.Fatalf("page of %d for limit %d", len(p.Data), limit)
		}
		pages = append(pages, p.Data)
		if !p.HasMore {
			if p.NextPage != nil {
				t.Fatal("nextPage set on the last page")
			}
			break
		}
		if p.NextPage == nil || len(pages) > 1000 {
			t.Fatalf("hasMore without a cursor, or no end after %d pages", len(pages))
		}
		next = *p.NextPage
	}
	calls := e.Users.Calls()
	for i, c := range calls {
		if len(c) > limit {
			t.Fatalf("users call %d asked for %d users", i, len(c))
		}
	}
	if len(calls) > len(pages) {
		t.Fatalf("%d users calls for %d pages", len(calls), len(pages))
	}
	return pages
}
