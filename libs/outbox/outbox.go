package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// channel is the NOTIFY channel Add signals and the relay listens on.
const channel = "outbox"

// Event is one change to write with Add.
type Event struct {
	// Type is one of authapi.EventTypes.
	Type string
	// Resource names the object ("volunteer:<conventionId>:<userId>",
	// "registration:<conventionId>:<userId>", "user:<id>"; see
	// ConventionResource).
	Resource string
	// Payload is a JSON-marshalable snapshot of the object as committed,
	// in the form the service's Render decodes.
	Payload any
}

// ConventionResource names a record of one convention in its events,
// "kind:conventionId:id": a volunteer record or a registration by its user's
// id, a dealer (with its applications of the convention) by its own.
func ConventionResource(kind, conventionID string, id int64) string {
	return kind + ":" + conventionID + ":" + strconv.FormatInt(id, 10)
}

// copyFrom is the number of events from which Add uses COPY: below it one
// INSERT (one round trip) is cheaper than COPY's two or three.
const copyFrom = 64

const insertSQL = `WITH ins AS (
		INSERT INTO outbox (type, resource, payload, traceparent)
		SELECT t, r, p::jsonb, $4 FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS x(t, r, p, n)
		ORDER BY n
		RETURNING 1)
	SELECT pg_notify('` + channel + `', '') FROM (SELECT count(*) FROM ins) c`

// Add writes events into the outbox in tx, in the order given, and
// notifies the relay (at commit). Nothing is written when a payload does
// not marshal.
func Add(ctx context.Context, tx pgx.Tx, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	var traceparent *string
	if tp := traceParent(ctx); tp != "" {
		traceparent = &tp
	}
	payloads := make([][]byte, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.Payload)
		if err != nil {
			return fmt.Errorf("outbox: encoding the payload of a %s event of %s: %w", e.Type, e.Resource, err)
		}
		payloads[i] = b
	}
	if len(events) < copyFrom {
		types, resources, texts := make([]string, len(events)), make([]string, len(events)), make([]string, len(events))
		for i, e := range events {
			types[i], resources[i], texts[i] = e.Type, e.Resource, string(payloads[i])
		}
		if _, err := tx.Exec(ctx, insertSQL, types, resources, texts, traceparent); err != nil {
			return fmt.Errorf("outbox: writing %d events: %w", len(events), err)
		}
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"outbox"}, []string{"type", "resource", "payload", "traceparent"},
		pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
			return []any{events[i].Type, events[i].Resource, payloads[i], traceparent}, nil
		}))
	if err != nil {
		return fmt.Errorf("outbox: copying %d events: %w", len(events), err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify('`+channel+`', '')`); err != nil {
		return fmt.Errorf("outbox: notifying the relay: %w", err)
	}
	return nil
}

// traceParent returns the W3C traceparent of the span in ctx as the global
// propagator writes it, or "" when there is none.
func traceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	return carrier.Get("traceparent")
}
