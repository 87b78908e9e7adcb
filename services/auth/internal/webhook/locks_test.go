package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/jackc/pgx/v5"
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
			holder := e.holdSubscription(ctx, sub.ID)
			done := make(chan error, 1)
			go func() { done <- o.record(e, claims[0]) }()
			e.awaitLockWait(ctx, "the outcome waiting on the subscription")

			// While it waits, it must hold nothing on the delivery: the
			// delete's cascade would need it.
			if lockErr := e.lockDelivery(ctx, claims[0].DeliveryID); lockErr != nil {
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
	enable := e.holdSubscription(ctx, sub.ID)
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
	e.awaitLockWait(ctx, "the expiry waiting on the subscription")
	if lockErr := e.lockDelivery(ctx, delivery.ID); lockErr != nil {
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

// holdSubscription locks subscription id in a transaction, as DELETE and
// UpdateSubscription do; the transaction is rolled back at the end of the test.
func (e *env) holdSubscription(ctx context.Context, id string) pgx.Tx {
	e.t.Helper()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, id); err != nil {
		e.t.Fatal(err)
	}
	return tx
}

// awaitLockWait waits until some session of this database waits on a lock.
func (e *env) awaitLockWait(ctx context.Context, what string) {
	e.t.Helper()
	e.eventually(5*time.Second, what, func() bool {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
}

// lockDelivery tries to lock delivery id without waiting and lets it go:
// an error says another transaction holds it.
func (e *env) lockDelivery(ctx context.Context, id string) error {
	e.t.Helper()
	probe, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = probe.Rollback(ctx) }()
	_, err = probe.Exec(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = $1 FOR UPDATE NOWAIT`, id)
	return err
}
