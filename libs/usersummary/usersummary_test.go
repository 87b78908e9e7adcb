package usersummary_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersclienttest"
	"github.com/eventreg/eventreg/libs/usersummary"
)

func TestFetch(t *testing.T) {
	users := usersclienttest.New(t, usersclienttest.User(1), usersclienttest.User(2))
	client := usersclient.NewClient(users.URL, 300*time.Millisecond, nil)
	ctx := context.Background()

	t.Run("duplicates cost nothing and unknown ids are absent", func(t *testing.T) {
		users.Reset()
		got, err := usersummary.Fetch(ctx, client, []int64{2, 1, 2, 99})
		if err != nil || len(got) != 2 || got[1].Username != "user1" {
			t.Fatalf("%v %v", got, err)
		}
		if calls := users.Calls(); len(calls) != 1 || len(calls[0]) != 3 {
			t.Fatalf("calls %v", calls)
		}
	})
	t.Run("no ids make no call", func(t *testing.T) {
		users.Reset()
		if _, err := usersummary.Fetch(ctx, client, nil); err != nil || len(users.Calls()) != 0 {
			t.Fatalf("%v %v", err, users.Calls())
		}
	})
	t.Run("more than 100 ids are fetched in chunks of 100", func(t *testing.T) {
		users.Reset()
		ids := make([]int64, 250)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		if _, err := usersummary.Fetch(ctx, client, ids); err != nil {
			t.Fatal(err)
		}
		if calls := users.Calls(); len(calls) != 3 || len(calls[0]) != 100 || len(calls[2]) != 50 {
			t.Fatalf("%d calls", len(calls))
		}
	})
	t.Run("a failing users service is an UnavailableError with a 503", func(t *testing.T) {
		users.SetStatus(http.StatusBadGateway)
		defer users.SetStatus(0)
		_, err := usersummary.Fetch(ctx, client, []int64{1})
		var ue *usersummary.UnavailableError
		if !errors.As(err, &ue) || ue.Dependency() != "The users service" || !usersummary.IsUnavailable(err) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a slow users service times out as unavailable", func(t *testing.T) {
		users.SetDelay(5 * time.Second)
		defer users.SetDelay(0)
		start := time.Now()
		if _, err := usersummary.Fetch(ctx, client, []int64{1}); !usersummary.IsUnavailable(err) || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
}
