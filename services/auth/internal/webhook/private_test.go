package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// TestPrivateTargets: targets inside WEBHOOK_ALLOWED_NETWORKS are for the
// apps an operator allowed them (the fixture allows the tracker), nothing
// of their answers reaches the app, and plain http never goes to a public
// address.
func TestPrivateTargets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stranger, _, err := e.apps.Create(ctx, client.NewClient{Name: "Stranger", Kind: client.KindService, Scopes: []string{"user:read", "webhook:manage"}})
	if err != nil {
		t.Fatal(err)
	}
	e.run(fast())

	t.Run("an app not allowed private targets cannot subscribe to one", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		for _, url := range []string{rc.URL + "/in", strings.Replace(rc.URL, "http:", "https:", 1) + "/in"} {
			_, err := e.hooks.Create(ctx, stranger.ID, webhook.NewSubscription{URL: url, Events: []string{authapi.EventUserUpdated}})
			var invalid *webhook.InvalidError
			if !errors.As(err, &invalid) || !strings.Contains(invalid.Fields["url"], "not a public address") {
				t.Fatalf("%s: %v", url, err)
			}
		}
	})
	t.Run("a private target's answer never appears in lastError", func(t *testing.T) {
		rc := authtest.NewReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			http.Error(w, "SSH-2.0-OpenSSH_9.6 internal-only banner", http.StatusInternalServerError)
		})
		sub := e.subscribe(tracker, rc.URL, authapi.EventVolunteerDeleted)
		e.publish(authtest.Event(authapi.EventVolunteerDeleted, "volunteer:p1", `{}`))
		e.eventually(5*time.Second, "a failed attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		if d := e.deliveries(sub.ID)[0]; d.LastStatus != 500 || d.LastError != "HTTP 500" {
			t.Fatalf("lastError %q (status %d)", d.LastError, d.LastStatus)
		}
	})
	t.Run("an http target that now resolves to a public address is refused at dial", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		sub := e.subscribe(tracker, rc.URL+"/in", authapi.EventVolunteerSubmitted) // http: accepted inside the allowed networks
		// Its name now resolves to a public address (DNS rebinding): what the
		// dialer sees is the same as for this literal.
		if _, err := e.pool.Exec(ctx, `UPDATE webhook_subscriptions SET url = 'http://93.184.216.34:9/in' WHERE id = $1`, sub.ID); err != nil {
			t.Fatal(err)
		}
		e.publish(authtest.Event(authapi.EventVolunteerSubmitted, "volunteer:p2", `{}`))
		e.eventually(10*time.Second, "an attempt", func() bool { return e.deliveries(sub.ID)[0].Attempts > 0 })
		if d := e.deliveries(sub.ID)[0]; !strings.HasPrefix(d.LastError, "refused: 93.184.216.34 is a public address") {
			t.Fatalf("lastError %q", d.LastError)
		}
	})
	t.Run("once an operator allows it, the app subscribes to one", func(t *testing.T) {
		rc := authtest.NewReceiver(t, nil)
		if err := e.hooks.AllowPrivate(ctx, stranger.ID, true); err != nil {
			t.Fatal(err)
		}
		sub := e.subscribe(stranger.ID, rc.URL+"/in", authapi.EventUserUpdated)
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:p3", `{}`))
		e.eventually(5*time.Second, "delivered", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })

		t.Run("and when the operator withdraws it, its private targets are refused at the next connection", func(t *testing.T) {
			if err := e.hooks.AllowPrivate(ctx, stranger.ID, false); err != nil {
				t.Fatal(err)
			}
			before := rc.Count()
			e.publish(authtest.Event(authapi.EventUserUpdated, "user:p4", `{}`))
			e.eventually(5*time.Second, "a refused attempt", func() bool {
				ds := e.deliveries(sub.ID)
				return len(ds) == 2 && ds[1].Attempts > 0
			})
			if d := e.deliveries(sub.ID)[1]; !strings.HasPrefix(d.LastError, "refused: ") || rc.Count() != before {
				t.Fatalf("%+v, %d receipts", d, rc.Count()-before)
			}
		})
	})
	t.Run("allowing an unknown app is refused", func(t *testing.T) {
		if err := e.hooks.AllowPrivate(ctx, 999999, true); !errors.Is(err, webhook.ErrAppNotFound) {
			t.Fatalf("%v", err)
		}
	})
}
