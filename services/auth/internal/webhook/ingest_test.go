package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

func TestIngest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	volunteers := e.subscribe(tracker, "http://127.0.0.1:1/v", authapi.EventVolunteerUpdated, authapi.EventVolunteerDeleted)
	registrations := e.subscribe(reader, "http://127.0.0.1:1/r", authapi.EventRegistrationUpdated)
	both := e.subscribe(tracker, "http://127.0.0.1:1/b", authapi.EventRegistrationUpdated, authapi.EventVolunteerUpdated)
	batch := []authapi.Event{
		authtest.Event(authapi.EventVolunteerUpdated, "volunteer:2026:1", `{"n":1}`),
		authtest.Event(authapi.EventRegistrationUpdated, "registration:2026:1", `{"n":2}`),
		authtest.Event(authapi.EventUserUpdated, "user:1", `{"n":3}`),
	}
	if n := e.publish(batch...); n != 3 {
		t.Fatalf("accepted %d, want 3", n)
	}
	count := func(id string) int { return len(e.deliveries(id)) }

	t.Run("each event goes to every subscription listing its type", func(t *testing.T) {
		if count(volunteers.ID) != 1 || count(registrations.ID) != 1 || count(both.ID) != 2 {
			t.Fatalf("deliveries: %d %d %d", count(volunteers.ID), count(registrations.ID), count(both.ID))
		}
	})
	t.Run("a batch sent again creates nothing twice", func(t *testing.T) {
		if n := e.publish(batch...); n != 0 {
			t.Fatalf("accepted %d, want 0", n)
		}
		fresh := authtest.Event(authapi.EventVolunteerUpdated, "volunteer:2026:1", `{"n":4}`)
		if n := e.publish(append(batch, fresh)...); n != 1 {
			t.Fatalf("accepted %d, want 1 (the new one)", n)
		}
		if count(volunteers.ID) != 2 || count(registrations.ID) != 1 || count(both.ID) != 3 {
			t.Fatalf("deliveries: %d %d %d", count(volunteers.ID), count(registrations.ID), count(both.ID))
		}
	})
	t.Run("the same event twice in a batch is one event", func(t *testing.T) {
		ev := authtest.Event(authapi.EventVolunteerDeleted, "volunteer:2026:2", `{}`)
		if n := e.publish(ev, ev); n != 1 {
			t.Fatalf("accepted %d", n)
		}
	})
	t.Run("an app that no longer holds the scope gets no delivery", func(t *testing.T) {
		if _, err := e.pool.Exec(ctx, `UPDATE clients SET scopes = '{webhook:manage}' WHERE id = $1`, reader); err != nil {
			t.Fatal(err)
		}
		before := count(registrations.ID)
		e.publish(authtest.Event(authapi.EventRegistrationUpdated, "registration:2026:9", `{}`))
		if count(registrations.ID) != before {
			t.Fatal("a delivery was made to an app without registration:read")
		}
	})
	t.Run("a disabled subscription still gets deliveries (they wait)", func(t *testing.T) {
		off := webhook.StateDisabled
		if _, err := e.hooks.Update(ctx, tracker, volunteers.ID, webhook.Change{State: &off}); err != nil {
			t.Fatal(err)
		}
		before := count(volunteers.ID)
		e.publish(authtest.Event(authapi.EventVolunteerUpdated, "volunteer:2026:3", `{}`))
		if count(volunteers.ID) != before+1 {
			t.Fatal("no delivery for a disabled subscription")
		}
	})
	t.Run("one bad event refuses the whole batch", func(t *testing.T) {
		good := authtest.Event(authapi.EventVolunteerUpdated, "volunteer:2026:4", `{}`)
		cases := map[string]authapi.Event{
			"id":          {ID: "not-a-uuid", Type: authapi.EventUserUpdated, Source: "s", Resource: "r", Data: []byte(`{}`), OccurredAt: good.OccurredAt},
			"type":        {ID: good.ID, Type: "user-created", Source: "s", Resource: "r", Data: []byte(`{}`), OccurredAt: good.OccurredAt},
			"resource":    {ID: good.ID, Type: authapi.EventUserUpdated, Source: "s", Data: []byte(`{}`), OccurredAt: good.OccurredAt},
			"source":      {ID: good.ID, Type: authapi.EventUserUpdated, Resource: "r", Data: []byte(`{}`), OccurredAt: good.OccurredAt},
			"occurredAt":  {ID: good.ID, Type: authapi.EventUserUpdated, Source: "s", Resource: "r", Data: []byte(`{}`)},
			"data":        {ID: good.ID, Type: authapi.EventUserUpdated, Source: "s", Resource: "r", OccurredAt: good.OccurredAt},
			"traceparent": {ID: good.ID, Type: authapi.EventUserUpdated, Source: "s", Resource: "r", Data: []byte(`{}`), OccurredAt: good.OccurredAt, TraceParent: "00-zz"},
		}
		for field, bad := range cases {
			_, err := e.hooks.Ingest(ctx, []authapi.Event{authtest.Event(authapi.EventUserUpdated, "user:2", `{}`), bad})
			var invalid *webhook.InvalidError
			if !errors.As(err, &invalid) || invalid.Fields["events[1]."+field] == "" {
				t.Errorf("%s: %v", field, err)
			}
		}
		var events int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE resource IN ('user:2', 'r')`).Scan(&events); err != nil || events != 0 {
			t.Fatalf("%d events stored (%v)", events, err)
		}
	})
	t.Run("more than 1000 events is refused", func(t *testing.T) {
		big := make([]authapi.Event, webhook.MaxBatch+1)
		for i := range big {
			big[i] = authtest.Event(authapi.EventUserUpdated, "user:3", `{}`)
		}
		var invalid *webhook.InvalidError
		if _, err := e.hooks.Ingest(ctx, big); !errors.As(err, &invalid) {
			t.Fatalf("%v", err)
		}
	})
}

func TestRetention(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sub := e.subscribe(tracker, "http://127.0.0.1:1/v", authapi.EventVolunteerUpdated)
	e.publish(authtest.Event(authapi.EventVolunteerUpdated, "a", `{}`), authtest.Event(authapi.EventVolunteerUpdated, "b", `{}`),
		authtest.Event(authapi.EventVolunteerUpdated, "c", `{}`), authtest.Event(authapi.EventUserUpdated, "u", `{}`))
	ds := e.deliveries(sub.ID)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE webhook_deliveries SET state = 'delivered', finished_at = now() - interval '8 days' WHERE id = $1`, ds[0].ID)
	exec(`UPDATE webhook_deliveries SET state = 'dead', finished_at = now() - interval '8 days' WHERE id = $1`, ds[1].ID)
	exec(`UPDATE webhook_events SET received_at = now() - interval '2 days'`)
	now := time.Now()
	if _, err := e.store.Sweep(ctx, now.Add(-7*24*time.Hour), now.Add(-30*24*time.Hour), now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	left := e.deliveries(sub.ID)
	if len(left) != 2 || left[0].ID != ds[1].ID || left[1].ID != ds[2].ID {
		t.Fatalf("left %+v", left)
	}
	var events int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events`).Scan(&events); err != nil || events != 2 {
		t.Fatalf("%d events left, want the 2 with deliveries (%v)", events, err)
	}
}

// TestDisabledSubscriptionBacklogExpires: a disabled subscription's
// pending deliveries go dead once their retry window ends, and are then
// deleted with the dead retention: a subscription left disabled keeps no
// growing backlog of personal data.
func TestDisabledSubscriptionBacklogExpires(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rc := authtest.NewReceiver(t, nil)
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	off := webhook.StateDisabled
	if _, err := e.hooks.Update(ctx, tracker, sub.ID, webhook.Change{State: &off}); err != nil {
		t.Fatal(err)
	}
	e.publish(authtest.Event(authapi.EventUserUpdated, "user:1", `{"id":"1"}`), authtest.Event(authapi.EventUserUpdated, "user:2", `{"id":"2"}`))
	cfg := fast()
	cfg.RetryFor, cfg.SweepInterval = 300*time.Millisecond, 50*time.Millisecond

	t.Run("pending deliveries of a disabled subscription go dead when their retry window ends", func(t *testing.T) {
		stop := e.run(cfg)
		defer stop()
		e.eventually(10*time.Second, "the deliveries dead", func() bool {
			ds := e.deliveries(sub.ID)
			for _, d := range ds {
				if d.State != webhook.DeliveryDead {
					return false
				}
			}
			return len(ds) == 2
		})
		for _, d := range e.deliveries(sub.ID) {
			if !strings.Contains(d.LastError, "disabled") || d.Attempts != 0 {
				t.Fatalf("%+v", d)
			}
		}
		if rc.Count() != 0 {
			t.Fatalf("%d sent while disabled", rc.Count())
		}
	})
	t.Run("and are deleted with the dead retention", func(t *testing.T) {
		cfg := cfg
		cfg.DeadRetention = 100 * time.Millisecond
		stop := e.run(cfg)
		defer stop()
		e.eventually(10*time.Second, "the dead deliveries deleted", func() bool { return len(e.deliveries(sub.ID)) == 0 })
	})
}
