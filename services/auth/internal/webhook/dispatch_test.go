package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// failingReceiver is a receiver that answers every delivery with fail while
// failing is set, as it is at first, and 200 once it is cleared.
func failingReceiver(t *testing.T, fail func(http.ResponseWriter)) (rc *authtest.Receiver, failing *atomic.Bool) {
	failing = new(atomic.Bool)
	failing.Store(true)
	rc = authtest.NewReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if failing.Load() {
			fail(w)
		}
	})
	return rc, failing
}

func TestRetryThenDeadThenReplay(t *testing.T) {
	e := newEnv(t)
	rc, failing := failingReceiver(t, func(w http.ResponseWriter) {
		http.Error(w, "boom\n\tdown for maintenance", http.StatusInternalServerError)
	})
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	cfg := fast()
	cfg.RetryBase, cfg.RetryMax, cfg.RetryFor = 10*time.Millisecond, 40*time.Millisecond, 600*time.Millisecond
	e.run(cfg)
	ev := authtest.Event(authapi.EventUserUpdated, "user:1001", `{"id":"1001"}`)
	e.publish(ev)

	e.eventually(5*time.Second, "the delivery going dead", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDead })
	dead := e.deliveries(sub.ID)[0]
	t.Run("retried with backoff until the retry window closed, then dead", func(t *testing.T) {
		if dead.Attempts < 3 || dead.Attempts != rc.Count() {
			t.Fatalf("%d attempts recorded, %d received", dead.Attempts, rc.Count())
		}
		if dead.LastStatus != 500 || dead.LastError != "HTTP 500" || !dead.NextAttemptAt.IsZero() {
			t.Fatalf("%+v", dead)
		}
		got := rc.Receipts()
		if last := got[len(got)-1].At.Sub(ev.OccurredAt); last < 580*time.Millisecond {
			t.Fatalf("the last attempt came %s after the event, before its retry window of 600ms closed", last)
		}
	})
	t.Run("every attempt carries the same Webhook-Id", func(t *testing.T) {
		for _, r := range rc.Receipts() {
			if r.ID != dead.ID {
				t.Fatalf("Webhook-Id %s, want %s", r.ID, dead.ID)
			}
		}
	})
	t.Run("replay sends it again, with attempts reset", func(t *testing.T) {
		failing.Store(false)
		before := rc.Count()
		d, err := e.hooks.Replay(context.Background(), tracker, sub.ID, dead.ID)
		if err != nil || d.State != webhook.DeliveryPending || d.Attempts != 0 {
			t.Fatalf("%+v %v", d, err)
		}
		e.eventually(5*time.Second, "the replay delivered", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })
		if d := e.deliveries(sub.ID)[0]; d.Attempts != 1 || rc.Count() != before+1 {
			t.Fatalf("%+v after %d receipts", d, rc.Count()-before)
		}
	})
	t.Run("replaying every dead delivery", func(t *testing.T) {
		failing.Store(true)
		e.publish(authtest.Event(authapi.EventUserUpdated, "user:1002", `{}`), authtest.Event(authapi.EventUserUpdated, "user:1003", `{}`))
		e.eventually(5*time.Second, "two dead", func() bool {
			n := 0
			for _, d := range e.deliveries(sub.ID) {
				if d.State == webhook.DeliveryDead {
					n++
				}
			}
			return n == 2
		})
		failing.Store(false)
		n, err := e.hooks.ReplayDead(context.Background(), tracker, sub.ID)
		if err != nil || n != 2 {
			t.Fatalf("replayed %d: %v", n, err)
		}
		e.eventually(5*time.Second, "all delivered", func() bool { return e.allDelivered(sub.ID) })
	})
}

