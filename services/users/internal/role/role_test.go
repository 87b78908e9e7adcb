package role_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/authapi"
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

func TestAppsMayGrant(t *testing.T) {
	for name, tc := range map[string]struct {
		r    role.Role
		want bool
	}{
		"no permissions":                   {role.Role{ID: 5}, true},
		"only permissions of no scope":     {role.Role{ID: 4, Permissions: []string{"system:login", "con:read", "staff:roles:update"}}, true},
		"an OBO scope's permission":        {role.Role{ID: 6, Permissions: []string{"pii:email"}}, true},
		"a sensitive permission, unmarked": {role.Role{ID: 1, Permissions: []string{"system:login", "user:roles:update"}}, false},
		"each sensitive scope, unmarked":   {role.Role{ID: 1, Permissions: []string{"registration:read"}}, false},
		"a sensitive permission, marked":   {role.Role{ID: 2, Permissions: []string{"user:read"}, Grantable: true}, true},
		"marked without needing to be":     {role.Role{ID: 4, Grantable: true}, true},
		"a longer name is not the scope":   {role.Role{ID: 3, Permissions: []string{"registration:read:pii"}}, true},
		"volunteer:read, unmarked":         {role.Role{ID: 7, Permissions: []string{"volunteer:read"}}, false},
		"user:read among others, unmarked": {role.Role{ID: 8, Permissions: []string{"con:read", "user:read"}}, false},
	} {
		if got := tc.r.AppsMayGrant(apispec.Routes().SensitiveScope); got != tc.want {
			t.Errorf("%s: AppsMayGrant() = %v", name, got)
		}
	}
	if got := role.SensitivePermissions([]string{"user:read", "con:read", "user:roles:update", "volunteer:read", "registration:read", "pii:basic"},
		apispec.Routes().SensitiveScope); !reflect.DeepEqual(got,
		[]string{"user:read", "user:roles:update", "volunteer:read", "registration:read"}) {
		t.Fatalf("%v", got)
	}
}

// memberStore is a Store of one role that records the changes asked of it.
type memberStore struct {
	role.Store
	r       role.Role
	changes []string
}

func (s *memberStore) Get(_ context.Context, id int64) (role.Role, error) {
	if id != s.r.ID {
		return role.Role{}, role.ErrRoleNotFound
	}
	return s.r, nil
}

func (s *memberStore) Grant(context.Context, int64, int64, string, role.Scope) error {
	s.changes = append(s.changes, "grant")
	return nil
}

func (s *memberStore) Revoke(context.Context, int64, int64, string) error {
	s.changes = append(s.changes, "revoke")
	return nil
}

func TestAppChangesHaveACeiling(t *testing.T) {
	ctx := context.Background()
	admin := role.Role{ID: 1, Name: "admin", Permissions: []string{"user:roles:update"}}
	judged := func(s role.Store) *role.Service {
		c := role.NewService(s, "2026")
		c.JudgeSensitivityBy(apispec.Routes().SensitiveScope)
		return c
	}
	t.Run("an app may neither grant nor revoke an unmarked sensitive role; the store is not asked", func(t *testing.T) {
		s := &memberStore{r: admin}
		c := judged(s)
		if err := c.GrantByApp(ctx, 1002, 1, role.Global); !errors.Is(err, role.ErrNotGrantable) {
			t.Fatalf("grant: %v", err)
		}
		if err := c.RevokeByApp(ctx, 1001, 1); !errors.Is(err, role.ErrNotGrantable) {
			t.Fatalf("revoke: %v", err)
		}
		if len(s.changes) != 0 {
			t.Fatalf("%v", s.changes)
		}
	})
	t.Run("an operator may, and an app may once the role is marked", func(t *testing.T) {
		s := &memberStore{r: admin}
		c := judged(s)
		if c.Grant(ctx, 1002, 1, role.Global) != nil || c.Revoke(ctx, 1002, 1) != nil {
			t.Fatal("operator refused")
		}
		s.r.Grantable = true
		if c.GrantByApp(ctx, 1002, 1, role.Global) != nil || c.RevokeByApp(ctx, 1002, 1) != nil {
			t.Fatal("app refused a marked role")
		}
		if !reflect.DeepEqual(s.changes, []string{"grant", "revoke", "grant", "revoke"}) {
			t.Fatalf("%v", s.changes)
		}
	})
	t.Run("an unknown role is ErrRoleNotFound", func(t *testing.T) {
		c := judged(&memberStore{r: admin})
		if err := c.GrantByApp(ctx, 1002, 99, role.Global); !errors.Is(err, role.ErrRoleNotFound) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a service not told how to judge sensitivity refuses apps any role with permissions", func(t *testing.T) {
		c := role.NewService(&memberStore{r: role.Role{ID: 4, Name: "user", Permissions: []string{"system:login"}}}, "2026")
		if err := c.GrantByApp(ctx, 1002, 4, role.Global); !errors.Is(err, role.ErrNotGrantable) {
			t.Fatalf("%v", err)
		}
	})
}

func TestPublishNoticesTellsAuthInOrder(t *testing.T) {
	ctx := context.Background()
	ev := func(typ string, id int64) authapi.Event {
		data := []byte(`{"id":"` + strconv.FormatInt(id, 10) + `"}`)
		if typ == role.NarrowedEventType {
			data = []byte(`{"userId":` + strconv.FormatInt(id, 10) + `}`)
		}
		return authapi.Event{Type: typ, Resource: "user:" + strconv.FormatInt(id, 10), Data: data}
	}
	batch := []authapi.Event{ev("user-updated", 1), ev(role.NarrowedEventType, 1), ev(role.NarrowedEventType, 1),
		ev(role.NarrowedEventType, 2), ev("user-updated", 3), ev(role.NarrowedEventType, 3)}
	t.Run("webhook events go to auth's intake, notices to the notifier, in order, once per user per run", func(t *testing.T) {
		var log []string
		n := &orderedNotifier{log: &log}
		publish := role.PublishNotices(n, func(_ context.Context, events []authapi.Event) error {
			for _, e := range events {
				log = append(log, "event "+e.Resource)
			}
			return nil
		})
		if err := publish(ctx, batch); err != nil {
			t.Fatal(err)
		}
		want := []string{"event user:1", "told 1", "told 2", "event user:3", "told 3"}
		if !reflect.DeepEqual(log, want) {
			t.Fatalf("%v", log)
		}
	})
	t.Run("a failed notice fails the batch, which the relay retries whole", func(t *testing.T) {
		n := &notifier{err: errors.New("auth is down")}
		published := 0
		publish := role.PublishNotices(n, func(_ context.Context, events []authapi.Event) error { published += len(events); return nil })
		if err := publish(ctx, batch); err == nil || !strings.Contains(err.Error(), "user 1") {
			t.Fatalf("%v", err)
		}
		if published != 1 || !reflect.DeepEqual(n.users, []int64{1}) {
			t.Fatalf("published %d, told %v: it must stop at the failure", published, n.users)
		}
	})
}

type orderedNotifier struct{ log *[]string }

func (n *orderedNotifier) UserChanged(_ context.Context, id int64) (int, error) {
	*n.log = append(*n.log, "told "+strconv.FormatInt(id, 10))
	return 0, nil
}
