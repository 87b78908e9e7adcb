package resourcetest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// EventResource reads the convention and id out of an event's resource
// "<kind>:<convention>:<id>", failing t when it is not one of kind.
func EventResource(t testing.TB, kind, resource string) (string, int64) {
	t.Helper()
	parts := strings.Split(resource, ":")
	if len(parts) != 3 || parts[0] != kind {
		t.Fatalf("resource %q is not %s:<convention>:<id>", resource, kind)
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		t.Fatalf("resource %q: %v", resource, err)
	}
	return parts[1], id
}

// UsersClient is a client of e's users double, as a service's event
// rendering (RenderEvents) is given one.
func (e *Env) UsersClient() *usersclient.Client {
	return usersclient.NewClient(e.Users.URL, 2*time.Second, nil)
}

// Events checks the events a resource service (volunteers, registrations,
// dealers) writes to its outbox, about records "<kind>:<convention>:<id>",
// against its store and its read API.
type Events[S any] struct {
	env    *Env
	render outbox.RenderFunc
	kind   string
	get    func(ctx context.Context, convention string, id int64) (S, error)
	read   func(t testing.TB, id int64) []byte
}

// NewEvents checks the events of e's service, rendered by render, about
// records of kind ("dealer"); get reads a record from the store, read is
// what the read API answers for a record of the current convention.
func NewEvents[S any](e *Env, render outbox.RenderFunc, kind string, get func(ctx context.Context, convention string, id int64) (S, error), read func(t testing.TB, id int64) []byte) Events[S] {
	return Events[S]{env: e, render: render, kind: kind, get: get, read: read}
}

// Expect checks the waiting events against want ("type resource"): each has
// an id and a time, its payload is the record as the store reads it, and its
// rendering (for the current convention) is byte for byte the read API's
// answer; then it clears the outbox.
func (ev Events[S]) Expect(t *testing.T, want ...string) {
	t.Helper()
	outboxtest.Expect(t, ev.env.Pool, ev.render, func(r outbox.Row, data json.RawMessage) {
		if r.EventID == "" || r.CreatedAt.IsZero() {
			t.Fatalf("row %+v", r)
		}
		conv, id := EventResource(t, ev.kind, r.Resource)
		stored, err := ev.get(context.Background(), conv, id)
		if err != nil {
			t.Fatal(err)
		}
		outboxtest.SamePayload(t, r, stored)
		if conv == ev.env.Convention {
			outboxtest.SameAsRead(t, r.Resource, data, ev.read(t, id))
		}
	}, want...)
}

// ExpectPublished runs a relay of the outbox while change makes a change,
// and checks that it published one event, of typ about the record id of the
// current convention, that carries the read API's answer for it.
func (ev Events[S]) ExpectPublished(t *testing.T, typ string, id int64, change func()) {
	t.Helper()
	resource := ev.kind + ":" + ev.env.Convention + ":" + strconv.FormatInt(id, 10)
	ExpectPublished(t, ev.env.Pool, ev.env.service, ev.render, change, typ, resource, func() []byte { return ev.read(t, id) })
}

// ExpectPublished runs a relay of pool's outbox, publishing as source what
// render renders, while change makes a change, and checks that it published
// one event, of typ about resource, that carries what read returns (the read
// API's answer) byte for byte.
func ExpectPublished(t *testing.T, pool *pgxpool.Pool, source string, render outbox.RenderFunc, change func(), typ, resource string, read func() []byte) {
	t.Helper()
	var sink outboxtest.Sink
	sink.StartRelay(t, pool, source, render)
	change()
	got := sink.WaitFor(t, 1, 10*time.Second)
	if len(got) != 1 || got[0].Type != typ || got[0].Source != source || got[0].Resource != resource {
		t.Fatalf("published %+v, want one %s about %s from %s", got, typ, resource, source)
	}
	outboxtest.SameAsRead(t, resource, got[0].Data, read())
}
