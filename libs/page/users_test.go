package page_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/page"
)

func TestUsersRequestUserIDs(t *testing.T) {
	// ids[:n] are the n ids 1..n as JSON; most their numbers.
	ids := make([]string, page.MaxFilterUserIDs+1)
	most := make([]int64, page.MaxFilterUserIDs)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	for i := range most {
		most[i] = int64(i + 1)
	}
	ok := []struct {
		name, body string
		want       []int64
	}{
		{"no filter is every user", `{}`, nil},
		{"a null filter is every user", `{"filter": null}`, nil},
		{"null userIds is every user", `{"filter": {"userIds": null}}`, nil},
		{"an empty list is no user", `{"filter": {"userIds": []}}`, []int64{}},
		{"strings and numbers, sorted, once each", `{"filter": {"userIds": ["1003", 1001, 1003]}}`, []int64{1001, 1003}},
		{"the most ids", `{"filter": {"userIds": [` + strings.Join(ids[:page.MaxFilterUserIDs], ",") + `]}}`, most},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			var r page.UsersRequest
			if err := json.Unmarshal([]byte(c.body), &r); err != nil {
				t.Fatal(err)
			}
			got, e := r.UserIDs()
			if e != nil {
				t.Fatalf("refused: %v", e.Body())
			}
			if (got == nil) != (c.want == nil) || !slices.Equal(got, c.want) {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
		})
	}
	bad := map[string]string{
		"not an array":  `{"filter": {"userIds": "1001"}}`,
		"not a user id": `{"filter": {"userIds": [0]}}`,
		"a fraction":    `{"filter": {"userIds": [1.5]}}`,
		"too many ids":  `{"filter": {"userIds": [` + strings.Join(ids, ",") + `]}}`,
	}
	for name, body := range bad {
		t.Run(name+" is a 400 naming filter.userIds", func(t *testing.T) {
			var r page.UsersRequest
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			_, e := r.UserIDs()
			if e == nil || e.Status != 400 {
				t.Fatalf("got %v, want a 400", e)
			}
			if b, _ := json.Marshal(e.Body()); !strings.Contains(string(b), `"filter.userIds"`) {
				t.Fatalf("body does not name filter.userIds: %s", b)
			}
		})
	}
}

func TestUsersFilterBindsCursorsToTheIDs(t *testing.T) {
	if page.UsersFilter(nil) != nil {
		t.Fatal("no ids must be no filter")
	}
	a, _ := json.Marshal(page.UsersFilter([]int64{1, 2}))
	b, _ := json.Marshal(page.UsersFilter([]int64{}))
	if string(a) != `{"u":[1,2]}` || string(b) != `{"u":[]}` {
		t.Fatalf("got %s and %s", a, b)
	}
}
