// Package outboxtest helps the producing services test their events: the rows waiting in a database's outbox, and a stand-in for auth that collects what a relay publishes.
package outboxtest

import (
	"context"
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
