package resourcetest

import (
	"fmt"
	"net/http"
	"testing"
)

// Page is one page of a search's answer, its items decoded as T.
type Page[T any] struct {
	Data     []T     `json:"data"`
	NextPage *string `json:"nextPage"`
	HasMore  bool    `json:"hasMore"`
}

// Walk follows the search at path (POST) from its first page to its last,
// limit items a page; members, when not empty, are the body's other members
// after a comma (`, "filter": {...}`). Every page must be a 200 of at most
// limit items whose nextPage is null exactly on the last, and the users
// double, whose call log Walk clears first, must have been asked at most
// once a page for at most limit users. It returns the items of every page
// in order and how many pages there were.
func Walk[T any](t testing.TB, e *Env, path, token string, limit int, members string) (items []T, pages int) {
	t.Helper()
	e.Users.Reset()
	next := ""
	for {
		body := fmt.Sprintf(`{"limit": %d%s`, limit, members)
		if next != "" {
			body += `, "nextPage": "` + next + `"`
		}
		r := e.Post(t, path, token, body+"}")
		if r.Status != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
		}
		var p Page[T]
		r.JSON(t, &p)
		pages++
		if len(p.Data) > limit {
			t.Fatalf("page of %d for limit %d", len(p.Data), limit)
		}
		items = append(items, p.Data...)
		if !p.HasMore {
			if p.NextPage != nil {
				t.Fatal("nextPage set on the last page")
			}
			break
		}
		if p.NextPage == nil || pages > 1000 {
			t.Fatalf("pagination does not end (page %d, nextPage %v)", pages, p.NextPage)
		}
		next = *p.NextPage
	}
	calls := e.Users.Calls()
	for i, c := range calls {
		if len(c) > limit {
			t.Fatalf("users call %d asked for %d users on pages of %d", i, len(c), limit)
		}
	}
	if len(calls) > pages {
		t.Fatalf("%d users calls for %d pages", len(calls), pages)
	}
	return items, pages
}
