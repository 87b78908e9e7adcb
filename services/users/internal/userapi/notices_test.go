package userapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

// fakeAuth is auth's internal listener as users sees it: it takes event
// batches and records the users it is told about, or, while down, answers
// those 503.
type fakeAuth struct {
	mu   sync.Mutex
	down bool
	told []int64
	url  string
}

func newFakeAuth(t *testing.T) *fakeAuth {
	a := &fakeAuth{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/internal/events":
			var batch struct{ Events []json.RawMessage }
			_ = json.NewDecoder(r.Body).Decode(&batch)
			fmt.Fprintf(w, `{"accepted": %d}`, len(batch.Events))
		case strings.HasSuffix(r.URL.Path, "/permissions-changed"):
			id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/internal/users/"), "/permissions-changed"), 10, 64)
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.down {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"errors":{"server":{"message":"down"}}}`))
				return
			}
			a.told = append(a.told, id)
			_, _ = w.Write([]byte(`{"revoked": 1}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

func (a *fakeAuth) setDown(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = down
}

func (a *fakeAuth) toldUsers() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.told)
	slices.Sort(out)
	return slices.Compact(out)
}

// waitTold polls until auth was told about exactly want (sorted).
func (a *fakeAuth) waitTold(t *testing.T, want ...int64) {
	t.Helper()
	err := testkit.Poll(context.Background(), 45*time.Second, func(context.Context) error {
		if got := a.toldUsers(); !slices.Equal(got, want) {
			return fmt.Errorf("auth was told about %v, want %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNarrowedPermissionsReachAuthDurably: the notice that a user's
// permissions narrowed is written with the change (outbox) and told to auth
// by the relay until auth has it, so an unreachable auth at the moment of the
// change only delays it (decision 0090).
func TestNarrowedPermissionsReachAuthDurably(t *testing.T) {
	t.Run("a role removed while auth is unreachable is told once auth is back", func(t *testing.T) {
		auth := newFakeAuth(t)
		auth.setDown(true)
		e := newEnv(t, envOptions{authURL: auth.url})
		up := e.Tokens.Service(t, "user:roles:update")
		e.Call(t, "DELETE", "/api/v0/users/1003/roles/2", up, "").Expect(t, 204)
		if got := auth.toldUsers(); len(got) != 0 {
			t.Fatalf("told while down: %v", got)
		}
		auth.setDown(false)
		auth.waitTold(t, 1003)
		err := testkit.Poll(context.Background(), 30*time.Second, func(ctx context.Context) error {
			var n int
			if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil || n != 0 {
				return fmt.Errorf("%d events left in the outbox (%v)", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a new CONVENTION_ID lapses the memberships of the old one, and auth is told", func(t *testing.T) {
		pool, dsn := usertest.NewPool(t)
		usertest.LoadDemo(t, pool)
		// Serve for 2026 records it; no relay, the events wait.
		newEnv(t, envOptions{databaseURL: dsn})
		recorded := func(want string) func(context.Context) error {
			return func(ctx context.Context) error {
				var got string
				if err := pool.QueryRow(ctx, `SELECT convention_id FROM convention_told`).Scan(&got); err != nil || got != want {
					return fmt.Errorf("recorded %q (%v), want %q", got, err, want)
				}
				return nil
			}
		}
		if err := testkit.Poll(context.Background(), 30*time.Second, recorded("2026")); err != nil {
			t.Fatal(err)
		}
		// Serve for 2027: alice (1001), carol (1003) and dave (1004) held
		// roles for 2026; bob (1002) and erin (1005) only global ones.
		auth := newFakeAuth(t)
		e := newEnv(t, envOptions{databaseURL: dsn, conventionID: "2027", authURL: auth.url})
		auth.waitTold(t, 1001, 1003, 1004)
		if err := testkit.Poll(context.Background(), 30*time.Second, recorded("2027")); err != nil {
			t.Fatal(err)
		}
		read := e.Tokens.Service(t, "user:read")
		if got := string(e.Call(t, "GET", "/api/v0/users/1003/roles", read, "").Body); strings.Contains(got, `"staff"`) {
			t.Fatalf("carol's 2026 staff role still counts: %s", got)
		}
	})
}
