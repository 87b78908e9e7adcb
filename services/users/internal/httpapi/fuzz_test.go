package httpapi_test

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
	"github.com/eventreg/eventreg/libs/volunteersapi"
	"github.com/eventreg/eventreg/services/users/internal/httpapi"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/users/search. The
// database is unreachable, so a body that passes every check reaches the
// store and gets 503; anything else must be a 4xx error body, never a 500.
func FuzzSearchBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"limit": 5}`, `{"limit": "5"}`, `{"limit": 1e309}`, `{"limit": -1}`,
		`{"filter": {"roleId": 2}}`, `{"filter": {"roleId": "2"}}`, `{"filter": {"roleId": "2; DROP TABLE users"}}`,
		`{"filter": {"email": "ALICE@example.org"}}`, `{"filter": {"email": "' OR 1=1 --"}}`, `{"filter": {"email": "  "}}`,
		`{"nextPage": "abc"}`, `{"a": 1, "a": 2}`, `[[[[[[[[[[]]]]]]]]]]`, "{\"filter\": {\"email\": \"\xff\"}}", `{"filter": null}`} {
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
	users, err := user.NewCore(userdb.New(pool), "2026", password.Default)
	if err != nil {
		f.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	public, internal := gin.New(), gin.New()
	httpapi.Register(public, internal, httpapi.Deps{
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Users:      users,
		Roles:      role.NewCore(roledb.New(pool), "2026"),
		Volunteers: volunteersapi.NewClient("http://127.0.0.1:1", 0),
		Cursor:     codec,
		Protected:  func(string) []gin.HandlerFunc { return nil },
	})
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v0/users/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		public.ServeHTTP(w, req)
		if w.Code != http.StatusServiceUnavailable && (w.Code < 400 || w.Code > 499) {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body)
		}
		if !strings.Contains(w.Body.String(), `"errors"`) {
			t.Fatalf("%q: no error body: %s", body, w.Body)
		}
	})
}
