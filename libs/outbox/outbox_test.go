package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newPool returns a pool on a fresh database holding the outbox tables.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, pool := testkit.NewPool(t)
	if _, err := pool.Exec(context.Background(), schema(t)); err != nil {
		t.Fatal(err)
	}
	return pool
}

// schema is the SQL of the outbox migration, which each producing service's
// migration set takes as its version 2.
func schema(t *testing.T) string {
	t.Helper()
	b, err := fs.ReadFile(outbox.Migrations(), "0002_outbox.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type payload struct {
	Resource string `json:"resource"`
	Seq      int    `json:"seq"`
}

// add commits events of resource with the sequence numbers from..to-1 in one
// transaction.
func add(t *testing.T, ctx context.Context, pool *pgxpool.Pool, resource string, from, to int) {
	t.Helper()
	if err := addEvents(ctx, pool, resource, from, to); err != nil {
		t.Fatal(err)
	}
}

func addEvents(ctx context.Context, pool *pgxpool.Pool, resource string, from, to int) error {
	events := make([]outbox.Event, 0, to-from)
	for i := from; i < to; i++ {
		events = append(events, outbox.Event{Type: authapi.EventVolunteerUpdated, Resource: resource, Payload: payload{resource, i}})
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return outbox.Add(ctx, tx, events...) })
}

type stored struct {
	ID          int64
	EventID     string
	Payload     payload
	TraceParent *string
	CreatedAt   time.Time
}

