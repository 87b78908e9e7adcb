package authapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// PathEvents is POST EventBatch → EventsAccepted: a producing service's
// outbox relay hands committed events to auth, which fans them out to the
// webhook subscriptions. Idempotent by Event.ID: a batch sent again after a
// lost answer creates no second delivery.
const PathEvents = "/internal/events"

// Event types (docs/webhooks.md, "Events and the scope each needs").
const (
	EventVolunteerSubmitted  = "volunteer-submitted"
	EventVolunteerUpdated    = "volunteer-updated"
	EventVolunteerAssigned   = "volunteer-assigned"
	EventVolunteerUnassigned = "volunteer-unassigned"
	EventVolunteerDeleted    = "volunteer-deleted"
	EventRegistrationUpdated = "registration-updated"
	EventUserUpdated         = "user-updated"
	// EventDealerUpdated carries a dealer as POST /api/v0/dealers/search
	// renders it, after an import, a status change or a deleted application.
	EventDealerUpdated = "dealer-updated"
)

// EventUserSignedOut is no webhook event: it travels the same outbox to
// auth, which signs the user out everywhere (every browser session, every
// app's authorization, every code not redeemed yet) instead of storing it.
// The users service commits one with every password change (`users
// set-password`, an import that changes or removes a password) and for
// `users sign-out`. Its data is SignOut.
const EventUserSignedOut = "user-signed-out"

// SignOut is the data of an EventUserSignedOut event.
type SignOut struct {
	UserID int64 `json:"userId"`
	// Reason is for the logs: "password-changed" or "operator".
	Reason string `json:"reason"`
}

// InternalEvents are the event types addressed to auth itself: acted upon
// when received, never stored nor delivered to webhooks.
var InternalEvents = map[string]bool{EventUserSignedOut: true}

// EventScopes maps each event type to the scope an app needs to receive it:
// the scope of the read API that renders the same object.
var EventScopes = map[string]string{
	EventVolunteerSubmitted:  "volunteer:read",
	EventVolunteerUpdated:    "volunteer:read",
	EventVolunteerAssigned:   "volunteer:read",
	EventVolunteerUnassigned: "volunteer:read",
	EventVolunteerDeleted:    "volunteer:read",
	EventRegistrationUpdated: "registration:read",
	EventUserUpdated:         "user:read",
	EventDealerUpdated:       "vendor:read",
}

// EventTypes lists the event types in a stable order.
var EventTypes = []string{
	EventVolunteerSubmitted, EventVolunteerUpdated, EventVolunteerAssigned,
	EventVolunteerUnassigned, EventVolunteerDeleted, EventRegistrationUpdated, EventUserUpdated,
	EventDealerUpdated,
}

// Event is one committed change, rendered as the read API renders it.
type Event struct {
	// ID is the event's id (a UUID made when the change was committed).
	ID string `json:"id"`
	// Type is one of EventTypes.
	Type string `json:"type"`
	// Source names the producing service ("volunteers", ...).
	Source string `json:"source"`
	// Resource names the object, e.g. "volunteer:2026:1001": events of one
	// resource are delivered in the order they were committed.
	Resource string `json:"resource"`
	// Data is the object as the read API renders it.
	Data json.RawMessage `json:"data"`
	// OccurredAt is when the change was committed (its outbox row's time).
	OccurredAt time.Time `json:"occurredAt"`
	// TraceParent is the W3C trace context of the change's request or
	// command, so each delivery's span links back to it.
	TraceParent string `json:"traceparent,omitempty"`
}

// EventBatch is the body of POST PathEvents, in commit order.
type EventBatch struct {
	Events []Event `json:"events"`
}

// EventsAccepted answers POST PathEvents: how many events were new (the
// rest had been received before).
type EventsAccepted struct {
	Accepted int `json:"accepted"`
}

// PublishEvents hands events to auth in order; on a nil error every one of
// them is stored (new or known before).
func (c *Client) PublishEvents(ctx context.Context, events []Event) (int, error) {
	var resp EventsAccepted
	if err := c.c.Do(ctx, http.MethodPost, PathEvents, EventBatch{Events: events}, &resp); err != nil {
		return 0, fmt.Errorf("publishing %d events to auth: %w", len(events), err)
	}
	return resp.Accepted, nil
}
