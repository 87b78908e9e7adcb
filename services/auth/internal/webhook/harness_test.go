package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/pgdb"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/signing/keydb"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
	"github.com/eventreg/eventreg/services/auth/migrations"
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

// env is a migrated database with the fixture's apps, a signing key and
// the webhook business, as `auth serve` wires them.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	store  *webhookdb.Store
	keys   *signing.Manager
	hooks  *webhook.Service
	policy *webhook.Policy
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration: needs PostgreSQL")
	}
	dsn := testkit.NewDatabase(t)
	if err := migrations.Set().Up(dsn); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	apps := client.NewService(clientdb.New(pool), clientsecret.NewHasher(bytes.Repeat([]byte{'k'}, 32)), 0)
	if _, err := apps.Import(ctx, authtest.Clients()); err != nil {
		t.Fatal(err)
	}
	keys := signing.NewManager(keydb.New(pool), bytes.Repeat([]byte{7}, 32), signing.Config{RotationPeriod: 24 * time.Hour,
		ActivationDelay: 10 * time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
	if err := keys.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := keys.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	store := webhookdb.New(pool)
	policy := webhook.NewPolicy(loopback)
	hooks := webhook.NewService(store, apps, policy, nil)
	// The fixture allows its service apps private targets: the receivers
	// are on 127.0.0.1.
	if _, err := hooks.ImportPrivateTargets(ctx, authtest.Clients()); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, pool: pool, store: store, keys: keys, policy: policy, hooks: hooks}
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
	err := testkit.Poll(context.Background(), timeout, func(context.Context) error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		e.t.Fatalf("%s: not within %s", what, timeout)
	}
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}

func event(typ, resource, data string) authapi.Event {
	return authapi.Event{ID: uuid.NewString(), Type: typ, Source: "test", Resource: resource,
		Data: json.RawMessage(data), OccurredAt: time.Now()}
}

// receipt is one request a receiver got.
type receipt struct {
	id, event string
	header    http.Header
	body      []byte
	at        time.Time
}

// receiver is a webhook endpoint on 127.0.0.1 that records what it gets;
// answer decides each answer (nil: 204).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []receipt
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, receipt{id: r.Header.Get(webhook.HeaderID), event: r.Header.Get(webhook.HeaderEvent),
			header: r.Header.Clone(), body: body, at: time.Now()})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.answer(w, r, n)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) receipts() []receipt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receipt(nil), rc.got...)
}

func (rc *receiver) count() int { return len(rc.receipts()) }

// mustBody reads a request's body in a receiver's answer.
func mustBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}
