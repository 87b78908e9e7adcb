package usersummary_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/libs/usersummary"
)

type joined struct {
	row  int64
	user string
}

func join(r int64, u usersclient.UserSummary) joined { return joined{row: r, user: u.ID} }

func TestAttach(t *testing.T) {
	users := usersclienttest.New(t, usersclienttest.User(1))
	src := usersclient.NewClient(users.URL, time.Second, nil)
	errGone := errors.New("gone")
	t.Run("a known user is joined", func(t *testing.T) {
		got, err := usersummary.Attach(context.Background(), src, 1, int64(1), errGone, join)
		if err != nil || got != (joined{1, "1"}) {
			t.Fatalf("got %+v %v", got, err)
		}
	})
	t.Run("an unknown user is the not-found error", func(t *testing.T) {
		if _, err := usersummary.Attach(context.Background(), src, 2, int64(2), errGone, join); err != errGone {
			t.Fatalf("got %v", err)
		}
	})
}

func TestJoinPage(t *testing.T) {
	users := usersclienttest.New(t, usersclienttest.User(1), usersclienttest.User(3), usersclienttest.User(4))
	src := usersclient.NewClient(users.URL, time.Second, nil)
	id := func(r int64) int64 { return r }
	t.Run("an extra row means more; unknown users are left out; one call", func(t *testing.T) {
		users.Reset()
		p, err := usersummary.JoinPage(context.Background(), src, []int64{1, 2, 3, 4}, 3, id, join)
		if err != nil || len(p.Items) != 2 || p.Items[0].row != 1 || p.Items[1].row != 3 || !p.More || p.Last != 3 {
			t.Fatalf("got %+v %v", p, err)
		}
		if calls := users.Calls(); len(calls) != 1 || len(calls[0]) != 3 {
			t.Fatalf("calls %v", calls)
		}
	})
	t.Run("no rows is an empty page without a call", func(t *testing.T) {
		users.Reset()
		p, err := usersummary.JoinPage(context.Background(), src, nil, 3, id, join)
		if err != nil || p.Items == nil || len(p.Items) != 0 || p.More || len(users.Calls()) != 0 {
			t.Fatalf("got %+v %v", p, err)
		}
	})
}
