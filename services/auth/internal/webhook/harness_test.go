package webhook_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Apps of the fixture (authtest.Clients): 501 holds every service scope,
// 504 registration:read only.
const (
	tracker int64 = 501
	reader  int64 = 504
	issuer        = "http://issuer.test"
)

// loopback is the allowed network of the tests' receivers.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// env is auth as serve runs it (authtest.Start), without its own
// dispatcher: each test runs the dispatchers it needs (run).
type env struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *webhookdb.Store
	keys  *signing.Manager
	hooks *webhook.Service
	// apps is the client business, as the CLI wires it.
	apps *client.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"WEBHOOK_DELIVERY": "false", "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32"}})
	return &env{t: t, pool: s.Pool, store: webhookdb.New(s.Pool), keys: s.App.Keys, hooks: s.App.Webhooks, apps: s.Clients}
}

// fast is a dispatcher configuration for tests: short timeouts, leases and
// retries.
func fast() webhook.DispatcherConfig {
	return webhook.DispatcherConfig{Workers: 16, EndpointConcurrency: 4, Timeout: 500 * time.Millisecond, Lease: 2 * time.Second,
		PollInterval: 20 * time.Millisecond, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		RetryFor: time.Hour, DisableAfter: time.Hour, Retention: time.Hour, DeadRetention: time.Hour,
		Issuer: issuer, Policy: webhook.NewPolicy(loopback)}
}

// run starts a dispatcher with cfg until the test ends; stop cancels it
// and waits for it.
func (e *env) run(cfg webhook.DispatcherConfig) (stop func()) {
	d := webhook.NewDispatcher(e.store, e.keys, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

func (e *env) subscribe(clientID int64, url string, events ...string) webhook.Subscription {
	e.t.Helper()
	s, err := e.hooks.Create(context.Background(), clientID, webhook.NewSubscription{URL: url, Events: events})
	if err != nil {
		e.t.Fatalf("subscribing %d to %v at %s: %v", clientID, events, url, err)
	}
	return s
}

func (e *env) publish(events ...authapi.Event) int {
	e.t.Helper()
	n, err := e.hooks.Ingest(context.Background(), events)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) deliveries(subID string) []webhook.Delivery {
	e.t.Helper()
	ds, _, err := e.hooks.Deliveries(context.Background(), webhook.Operator, subID, "", 0, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

// allDelivered says whether every delivery of subscription subID was delivered.
func (e *env) allDelivered(subID string) bool {
	for _, d := range e.deliveries(subID) {
		if d.State != webhook.DeliveryDelivered {
			return false
		}
	}
	return true
}

func (e *env) subscription(id string) webhook.Subscription {
	e.t.Helper()
	s, err := e.hooks.Get(context.Background(), webhook.Operator, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// eventually polls cond until it holds (at most timeout).
func (e *env) eventually(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	authtest.Eventually(e.t, timeout, what, cond)
}
