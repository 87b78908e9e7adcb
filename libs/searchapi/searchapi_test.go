package searchapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/searchapi"
	"github.com/eventreg/eventreg/libs/usersummary"
)

// records is a search over the keys 1..n, each record its key; it remembers
// what it was asked.
type records struct {
	n     int64
	fail  error
	asked [][]int64 // the user ids of each call (nil: every user)
}

func (r *records) search(_ context.Context, ids []int64, ks keyset.Seek) (usersummary.Page[int64], error) {
	r.asked = append(r.asked, ids)
	if r.fail != nil {
		return usersummary.Page[int64]{}, r.fail
	}
	p := usersummary.Page[int64]{Items: []int64{}}
	for k := ks.After + 1; k <= r.n && len(p.Items) < ks.Limit; k++ {
		p.Items, p.Last = append(p.Items, k), k
	}
	p.More = p.Last < r.n && len(p.Items) > 0
	return p, nil
}

func serve(t *testing.T, r *records, body string) (int, page.Response[string]) {
	t.Helper()
	codec, err := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	pager := page.Paginator{Codec: codec, Query: "things.search"}
	reply := apireply.Replier{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	render := func(k int64) string { return "thing " + strconv.FormatInt(k, 10) }
	gin.SetMode(gin.TestMode)
	g := gin.New()
	g.POST("/of-users", func(c *gin.Context) { searchapi.RecordsOfUsers(c, pager, reply, r.search, render) })
	g.POST("/all", func(c *gin.Context) {
		searchapi.Records(c, pager, reply, func(ctx context.Context, ks keyset.Seek) (usersummary.Page[int64], error) {
			return r.search(ctx, nil, ks)
		}, render)
	})
	path := "/of-users"
	if strings.HasPrefix(body, "all:") {
		path, body = "/all", strings.TrimPrefix(body, "all:")
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	var resp page.Response[string]
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%s: %v", w.Body, err)
		}
	}
	return w.Code, resp
}

func TestRecordsOfUsers(t *testing.T) {
	t.Run("no filter searches every user and pages on", func(t *testing.T) {
		r := &records{n: 3}
		code, p := serve(t, r, `{"limit": 2}`)
		if code != 200 || !slices.Equal(p.Data, []string{"thing 1", "thing 2"}) || !p.HasMore || p.NextPage == nil || r.asked[0] != nil {
			t.Fatalf("%d %+v, asked %v", code, p, r.asked)
		}
		code, p = serve(t, r, `{"limit": 2, "nextPage": "`+*p.NextPage+`"}`)
		if code != 200 || !slices.Equal(p.Data, []string{"thing 3"}) || p.HasMore || p.NextPage != nil {
			t.Fatalf("second page: %d %+v", code, p)
		}
	})
	t.Run("filter.userIds reaches the search sorted, once each", func(t *testing.T) {
		r := &records{n: 3}
		if code, _ := serve(t, r, `{"filter": {"userIds": ["7", 3, 7]}}`); code != 200 || !slices.Equal(r.asked[0], []int64{3, 7}) {
			t.Fatalf("%d, asked %v", code, r.asked)
		}
	})
	t.Run("a bad filter is a 400 and nothing is searched", func(t *testing.T) {
		r := &records{n: 3}
		if code, _ := serve(t, r, `{"filter": {"userIds": [0]}}`); code != 400 || len(r.asked) != 0 {
			t.Fatalf("%d, asked %v", code, r.asked)
		}
	})
	t.Run("a cursor continues only the filter it was issued for", func(t *testing.T) {
		r := &records{n: 3}
		_, p := serve(t, r, `{"limit": 1, "filter": {"userIds": [1, 2]}}`)
		if p.NextPage == nil {
			t.Fatal("no next page")
		}
		if code, _ := serve(t, r, `{"nextPage": "`+*p.NextPage+`"}`); code != 400 {
			t.Fatalf("without the filter: %d", code)
		}
		if code, _ := serve(t, r, `{"nextPage": "`+*p.NextPage+`", "filter": {"userIds": ["2", 1]}}`); code != 200 {
			t.Fatalf("with the same filter: %d", code)
		}
	})
	t.Run("a search that fails takes the error path", func(t *testing.T) {
		r := &records{n: 3, fail: apierror.DependencyFailed("The users service", errors.New("down"))}
		if code, _ := serve(t, r, `{}`); code != 503 {
			t.Fatalf("%d", code)
		}
	})
}

func TestRecords(t *testing.T) {
	r := &records{n: 2}
	code, p := serve(t, r, `all:{"limit": 5, "filter": {"userIds": [1]}}`)
	if code != 200 || !slices.Equal(p.Data, []string{"thing 1", "thing 2"}) || p.HasMore || r.asked[0] != nil {
		t.Fatalf("a search without a filter ignores one: %d %+v, asked %v", code, p, r.asked)
	}
}