func TestDisableAfterFailingTooLong(t *testing.T) {
	e := newEnv(t)
	rc, failing := failingReceiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	cfg := fast()
	cfg.DisableAfter = 300 * time.Millisecond
	e.run(cfg)
	e.publish(authtest.Event(authapi.EventUserUpdated, "user:1", `{}`))
	e.eventually(5*time.Second, "failing", func() bool { return !e.subscription(sub.ID).FailingSince.IsZero() })
	// "active" sent to an active subscription does not restart its failure
	// clock (an app cannot put off being disabled).
	on := webhook.StateActive
	since := e.subscription(sub.ID).FailingSince
	if s, err := e.hooks.Update(context.Background(), tracker, sub.ID, webhook.Change{State: &on}); err != nil ||
		(s.State == webhook.StateActive && !s.FailingSince.Equal(since)) {
		t.Fatalf("re-activating an active subscription: %+v %v (failing since %v)", s, err, since)
	}
	e.eventually(5*time.Second, "the subscription disabled", func() bool { return e.subscription(sub.ID).State == webhook.StateDisabled })
	s := e.subscription(sub.ID)
	if !strings.HasPrefix(s.DisabledReason, "no successful delivery since 20") || !strings.HasSuffix(s.DisabledReason, "; last: HTTP 503") || s.FailingSince.IsZero() ||
		s.DisabledBy != webhook.ByFailures {
		t.Fatalf("%+v", s)
	}
	t.Run("a disabled subscription gets no attempts", func(t *testing.T) {
		n := rc.Count()
		time.Sleep(200 * time.Millisecond) // many poll intervals: nothing may be sent
		if rc.Count() != n {
			t.Fatalf("%d attempts while disabled", rc.Count()-n)
		}
		if d := e.deliveries(sub.ID)[0]; d.State != webhook.DeliveryPending {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("enabling it clears the failures and delivers what waited", func(t *testing.T) {
		failing.Store(false)
		s, err := e.hooks.Update(context.Background(), tracker, sub.ID, webhook.Change{State: &on})
		if err != nil || s.State != webhook.StateActive || s.DisabledReason != "" || !s.FailingSince.IsZero() {
			t.Fatalf("%+v %v", s, err)
		}
		e.eventually(5*time.Second, "delivered", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })
	})
}

// gate is a receiver that holds every request until released, counting
// the requests in flight.
type gate struct {
	release           chan struct{}
	inFlight, maxSeen atomic.Int32
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) hold(w http.ResponseWriter, r *http.Request, _ int) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
}

func TestEndpointConcurrencyLimit(t *testing.T) {
	e := newEnv(t)
	g := newGate()
	rc := authtest.NewReceiver(t, g.hold)
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	cfg := fast()
	cfg.EndpointConcurrency, cfg.Timeout, cfg.Lease = 3, 5*time.Second, 10*time.Second
	e.run(cfg)
	for i := range 12 {
		e.publish(authtest.Event(authapi.EventUserUpdated, fmt.Sprintf("user:%d", i), `{}`))
	}
	e.eventually(5*time.Second, "3 in flight", func() bool { return g.inFlight.Load() == 3 })
	time.Sleep(200 * time.Millisecond) // ten poll intervals: no fourth may start
	if g.maxSeen.Load() != 3 {
		t.Fatalf("%d in flight to one endpoint, limit 3", g.maxSeen.Load())
	}
	close(g.release)
	e.eventually(10*time.Second, "all delivered", func() bool { return rc.Count() == 12 })
	if g.maxSeen.Load() != 3 {
		t.Fatalf("%d in flight to one endpoint, limit 3", g.maxSeen.Load())
	}
	e.eventually(5*time.Second, "recorded", func() bool { return e.allDelivered(sub.ID) })
}

func TestHangingEndpointDoesNotDelayAnother(t *testing.T) {
	e := newEnv(t)
	g := newGate()
	t.Cleanup(func() { close(g.release) })
	hanging := authtest.NewReceiver(t, g.hold)
	fine := authtest.NewReceiver(t, nil)
	e.subscribe(tracker, hanging.URL, authapi.EventUserUpdated)
	e.subscribe(tracker, fine.URL, authapi.EventUserUpdated)
	cfg := fast()
	// Both endpoints are one app's: its share of the workers must exceed
	// the hanging endpoint's limit (TestOneAppCannotHoldEveryWorker proves
	// the share).
	cfg.Timeout, cfg.Lease, cfg.AppConcurrency = 5*time.Second, 10*time.Second, 8
	e.run(cfg)
	start := time.Now()
	for i := range 10 {
		e.publish(authtest.Event(authapi.EventUserUpdated, fmt.Sprintf("user:%d", i), `{}`))
	}
	e.eventually(3*time.Second, "the other endpoint's 10 deliveries", func() bool { return fine.Count() == 10 })
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s", took)
	}
	e.eventually(2*time.Second, "the slow endpoint's 4 slots taken", func() bool { return g.inFlight.Load() == 4 })
	if n := g.maxSeen.Load(); n != 4 {
		t.Fatalf("%d requests hung at the slow endpoint, want its limit 4", n)
	}
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

func TestTwoDispatchersDeliverEachOnce(t *testing.T) {
	e := newEnv(t)
	rc := authtest.NewReceiver(t, func(_ http.ResponseWriter, _ *http.Request, _ int) { time.Sleep(5 * time.Millisecond) })
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated, authapi.EventVolunteerUpdated)
	cfg := fast()
	cfg.EndpointConcurrency, cfg.Workers = 8, 8
	e.run(cfg)
	e.run(cfg)
	var batch []authapi.Event
	for i := range 60 {
		batch = append(batch, authtest.Event(authapi.EventUserUpdated, fmt.Sprintf("user:%d", i%20), `{}`))
	}
	e.publish(batch...)
	e.eventually(15*time.Second, "60 receipts", func() bool { return rc.Count() >= 60 })
	time.Sleep(100 * time.Millisecond) // a duplicate would arrive now
	seen := map[string]int{}
	for _, r := range rc.Receipts() {
		seen[r.ID]++
	}
	if len(seen) != 60 || rc.Count() != 60 {
		t.Fatalf("%d receipts of %d deliveries", rc.Count(), len(seen))
	}
	for _, d := range e.deliveries(sub.ID) {
		if seen[d.ID] != 1 {
			t.Fatalf("delivery %s received %d times", d.ID, seen[d.ID])
		}
	}
}

