package resourcetest

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
	"github.com/eventreg/eventreg/libs/fixture"
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

// Router is a gin engine in test mode with the routes register adds: the
// public ones on it, the internal ones on an engine of their own.
func (o Offline) Router(register func(public, internal gin.IRouter)) http.Handler {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	register(r, gin.New())
	return r
}

// UserIDSearchSeeds are seed bodies of a search filtered by user ids, the
// common ones included.
var UserIDSearchSeeds = append([]string{`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`,
	`{"filter": {"userIds": [1.5]}}`, "{\"filter\": {\"userIds\": [\"\xff\"]}}"}, CommonSearchSeeds...)

// CommonSearchSeeds are seed bodies every search endpoint is fuzzed with.
var CommonSearchSeeds = []string{``, `{}`, `{"limit": 5}`, `{"limit": "5"}`, `{"limit": 1e309}`, `{"limit": -1}`,
	`{"nextPage": "abc"}`, `{"a": 1, "a": 2}`, `[[[[[[[[[[]]]]]]]]]]`, `{"filter": null}`}

// FixtureSeeds are seed documents for fuzzing the import of a fixture
// section: a whole valid document and broken ones.
var FixtureSeeds = []string{`{}`, `{"conventionId":"2026","roles":[{"id":1,"name":"admin","permissions":["user:read"]}],"users":[{"id":1001,"username":"alice","email":"a@example.org","emailVerified":true,"identityVerified":true,"firstName":"A","lastName":"L","bornAt":"1990-01-01","newsletter":false,"password":"correct horse","roles":[{"id":1,"scope":"global"}]}],"departments":[{"id":1,"name":"Ops"}],"volunteers":[{"userId":1001,"departments":[1]}],"registrations":[{"userId":1001,"badgeName":"Al","status":"paid","orderId":"7","productId":"5","productName":"Attendee","options":[{"name":"Days","type":"multi","value":["Fri"]}]}]}`, `{"registrations":[{"userId":1,"status":"x"},{"userId":1}]}`, `{"volunteers":[{"userId":0,"departments":[99]}],"departments":[{"id":-1}]}`, `{"users":[{"id":1,"username":""},{"id":1,"username":"a"}],"roles":[{"id":1,"name":""}]}`}

// FuzzFixtureSection decodes arbitrary fixture documents (seeded with
// FixtureSeeds) and hands each that decodes to validate, a service's
// FromFixture, which returns how many records went in and came out: never a
// panic; either every record comes back or the section is rejected with
// problems naming the records.
func FuzzFixtureSection(f *testing.F, validate func(convention string, d *fixture.Document) (in, out int, err error)) {
	for _, s := range FixtureSeeds {
		f.Add(s, "2026")
	}
	f.Fuzz(func(t *testing.T, doc, convention string) {
		d, err := fixture.Decode(strings.NewReader(doc))
		if err != nil {
			return
		}
		in, out, err := validate(convention, d)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a rejection without problems")
			}
			return
		}
		if in != out {
			t.Fatalf("%d records in, %d out", in, out)
		}
	})
}
