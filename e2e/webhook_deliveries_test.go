package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// startWithWebhooks starts a stack whose auth delivers webhooks to
// receivers on 127.0.0.1 (an operator's WEBHOOK_ALLOWED_NETWORKS) and
// retries quickly, with env on top.
func startWithWebhooks(t *testing.T, env map[string]string) *stack.Stack {
	t.Helper()
	all := map[string]string{"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32", "WEBHOOK_RETRY_BASE": "100ms", "WEBHOOK_POLL_INTERVAL": "250ms"}
	maps.Copy(all, env)
	return stack.Start(t, stack.Options{Env: all})
}

// subscribe posts a subscription of url to events with token.
func subscribe(t testing.TB, s *stack.Stack, token, url string, events []string) reply {
	t.Helper()
	return postSubscription(t, s, token, map[string]any{"url": url, "events": events, "description": "e2e"})
}

// postSubscription posts the subscription sub (POST /api/v0/webhooks) with token.
func postSubscription(t testing.TB, s *stack.Stack, token string, sub map[string]any) reply {
	t.Helper()
	b, _ := json.Marshal(sub)
	return mustSend(t, s, http.MethodPost, "/api/v0/webhooks", token, string(b))
}

// waitForEmptyOutboxes waits until the producers have relayed every event
// their outboxes hold to auth: an event is fanned out to the subscriptions
// of the moment it arrives, so a test subscribing after the demo import
// waits for its events first.
func waitForEmptyOutboxes(t testing.TB, s *stack.Stack) {
	t.Helper()
	ctx := context.Background()
	for _, svc := range []string{"users", "volunteers", "registrations", "dealers"} {
		conn, err := pgx.Connect(ctx, s.DatabaseURL(svc))
		if err != nil {
			t.Fatal(err)
		}
		err = testkit.Poll(ctx, 30*time.Second, func(ctx context.Context) error {
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox").Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%s's outbox holds %d events", svc, n)
			}
			return nil
		})
		_ = conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitForEvent waits for the first delivery of event to app and returns it.
func (r *webhookReceiver) waitForEvent(t testing.TB, app, event string) webhookDelivery {
	t.Helper()
	var got webhookDelivery
	eventually(t, 45*time.Second, "a "+event+" delivery to app "+app, func() error {
		for _, d := range r.deliveries() {
			if d.App == app && d.Event == event {
				got = d
				return nil
			}
		}
		return fmt.Errorf("no delivery yet (%d in all)", len(r.deliveries()))
	})
	return got
}

// eventKey names a delivery by its type and the user it is about.
func eventKey(t testing.TB, d webhookDelivery) string {
	t.Helper()
	var v struct {
		ID   string
		User struct{ ID string }
	}
	if err := json.Unmarshal(d.Data, &v); err != nil {
		t.Fatalf("%s data %s: %v", d.Event, d.Data, err)
	}
	if strings.HasPrefix(d.Event, "user-") {
		return d.Event + " " + v.ID
	}
	return d.Event + " " + v.User.ID
}

// waitForDeliveries waits until the deliveries after the first mark are,
// per app, exactly want (as sorted "event userId" keys), and returns them per
// app in arrival order. A delivery of an event the app received before (at
// least once: its answer was lost) is not counted again.
func waitForDeliveries(t testing.TB, recv *webhookReceiver, want map[string][]string, mark int) map[string][]webhookDelivery {
	t.Helper()
	var byApp map[string][]webhookDelivery
	check := func() error {
		byApp = map[string][]webhookDelivery{}
		seen := map[string]bool{}
		for i, d := range recv.deliveries() {
			if seen[d.App+" "+d.EventID] {
				continue // a redelivery of an event whose answer was lost
			}
			seen[d.App+" "+d.EventID] = true
			if i >= mark {
				byApp[d.App] = append(byApp[d.App], d)
			}
		}
		got := map[string][]string{}
		for app, ds := range byApp {
			for _, d := range ds {
				got[app] = append(got[app], eventKey(t, d))
			}
			sort.Strings(got[app])
		}
		wanted := map[string][]string{}
		for app, keys := range want {
			wanted[app] = append([]string(nil), keys...)
			sort.Strings(wanted[app])
		}
		if diff := cmp.Diff(wanted, got); diff != "" {
			return fmt.Errorf("deliveries by app (-want +got):\n%s", diff)
		}
		return nil
	}
	eventually(t, 45*time.Second, "deliveries", check)
	time.Sleep(500 * time.Millisecond) // nothing more arrives (no extra event)
	if err := check(); err != nil {
		t.Fatal(err)
	}
	return byApp
}

// readPathOf is the read API path that renders the object of d.
func readPathOf(t testing.TB, d webhookDelivery) string {
	t.Helper()
	key := eventKey(t, d)
	id := key[strings.LastIndex(key, " ")+1:]
	switch {
	case strings.HasPrefix(d.Event, "user-"):
		return "/api/v0/users/" + id
	case strings.HasPrefix(d.Event, "registration-"):
		return "/api/v0/users/" + id + "/registration"
	default:
		return "/api/v0/users/" + id + "/volunteer"
	}
}
