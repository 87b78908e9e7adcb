package resourcetest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/cursor"
)

// Offline is what a handler under fuzzing is built from: a pool whose every
// query fails as a stopped database would, a cursor codec and a silent log.
type Offline struct {
	Pool   *pgxpool.Pool
	Cursor *cursor.Codec
	Log    *slog.Logger
}

// NewOffline returns the parts of an offline handler; the pool closes with tb.
func NewOffline(tb testing.TB) Offline {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	codec, err := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		tb.Fatal(err)
	}
	return Offline{Pool: pool, Cursor: codec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// EmptyPage is the body of a page with no results.
const EmptyPage = `{"data":[],"nextPage":null,"hasMore":false}`

// FuzzSearchBody sends arbitrary bodies (seeded with seeds) to POST path of
// h, whose database is offline: a body that passes every check reaches the
// store and gets 503; anything else must be a 4xx error body, never a 500.
// allowEmpty lets a 200 with exactly EmptyPage through (a filter that matches
// nothing without a query).
func FuzzSearchBody(f *testing.F, h http.Handler, path string, seeds []string, allowEmpty bool) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusOK && allowEmpty {
			if w.Body.String() != EmptyPage {
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

// CommonSearchSeeds are seed bodies every search endpoint is fuzzed with.
var CommonSearchSeeds = []string{``, `{}`, `{"limit": 5}`, `{"limit": "5"}`, `{"limit": 1e309}`, `{"limit": -1}`,
	`{"nextPage": "abc"}`, `{"a": 1, "a": 2}`, `[[[[[[[[[[]]]]]]]]]]`, `{"filter": null}`}
