// Package outboxtest helps the producing services test their events: the rows waiting in a database's outbox, checked against the store and the read API, and a stand-in for auth that collects what a relay publishes.
package outboxtest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// Rows returns the events waiting in the outbox, in id order.
func Rows(t testing.TB, pool *pgxpool.Pool) []outbox.Row {
	t.Helper()
	q, err := pool.Query(context.Background(), `SELECT id, event_id::text, type, resource, payload, coalesce(traceparent, ''), created_at
		FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pgx.CollectRows(q, func(row pgx.CollectableRow) (outbox.Row, error) {
		var r outbox.Row
		var payload []byte
		err := row.Scan(&r.ID, &r.EventID, &r.Type, &r.Resource, &payload, &r.TraceParent, &r.CreatedAt)
		r.Payload = payload
		return r, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Clear deletes every waiting event, so that a test sees only what follows.
func Clear(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
}

// Types lists the types and resources of rows as "type resource".
func Types(rows []outbox.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Type + " " + r.Resource
	}
	return out
}

// Expect checks that the events waiting in pool are want ("type resource",
// in id order), renders them with render and hands each row and its
// rendering to check (which compares them with the store and the read API);
// then it clears the outbox, so that the next check sees only what follows.
func Expect(t testing.TB, pool *pgxpool.Pool, render outbox.RenderFunc, check func(r outbox.Row, data json.RawMessage), want ...string) {
	t.Helper()
	rows := Rows(t, pool)
	if got := Types(rows); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	data, err := render(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		check(r, data[i])
	}
	Clear(t, pool)
}

// SamePayload fails t unless the payload of r, decoded into a T, encodes as
// stored does: the event carries the object as the store reads it.
func SamePayload[T any](t testing.TB, r outbox.Row, stored T) {
	t.Helper()
	var payload T
	if err := json.Unmarshal(r.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(payload)
	b, _ := json.Marshal(stored)
	if string(a) != string(b) {
		t.Fatalf("payload of %s:\n%s\nas the store reads it:\n%s", r.Resource, a, b)
	}
}

// Sink is a stand-in for auth's events endpoint: Publish stores what it gets.
type Sink struct {
	mu     sync.Mutex
	events []authapi.Event
}

// Publish is an outbox.PublishFunc.
func (s *Sink) Publish(_ context.Context, events []authapi.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
	return nil
}

// Events returns what was published so far.
func (s *Sink) Events() []authapi.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// WaitFor polls until n events were published and returns them.
func (s *Sink) WaitFor(t testing.TB, n int, within time.Duration) []authapi.Event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if got := s.Events(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events published within %v, want %d", len(s.Events()), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// StartRelay runs a relay of pool publishing to s, with render, until t ends.
func (s *Sink) StartRelay(t testing.TB, pool *pgxpool.Pool, source string, render outbox.RenderFunc) {
	t.Helper()
	r, err := outbox.NewRelay(outbox.Config{Pool: pool, Source: source, Render: render, Publish: s.Publish,
		PollInterval: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := r.Start(ctx)
	t.Cleanup(func() { cancel(); _ = wait(context.Background()) })
}