func TestCancelledDispatcherLeavesItsLease(t *testing.T) {
	e := newEnv(t)
	rc := authtest.NewReceiver(t, func(_ http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			<-r.Context().Done() // the first attempt hangs until the dispatcher goes
		}
	})
	sub := e.subscribe(tracker, rc.URL, authapi.EventUserUpdated)
	cfg := fast()
	cfg.Timeout, cfg.Lease = time.Second, 1500*time.Millisecond
	stop := e.run(cfg)
	e.publish(authtest.Event(authapi.EventUserUpdated, "user:1", `{}`))
	e.eventually(5*time.Second, "the first attempt", func() bool { return rc.Count() == 1 })
	stop() // mid-delivery, as a crash would

	var leasedFor time.Duration
	var state string
	var attempts int
	if err := e.pool.QueryRow(context.Background(), `SELECT state, attempts, coalesce(leased_until - now(), '0') FROM webhook_deliveries`).
		Scan(&state, &attempts, &leasedFor); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || attempts != 0 || leasedFor <= 0 {
		t.Fatalf("state %s, %d attempts, lease left %s: the lease must stay", state, attempts, leasedFor)
	}
	e.run(cfg)
	e.eventually(5*time.Second, "delivered by the other dispatcher", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDelivered })
	got := rc.Receipts()
	if len(got) != 2 || got[1].ID != got[0].ID {
		t.Fatalf("%d receipts", len(got))
	}
	if gap := got[1].At.Sub(got[0].At); gap < cfg.Lease-100*time.Millisecond {
		t.Fatalf("sent again after %s, before the lease of %s expired", gap, cfg.Lease)
	}
}

func TestOrderPerResource(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var order []string // "resource/n" of each 2xx, in answer order
	var failedFirst atomic.Bool
	rc := authtest.NewReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Data struct {
				R string `json:"r"`
				N int    `json:"n"`
			} `json:"data"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		if body.Data.R == "a" && body.Data.N == 1 && failedFirst.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusBadGateway) // the head of a's line fails once
			return
		}
		mu.Lock()
		order = append(order, fmt.Sprintf("%s/%d", body.Data.R, body.Data.N))
		mu.Unlock()
	})
	e.subscribe(tracker, rc.URL, authapi.EventVolunteerUpdated)
	cfg := fast()
	cfg.RetryBase, cfg.RetryMax = 50*time.Millisecond, 100*time.Millisecond
	e.run(cfg)
	var batch []authapi.Event
	for n := 1; n <= 5; n++ {
		for _, r := range []string{"a", "b"} {
			batch = append(batch, authtest.Event(authapi.EventVolunteerUpdated, "volunteer:"+r, fmt.Sprintf(`{"r":%q,"n":%d}`, r, n)))
		}
	}
	e.publish(batch...)
	e.eventually(10*time.Second, "10 deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 10 })
	for _, r := range []string{"a", "b"} {
		want := 1
		for _, o := range order {
			if strings.HasPrefix(o, r+"/") {
				if o != fmt.Sprintf("%s/%d", r, want) {
					t.Fatalf("resource %s delivered out of order: %v", r, order)
				}
				want++
			}
		}
	}
}

func TestScopeLostBeforeDelivery(t *testing.T) {
	e := newEnv(t)
	rc := authtest.NewReceiver(t, nil)
	sub := e.subscribe(reader, rc.URL, authapi.EventRegistrationUpdated)
	e.publish(authtest.Event(authapi.EventRegistrationUpdated, "registration:1", `{}`))
	if _, err := e.pool.Exec(context.Background(), `UPDATE clients SET scopes = '{}' WHERE id = $1`, reader); err != nil {
		t.Fatal(err)
	}
	e.run(fast())
	e.eventually(5*time.Second, "dead", func() bool { return e.deliveries(sub.ID)[0].State == webhook.DeliveryDead })
	if d := e.deliveries(sub.ID)[0]; d.LastError != "the app no longer holds the scope registration:read" || rc.Count() != 0 {
		t.Fatalf("%+v, %d receipts", d, rc.Count())
	}
}
