package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

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

// TestOneAppCannotHoldEveryWorker: an app whose endpoints all hang holds no
// more than its share of a replica's workers; another app's deliveries go
// out meanwhile.
func TestOneAppCannotHoldEveryWorker(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	var slow []*authtest.Receiver
	for range 3 {
		rc := authtest.NewReceiver(t, hang)
		slow = append(slow, rc)
		e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	}
	t.Cleanup(func() { close(release) })
	other := authtest.NewReceiver(t, nil)
	e.subscribe(reader, other.URL, authapi.EventRegistrationUpdated)
	cfg := fast()
	// 3 subscriptions × 4 per endpoint = 12 deliveries the app could hold,
	// more than the 8 workers; the app's share is a quarter of them.
	cfg.Workers, cfg.Timeout, cfg.Lease = 8, time.Minute, 2*time.Minute
	e.run(cfg)
	for i := range 6 {
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:"+string(rune('a'+i)), `{}`))
	}
	inFlight := func() int {
		n := 0
		for _, rc := range slow {
			n += rc.Count()
		}
		return n
	}
	e.eventually(10*time.Second, "the app's endpoints hanging", func() bool { return inFlight() > 0 })
	e.publish(authtest.Event(authapi.EventRegistrationUpdated, "registration:1", `{}`))

	t.Run("another app's delivery goes out while the first app's hang", func(t *testing.T) {
		e.eventually(10*time.Second, "the other app's delivery", func() bool { return other.Count() == 1 })
	})
	t.Run("the hanging app holds at most its share of the workers", func(t *testing.T) {
		if n := inFlight(); n > cfg.Workers/4 {
			t.Fatalf("%d deliveries of one app in flight, more than a quarter of %d workers", n, cfg.Workers)
		}
	})
}