func pending(t *testing.T, pool *pgxpool.Pool) []stored {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, event_id::text, payload, traceparent, created_at FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
		var s stored
		var p []byte
		if err := r.Scan(&s.ID, &s.EventID, &p, &s.TraceParent, &s.CreatedAt); err != nil {
			return s, err
		}
		return s, json.Unmarshal(p, &s.Payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sink collects what the relays publish.
type sink struct {
	mu     sync.Mutex
	events []authapi.Event
	calls  int
	fail   int // fail the next n calls
	seen   chan struct{}
}

func newSink() *sink { return &sink{seen: make(chan struct{}, 1)} }

func (s *sink) publish(_ context.Context, events []authapi.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail > 0 {
		s.fail--
		return errors.New("auth unavailable")
	}
	s.events = append(s.events, events...)
	select {
	case s.seen <- struct{}{}:
	default:
	}
	return nil
}

func (s *sink) got() []authapi.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// waitFor polls until the sink holds n events.
func (s *sink) waitFor(t *testing.T, n int, within time.Duration) []authapi.Event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := s.got()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events published within %v, want %d", len(got), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// echo renders an event as its payload wrapped in {"data": ...}.
func echo(_ context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(`{"data":` + string(r.Payload) + `}`)
	}
	return out, nil
}

func startRelay(t *testing.T, ctx context.Context, cfg outbox.Config) *outbox.Relay {
	t.Helper()
	if cfg.Source == "" {
		cfg.Source = "volunteers"
	}
	if cfg.Render == nil {
		cfg.Render = echo
	}
	r, err := outbox.NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	wait := r.Start(ctx)
	t.Cleanup(func() {
		cancel()
		if err := wait(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

func withSpan(ctx context.Context) (context.Context, string) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return trace.ContextWithSpanContext(ctx, sc), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
}

func TestAdd(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	pool := newPool(t)
	ctx := context.Background()

	t.Run("a rolled-back transaction leaves nothing", func(t *testing.T) {
		for _, n := range []int{1, 200} { // one INSERT, then COPY
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			events := make([]outbox.Event, n)
			for i := range events {
				events[i] = outbox.Event{Type: authapi.EventUserUpdated, Resource: "user:1", Payload: payload{"user:1", i}}
			}
			if err := outbox.Add(ctx, tx, events...); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := pending(t, pool); len(got) != 0 {
			t.Fatalf("%d rows after rollbacks", len(got))
		}
	})
	t.Run("committed events keep their order, get ids, times and the trace context", func(t *testing.T) {
		sctx, tp := withSpan(ctx)
		add(t, sctx, pool, "r:a", 0, 3)   // INSERT
		add(t, sctx, pool, "r:b", 0, 100) // COPY
		add(t, ctx, pool, "r:c", 0, 1)    // no span
		got := pending(t, pool)
		if len(got) != 104 {
			t.Fatalf("%d rows", len(got))
		}
		ids := map[string]bool{}
		for i, s := range got {
			want := payload{"r:b", i - 3}
			switch {
			case i < 3:
				want = payload{"r:a", i}
			case i == 103:
				want = payload{"r:c", 0}
			}
			if s.Payload != want {
				t.Fatalf("row %d is %+v, want %+v", i, s.Payload, want)
			}
			if i < 103 && (s.TraceParent == nil || *s.TraceParent != tp) {
				t.Fatalf("row %d traceparent %v", i, s.TraceParent)
			}
			if i == 103 && s.TraceParent != nil {
				t.Fatalf("a change outside a trace got traceparent %q", *s.TraceParent)
			}
			if ids[s.EventID] || s.CreatedAt.IsZero() || (i > 0 && s.CreatedAt.Before(got[i-1].CreatedAt)) {
				t.Fatalf("row %d: event id %s (dup %v), created %v", i, s.EventID, ids[s.EventID], s.CreatedAt)
			}
			ids[s.EventID] = true
		}
	})
	t.Run("a payload that does not marshal writes nothing", func(t *testing.T) {
		before := len(pending(t, pool))
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return outbox.Add(ctx, tx, outbox.Event{Type: "x", Resource: "r", Payload: payload{}}, outbox.Event{Type: "x", Resource: "r", Payload: func() {}})
		})
		if err == nil || len(pending(t, pool)) != before {
			t.Fatalf("err %v", err)
		}
	})
}

func TestRelay(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	ctx := context.Background()

	t.Run("committed events are published once, in order, as stored", func(t *testing.T) {
		pool := newPool(t)
		sctx, tp := withSpan(ctx)
		add(t, sctx, pool, "r:a", 0, 700)
		add(t, ctx, pool, "r:b", 0, 5)
		want := pending(t, pool)
		s := newSink()
		reg := prometheus.NewRegistry()
		startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, PollInterval: 50 * time.Millisecond, Metrics: reg})
		got := s.waitFor(t, len(want), 10*time.Second)
		time.Sleep(200 * time.Millisecond) // a few more polls: nothing is published twice
		if got = s.got(); len(got) != len(want) {
			t.Fatalf("%d events published, want %d", len(got), len(want))
		}
		for i, e := range got {
			w := want[i]
			var data struct{ Data payload }
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatal(err)
			}
			wantTP := ""
			if w.TraceParent != nil {
				wantTP = *w.TraceParent
			}
			if e.ID != w.EventID || e.Type != authapi.EventVolunteerUpdated || e.Source != "volunteers" || e.Resource != w.Payload.Resource ||
				data.Data != w.Payload || !e.OccurredAt.Equal(w.CreatedAt) || e.TraceParent != wantTP {
				t.Fatalf("event %d is %+v, want %+v", i, e, w)
			}
			if i < 700 && e.TraceParent != tp {
				t.Fatalf("event %d traceparent %q", i, e.TraceParent)
			}
		}
		if len(pending(t, pool)) != 0 {
			t.Fatal("published events stay in the outbox")
		}
		if n := metric(t, reg, "eventreg_outbox_relayed_total"); n != 705 {
			t.Fatalf("relayed_total %v", n)
		}
		if s.calls != 2 { // 500, then 205
			t.Fatalf("%d publish calls", s.calls)
		}
	})

	t.Run("a failing publish keeps the events, and the next attempt publishes the same ids", func(t *testing.T) {
		pool := newPool(t)
		add(t, ctx, pool, "r:a", 0, 3)
		want := pending(t, pool)
		s := newSink()
		s.fail = 2
		reg := prometheus.NewRegistry()
		startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, PollInterval: 20 * time.Millisecond,
			MaxBackoff: 100 * time.Millisecond, Metrics: reg})
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.mu.Lock()
			calls := s.calls
			s.mu.Unlock()
			if calls >= 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the relay never published")
			}
			time.Sleep(5 * time.Millisecond)
		}
		got := s.waitFor(t, 3, 5*time.Second)
		for i, e := range got {
			if e.ID != want[i].EventID {
				t.Fatalf("event %d has id %s, stored %s", i, e.ID, want[i].EventID)
			}
		}
		if s.calls != 3 {
			t.Fatalf("%d calls, want 2 failed and 1 good", s.calls)
		}
		if n := metric(t, reg, "eventreg_outbox_relay_errors_total"); n != 2 {
			t.Fatalf("relay_errors_total %v", n)
		}
	})

	t.Run("while publishing fails the rows stay and the oldest age grows", func(t *testing.T) {
		pool := newPool(t)
		add(t, ctx, pool, "r:a", 0, 2)
		s := newSink()
		s.fail = 1 << 30
		reg := prometheus.NewRegistry()
		startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, MaxBackoff: 50 * time.Millisecond, Metrics: reg})
		deadline := time.Now().Add(5 * time.Second)
		for metric(t, reg, "eventreg_outbox_relay_errors_total") < 3 {
			if time.Now().After(deadline) {
				t.Fatal("fewer than 3 attempts")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(pending(t, pool)) != 2 {
			t.Fatal("a failed publish lost events")
		}
		if age := metric(t, reg, "eventreg_outbox_oldest_seconds"); age <= 0 {
			t.Fatalf("oldest_seconds %v", age)
		}
	})

	t.Run("two relays on one database publish every event once, in order per resource", func(t *testing.T) {
		pool := newPool(t)
		s := newSink()
		for range 2 {
			startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, PollInterval: 10 * time.Millisecond, BatchSize: 7})
		}
		const resources, per = 4, 60
		testkit.AtOnce(resources, func(r int) {
			res := fmt.Sprintf("r:%d", r)
			for i := 0; i < per; i += 3 {
				if err := addEvents(ctx, pool, res, i, i+3); err != nil {
					t.Error(err)
					return
				}
			}
		})
		got := s.waitFor(t, resources*per, 20*time.Second)
		time.Sleep(100 * time.Millisecond)
		got = s.got()
		if len(got) != resources*per {
			t.Fatalf("%d events published, want %d", len(got), resources*per)
		}
		ids := map[string]bool{}
		next := map[string]int{}
		for _, e := range got {
			if ids[e.ID] {
				t.Fatalf("event %s published twice", e.ID)
			}
			ids[e.ID] = true
			var d struct{ Data payload }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Data.Seq != next[e.Resource] {
				t.Fatalf("%s: event %d published after %d", e.Resource, d.Data.Seq, next[e.Resource]-1)
			}
			next[e.Resource]++
		}
	})

	t.Run("a notification wakes the relay well before the poll", func(t *testing.T) {
		pool := newPool(t)
		s := newSink()
		startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, PollInterval: time.Minute})
		listener := func(not int) int {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				var pid int
				err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN outbox' AND pid <> $1`, not).Scan(&pid)
				if err == nil {
					return pid
				}
				if !errors.Is(err, pgx.ErrNoRows) {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatal("the relay does not listen")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		quick := func(seq int) {
			t.Helper()
			time.Sleep(100 * time.Millisecond) // let the wake-up that follows LISTEN pass
			start := time.Now()
			add(t, ctx, pool, "r:a", seq, seq+1)
			s.waitFor(t, seq+1, 5*time.Second)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("published %v after the commit", d)
			}
		}
		pid := listener(0)
		for i := range 3 {
			quick(i)
		}
		// The listening connection is lost: the relay listens again.
		if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		listener(pid)
		quick(3)
	})

	t.Run("an event that cannot be rendered is set aside and the others are published", func(t *testing.T) {
		pool := newPool(t)
		add(t, ctx, pool, "r:a", 0, 5)
		s := newSink()
		reg := prometheus.NewRegistry()
		render := func(ctx context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
			out, _ := echo(ctx, rows)
			bad := &outbox.BadRows{}
			for i, r := range rows {
				var p payload
				_ = json.Unmarshal(r.Payload, &p)
				if p.Seq == 2 {
					bad.Add(i, errors.New("seq 2 does not decode"))
				}
			}
			return out, bad.Err()
		}
		startRelay(t, ctx, outbox.Config{Pool: pool, Publish: s.publish, Render: render, PollInterval: 20 * time.Millisecond, Metrics: reg})
		got := s.waitFor(t, 4, 5*time.Second)
		for i, e := range got {
			var d struct{ Data payload }
			_ = json.Unmarshal(e.Data, &d)
			if want := []int{0, 1, 3, 4}[i]; d.Data.Seq != want {
				t.Fatalf("event %d is seq %d, want %d", i, d.Data.Seq, want)
			}
		}
		var n int
		var reason string
		deadline := time.Now().Add(5 * time.Second)
		for len(pending(t, pool)) != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := pool.QueryRow(ctx, `SELECT count(*), min(error) FROM outbox_dead WHERE payload->>'seq' = '2'`).Scan(&n, &reason); err != nil || n != 1 || reason != "seq 2 does not decode" {
			t.Fatalf("outbox_dead: %d %q %v", n, reason, err)
		}
		if left := pending(t, pool); len(left) != 0 {
			t.Fatalf("%d rows left", len(left))
		}
		if n := metric(t, reg, "eventreg_outbox_dead_total"); n != 1 {
			t.Fatalf("dead_total %v", n)
		}
	})
}

// metric sums the samples of a counter or gauge family in reg (0 when absent).
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
