package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// An outcome (Delivered, Failed) and a subscription's delete or update
// touch the same two rows. Both must take the subscription first, then the
// delivery: in the other order, a delete racing a failed attempt
// deadlocks (the delete holds the subscription and cascades to the
// delivery, the outcome holds the delivery and updates the subscription).
func TestOutcomesLockTheSubscriptionBeforeTheDelivery(t *testing.T) {
	ctx := context.Background()
	outcomes := []struct {
		name   string
		record func(*env, webhook.Claim) error
	}{
		{"delivered", func(e *env, c webhook.Claim) error { return e.store.Delivered(ctx, c, 204) }},
		{"failed", func(e *env, c webhook.Claim) error {
			_, err := e.store.Failed(ctx, c, webhook.Failure{Status: 500, Problem: "status 500", Delay: time.Second,
				RetryFor: time.Hour, DisableAfter: time.Hour})
			return err
		}},
	}
	for _, o := range outcomes {
		t.Run(o.name, func(t *testing.T) {
			e := newEnv(t)
			sub := e.subscribe(tracker, "http://127.0.0.1:9/in", authapi.EventUserUpdated)
			// A failing subscription: a success clears failing_since, so it
			// too updates the subscription's row.
			if _, err := e.pool.Exec(ctx, `UPDATE webhook_subscriptions SET failing_since = now() WHERE id = $1`, sub.ID); err != nil {
				t.Fatal(err)
			}
			e.publish(authtest.Event(authapi.EventUserUpdated, "user:"+o.name, `{}`))
			claims, err := e.store.Claim(ctx, 10, 10, 100, time.Minute)
			if err != nil || len(claims) != 1 {
				t.Fatalf("claim: %v, %d claims", err, len(claims))
			}

			// Hold the subscription as DELETE and UpdateSubscription do.
			holder, err := e.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback(ctx)
			if _, err := holder.Exec(ctx, `SELECT 1 FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, sub.ID); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- o.record(e, claims[0]) }()
			e.eventually(5*time.Second, "the outcome waiting on the subscription", func() bool {
				var n int
				err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
				return err == nil && n > 0
			})

			// While it waits, it must hold nothing on the delivery: the
			// delete's cascade would need it.
			probe, err := e.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, lockErr := probe.Exec(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = $1 FOR UPDATE NOWAIT`, claims[0].DeliveryID)
			_ = probe.Rollback(ctx)
			if lockErr != nil {
				t.Errorf("the delivery is locked while its outcome waits for the subscription: %v", lockErr)
			}
			if err := holder.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("recording the outcome: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the outcome did not finish once the subscription was free")
			}
		})
	}
}

// The expiry of a disabled subscription's backlog takes the subscription
// before its deliveries too: an enable holding the subscription makes it
// wait, holding no delivery, and once the enable commits it gives up
// nothing.
func TestExpiryLocksTheSubscriptionBeforeTheDeliveries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sub := e.subscribe(tracker, "http://127.0.0.1:9/in", authapi.EventUserUpdated)
	if _, err := e.pool.Exec(ctx, `UPDATE webhook_subscriptions SET state = 'disabled', disabled_by = 'app' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	e.publish(authtest.Event(authapi.EventUserUpdated, "user:expiry", `{}`))
	delivery := e.deliveries(sub.ID)[0]

	// Hold the subscription as an enable (UpdateSubscription) does, and enable it.
	enable, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer enable.Rollback(ctx)
	if _, err := enable.Exec(ctx, `SELECT 1 FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := enable.Exec(ctx, `UPDATE webhook_subscriptions SET state = 'active', disabled_by = NULL WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	type expired struct {
		n   int64
		err error
	}
	done := make(chan expired, 1)
	go func() {
		n, err := e.store.ExpireDisabled(ctx, time.Now().Add(time.Hour)) // every window has ended
		done <- expired{n, err}
	}()
	e.eventually(5*time.Second, "the expiry waiting on the subscription", func() bool {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
	probe, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, lockErr := probe.Exec(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = $1 FOR UPDATE NOWAIT`, delivery.ID)
	_ = probe.Rollback(ctx)
	if lockErr != nil {
		t.Errorf("the delivery is locked while the expiry waits for the subscription: %v", lockErr)
	}
	if err := enable.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.n != 0 {
			t.Fatalf("the expiry after the enable: %d dead, %v", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the expiry did not finish once the subscription was free")
	}
	if d := e.deliveries(sub.ID)[0]; d.State != webhook.DeliveryPending {
		t.Fatalf("%+v", d)
	}
}
