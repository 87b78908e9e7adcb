package registrationapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationapi"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationstore"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/registration/search.
// The database is unreachable, so a body that passes every check reaches the
// store and gets 503; anything else must be a 4xx error body, never a 500 (or
// the empty page an empty userIds filter gets without a query).
func FuzzSearchBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"limit": 5}`, `{"limit": "5"}`, `{"limit": 1e309}`, `{"limit": -1}`,
		`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`, `{"filter": {"userIds": [1.5]}}`,
		`{"nextPage": "abc"}`, `{"a": 1, "a": 2}`, `[[[[[[[[[[]]]]]]]]]]`, "{\"filter\": {\"userIds\": [\"\xff\"]}}", `{"filter": null}`} {
		f.Add(s)
	}
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(pool.Close)
	codec, err := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := registration.NewService(registrationstore.New(pool), usersapi.NewClient("http://127.0.0.1:1", 0), "2026")
	h := registrationapi.New(svc, page.Paginator{Codec: codec, Query: "registrations.search"}, log)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	registrationapi.Register(r, func(string) []gin.HandlerFunc { return nil }, h)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v0/registration/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code == http.StatusOK {
			// Only an empty userIds filter is answered without the store:
			// it matches nothing (decision 0041).
			if w.Body.String() != `{"data":[],"nextPage":null,"hasMore":false}` {
				t.Fatalf("%q: 200 without a database: %s", body, w.Body)
			}
			return
		}
		if w.Code != http.StatusServiceUnavailable && (w.Code < 400 || w.Code > 499) {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body)
		}
		if !strings.Contains(w.Body.String(), `"errors"`) {
			t.Fatalf("%q: no error body: %s", body, w.Body)
		}
	})
}
