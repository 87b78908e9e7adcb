package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/authapi"
)

// Bounds of an event's fields.
const (
	maxResourceLength = 200
	maxSourceLength   = 100
)

// Ingest stores a batch of committed events (in commit order) and fans
// each new one out to the subscriptions that want it. It returns how many
// events were new. A batch with one bad event stores nothing. Events
// addressed to auth itself (authapi.InternalEvents) are skipped: the
// intake acts on them before.
func (s *Service) Ingest(ctx context.Context, batch []authapi.Event) (int, error) {
	events, err := parseBatch(batch)
	if err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, nil
	}
	types, err := s.store.Ingest(ctx, events, authapi.EventScopes)
	if err != nil {
		return 0, err
	}
	for _, t := range types {
		s.metrics.eventReceived(t)
	}
	return len(types), nil
}

// CheckBatch returns the *InvalidError Ingest would refuse batch with, or
// nil: the intake checks a batch before it acts on its internal events.
func CheckBatch(batch []authapi.Event) error {
	_, err := parseBatch(batch)
	return err
}

// parseBatch checks a batch and builds its events, the internal ones left out.
func parseBatch(batch []authapi.Event) ([]Event, error) {
	if len(batch) > MaxBatch {
		return nil, &InvalidError{Message: fmt.Sprintf("A batch holds at most %d events.", MaxBatch),
			Fields: map[string]string{"events": fmt.Sprintf("must hold at most %d events", MaxBatch)}}
	}
	events := make([]Event, 0, len(batch))
	fields := map[string]string{}
	for i, in := range batch {
		if authapi.InternalEvents[in.Type] {
			continue
		}
		ev, field, problem := toEvent(in)
		if problem != "" {
			fields[fmt.Sprintf("events[%d].%s", i, field)] = problem
			continue
		}
		events = append(events, ev)
	}
	if err := invalid("The event batch is not valid; nothing was stored.", fields); err != nil {
		return nil, err
	}
	return events, nil
}

// toEvent checks a received event and builds its delivery body; on a
// problem it names the field.
func toEvent(in authapi.Event) (ev Event, field, problem string) {
	id, ok := ParseID(in.ID)
	switch {
	case !ok:
		return ev, "id", "must be a UUID"
	case authapi.EventScopes[in.Type] == "":
		return ev, "type", fmt.Sprintf("%q is not an event type", in.Type)
	case in.Source == "" || len(in.Source) > maxSourceLength:
		return ev, "source", fmt.Sprintf("must be 1 to %d bytes", maxSourceLength)
	case in.Resource == "" || len(in.Resource) > maxResourceLength:
		return ev, "resource", fmt.Sprintf("must be 1 to %d bytes", maxResourceLength)
	case strings.ContainsRune(in.Source, 0): // PostgreSQL text cannot hold NUL: it would be a 500
		return ev, "source", "must not contain NUL characters"
	case strings.ContainsRune(in.Resource, 0):
		return ev, "resource", "must not contain NUL characters"
	case in.OccurredAt.IsZero():
		return ev, "occurredAt", "is required"
	case len(bytes.TrimSpace(in.Data)) == 0:
		return ev, "data", "is required"
	case in.TraceParent != "" && !validTraceParent(in.TraceParent):
		return ev, "traceparent", "must be a W3C traceparent"
	}
	body, err := deliveryBody(in.Type, in.Data)
	if err != nil {
		return ev, "data", "must be JSON"
	}
	return Event{ID: id, Type: in.Type, Source: in.Source, Resource: in.Resource, Body: body,
		OccurredAt: in.OccurredAt, TraceParent: in.TraceParent}, "", ""
}

// deliveryBody is the request body of a delivery: {"event":TYPE,"data":DATA}.
// It is built once per event, so every attempt sends the same bytes (and the
// same body_sha256 and int). DATA is written as JavaScript's JSON.stringify
// writes it (no whitespace, strings with the shortest escapes, so no
// \u003c for "<", numbers with a fraction or exponent in ECMAScript's
// form; members in their order): a receiver written for the real API that
// hashes JSON.stringify of the parsed data for the int claim gets the
// bytes that were hashed (decision 0098). What encoding/json accepted
// before is still accepted.
func deliveryBody(eventType string, data json.RawMessage) ([]byte, error) {
	t, err := json.Marshal(eventType)
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(data))
	if err := v.Format(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true),
		jsontext.CanonicalizeRawFloats(true)); err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(t)+len(v)+20)
	b = append(b, `{"event":`...)
	b = append(b, t...)
	b = append(b, `,"data":`...)
	b = append(b, v...)
	return append(b, '}'), nil
}

// spanContextOf parses a W3C traceparent (invalid: an empty context).
func spanContextOf(traceparent string) trace.SpanContext {
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

func validTraceParent(tp string) bool { return len(tp) <= 128 && spanContextOf(tp).IsValid() }
