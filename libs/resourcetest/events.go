package resourcetest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
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

// ExpectEvents checks the events waiting in pool's outbox against want
// ("type resource"), each payload against the record get reads from the
// store for the event's convention and id, and hands each rendering to
// read (which compares it with the read API); then it clears the outbox.
func ExpectEvents[S any](t *testing.T, pool *pgxpool.Pool, render outbox.RenderFunc, kind string,
	get func(ctx context.Context, convention string, id int64) (S, error),
	read func(r outbox.Row, convention string, id int64, data json.RawMessage), want ...string) {
	t.Helper()
	outboxtest.Expect(t, pool, render, func(r outbox.Row, data json.RawMessage) {
		conv, id := EventResource(t, kind, r.Resource)
		stored, err := get(context.Background(), conv, id)
		if err != nil {
			t.Fatal(err)
		}
		outboxtest.SamePayload(t, r, stored)
		read(r, conv, id, data)
	}, want...)
}
