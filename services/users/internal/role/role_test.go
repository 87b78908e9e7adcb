package role_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/eventreg/eventreg/services/users/internal/role"
)

func TestPermissionsOfIsASortedUnion(t *testing.T) {
	held := []role.Held{
		{Role: role.Role{ID: 2, Permissions: []string{"user:read", "con:read"}}, Scope: role.Convention},
		{Role: role.Role{ID: 4, Permissions: []string{"system:login", "con:read"}}, Scope: role.Global},
		{Role: role.Role{ID: 5, Permissions: []string{}}, Scope: role.Global},
	}
	if got := role.PermissionsOf(held); !reflect.DeepEqual(got, []string{"con:read", "system:login", "user:read"}) {
		t.Fatalf("%v", got)
	}
	if got := role.PermissionsOf(nil); got == nil || len(got) != 0 {
		t.Fatalf("no roles must give an empty list, not null: %#v", got)
	}
}

func TestParseScope(t *testing.T) {
	for s, ok := range map[string]bool{"global": true, "convention": true, "Global": false, "": false, "forever": false} {
		if _, got := role.ParseScope(s); got != ok {
			t.Errorf("ParseScope(%q) = %v", s, got)
		}
	}
}

func TestValidate(t *testing.T) {
	if p := role.Validate(role.Role{ID: 1, Name: "staff", Permissions: []string{"user:read", "registration:read:pii", "con:read"}}); len(p) != 0 {
		t.Fatalf("%v", p)
	}
	for name, r := range map[string]role.Role{
		"no id":              {Name: "x"},
		"empty name":         {ID: 1, Name: " "},
		"permission, spaces": {ID: 1, Name: "x", Permissions: []string{"user read"}},
		"permission, empty":  {ID: 1, Name: "x", Permissions: []string{""}},
		"permission, colon":  {ID: 1, Name: "x", Permissions: []string{"user:"}},
	} {
		if p := role.Validate(r); len(p) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

// revokeStore is a Store that only revokes.
type revokeStore struct {
	role.Store
	err error
}

func (s revokeStore) Revoke(context.Context, int64, int64, string) error { return s.err }

type notifier struct {
	users []int64
	err   error
}

func (n *notifier) UserChanged(_ context.Context, id int64) (int, error) {
	n.users = append(n.users, id)
	return 1, n.err
}

func TestRevokeTellsTheNotifier(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("a revoked role is told, with the user", func(t *testing.T) {
		n := &notifier{}
		c := role.NewService(revokeStore{}, "2026")
		c.NotifyRevocations(n, log)
		if err := c.Revoke(context.Background(), 1003, 2); err != nil || !reflect.DeepEqual(n.users, []int64{1003}) {
			t.Fatalf("%v %v", err, n.users)
		}
	})
	t.Run("a failed revocation is not told", func(t *testing.T) {
		n := &notifier{}
		c := role.NewService(revokeStore{err: role.ErrNotHeld}, "2026")
		c.NotifyRevocations(n, log)
		if err := c.Revoke(context.Background(), 1003, 2); !errors.Is(err, role.ErrNotHeld) || len(n.users) != 0 {
			t.Fatalf("%v %v", err, n.users)
		}
	})
	t.Run("a failed notification does not undo the revocation", func(t *testing.T) {
		n := &notifier{err: errors.New("auth is down")}
		c := role.NewService(revokeStore{}, "2026")
		c.NotifyRevocations(n, log)
		if err := c.Revoke(context.Background(), 1003, 2); err != nil || len(n.users) != 1 {
			t.Fatalf("%v %v", err, n.users)
		}
	})
}

func TestTellStopsAtTheFirstFailure(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := &notifier{}
	if told := role.Tell(context.Background(), n, log, []int64{1, 2, 3}); told != 3 || !reflect.DeepEqual(n.users, []int64{1, 2, 3}) {
		t.Fatalf("%d %v", told, n.users)
	}
	// auth unreachable: one attempt, not one timeout per user
	n = &notifier{err: errors.New("auth is down")}
	if told := role.Tell(context.Background(), n, log, []int64{1, 2, 3}); told != 0 || len(n.users) != 1 {
		t.Fatalf("%d %v", told, n.users)
	}
}
