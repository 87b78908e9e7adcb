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

// CheckUserIDSearchRefusals takes the cursor of a first page of one from f's
// search and runs CheckBodyRefusals on it with the bodies every search
// filtered by user ids refuses (bad ids and limits, a cursor that is not
// one, edited or from another filter, what is not one JSON object, a body
// over the limit, no token), then tokens (the service's other token
// refusals, JSON bodies);
// last it checks that the cursor continues, under the same filter, to a page
// of the keys second with more to come.
func (e *Env) CheckUserIDSearchRefusals(t *testing.T, f UserIDFilter, second string, tokens ...BodyRefusal) {
	t.Helper()
	first := e.Post(t, f.Path, f.Token, `{"limit": 1}`)
	var firstPage struct {
		NextPage *string `json:"nextPage"`
		HasMore  bool    `json:"hasMore"`
	}
	first.JSON(t, &firstPage)
	if firstPage.NextPage == nil || !firstPage.HasMore {
		t.Fatalf("no cursor: %s", first.Body)
	}
	cursor := *firstPage.NextPage
	tampered := []byte(cursor)
	tampered[5] ^= 1
	tooMany := make([]string, 0, 101)
	for i := 1; i <= 101; i++ {
		tooMany = append(tooMany, fmt.Sprint(i))
	}
	invalid := func(name, body string) BodyRefusal {
		return BodyRefusal{Name: name, Body: body, ContentType: "application/json", Token: f.Token, Status: 400, Category: "validation"}
	}
	refusals := []BodyRefusal{
		invalid("101 ids is a validation error", `{"filter":{"userIds":[`+strings.Join(tooMany, ",")+`]}}`),
		invalid("a user id that is not a number", `{"filter":{"userIds":["abc"]}}`),
		invalid("a negative user id", `{"filter":{"userIds":[-4]}}`),
		invalid("userIds not an array", `{"filter":{"userIds":"1001"}}`),
		invalid("filter not an object", `{"filter":[1001]}`),
		invalid("limit zero", `{"limit":0}`),
		invalid("limit not a number", `{"limit":"many"}`),
		invalid("limit a fraction", `{"limit":1.5}`),
		invalid("nextPage that is not a cursor", `{"nextPage":"garbage"}`),
		invalid("nextPage edited", `{"nextPage":"`+string(tampered)+`"}`),
		invalid("nextPage from another filter", `{"nextPage":"`+cursor+`","filter":{"userIds":[1001]}}`),
		invalid("nextPage not a string", `{"nextPage":5}`),
		invalid("malformed JSON", `{"limit": 5`),
		invalid("two JSON values", `{} {}`),
		invalid("a duplicate key", `{"limit": 5, "limit": 6}`),
		{Name: "not JSON at all", Body: `limit=5`, ContentType: "application/x-www-form-urlencoded", Token: f.Token, Status: 415, Category: "validation"},
		{Name: "a body over the limit", Body: `{"filter":{"userIds":["` + strings.Repeat("1", 10<<10) + `"]}}`, ContentType: "application/json", Token: f.Token, Status: 413, Category: "validation"},
		{Name: "no token", Body: `{}`, ContentType: "application/json", Status: 401, Category: "authentication"},
	}
	for _, r := range tokens {
		r.ContentType = "application/json"
		refusals = append(refusals, r)
	}
	e.CheckBodyRefusals(t, f.Path, refusals)
	t.Run("the cursor continues with the same filter", func(t *testing.T) {
		r := e.Post(t, f.Path, f.Token, `{"limit": 1, "nextPage": "`+cursor+`"}`)
		if r.Status != 200 || f.Keys(t, r) != second || !strings.Contains(string(r.Body), `"hasMore":true`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
