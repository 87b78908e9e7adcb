// Package webhook is the business of webhooks: apps' subscriptions and their rules, events received from the resource services, the target policy, the retry schedule and the dispatcher that delivers events.
package webhook

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// State is a subscription's state.
type State string

// Subscription states.
const (
	StateActive   State = "active"   // its deliveries are sent
	StateDisabled State = "disabled" // its deliveries wait (pending) until it is enabled again
)

// DisabledBy says who disabled a subscription, and so who may enable it.
type DisabledBy string

// Who disables.
const (
	ByApp      DisabledBy = "app"      // the app itself; it may enable it again
	ByFailures DisabledBy = "failures" // auth, after WEBHOOK_DISABLE_AFTER of failures; the app may enable it again once its endpoint is fixed
	ByOperator DisabledBy = "operator" // an operator; only an operator enables it again
)

// Format is the shape of a subscription's delivery tokens: which audience
// and lifetime they carry (decision 0098).
type Format string

// Formats.
const (
	// FormatEventreg: aud is the app's client id, exp 5 minutes after iat.
	FormatEventreg Format = "eventreg"
	// FormatConCat: the real API's documented shape, aud is the
	// subscription's URL, exp 120 seconds after iat.
	FormatConCat Format = "concat"
)

// DeliveryState is where a delivery stands.
type DeliveryState string

// Delivery states.
const (
	DeliveryPending   DeliveryState = "pending"   // due now or at NextAttemptAt
	DeliveryDelivered DeliveryState = "delivered" // the endpoint answered 2xx
	DeliveryDead      DeliveryState = "dead"      // given up; replay sends it again
)

// Limits of the API.
const (
	// MaxSubscriptions is the most subscriptions one app may hold.
	MaxSubscriptions = 20
	// MaxURLLength bounds a target URL.
	MaxURLLength = 2048
	// MaxDescriptionLength bounds a subscription's description.
	MaxDescriptionLength = 1000
	// MaxBatch is the most events one POST /internal/events may carry.
	MaxBatch = 1000
)

// Subscription is an app's subscription to event types at one URL.
type Subscription struct {
	ID          string
	ClientID    int64
	URL         string
	Events      []string
	Description string
	// Format is the shape of its delivery tokens.
	Format Format
	State  State
	// DisabledReason says why it is disabled ("" while active).
	DisabledReason string
	// DisabledBy says who disabled it ("" while active).
	DisabledBy DisabledBy
	// FailingSince is the first failed delivery since the last success
	// (zero while deliveries succeed).
	FailingSince time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Delivery is one event for one subscription.
type Delivery struct {
	ID             string
	SubscriptionID string
	EventID        string
	Event          string // the event's type
	Seq            int64  // the event's position: the page key
	State          DeliveryState
	Attempts       int
	LastStatus     int    // 0: no HTTP answer yet
	LastError      string // "" : none
	NextAttemptAt  time.Time
	DeliveredAt    time.Time
	CreatedAt      time.Time
}

// Event is an event as stored: Body is the exact request body of every
// delivery of it, {"event":TYPE,"data":DATA}.
type Event struct {
	ID          string
	Type        string
	Source      string
	Resource    string
	Body        []byte
	OccurredAt  time.Time
	TraceParent string
}

// Errors of the business.
var (
	ErrNotFound         = errors.New("webhook subscription not found")
	ErrDeliveryNotFound = errors.New("webhook delivery not found")
	ErrTooMany          = errors.New("the app holds the most webhook subscriptions allowed")
	ErrAppNotFound      = errors.New("no such app")
	// ErrOperatorDisabled is an app enabling a subscription an operator
	// disabled: only an operator may.
	ErrOperatorDisabled = errors.New("an operator disabled this webhook subscription; only an operator can enable it")
	// ErrLeaseLost is an outcome recorded after the delivery's lease ended
	// and another dispatcher claimed it: the outcome is dropped.
	ErrLeaseLost = errors.New("the delivery's lease was lost")
)

// InvalidError is input that breaks a rule; Fields names each bad field.
type InvalidError struct {
	Message string
	Fields  map[string]string
}

func (e *InvalidError) Error() string {
	parts := make([]string, 0, len(e.Fields))
	for f, p := range e.Fields {
		parts = append(parts, f+": "+p)
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return e.Message
	}
	return e.Message + " (" + strings.Join(parts, "; ") + ")"
}

// invalid returns an *InvalidError when fields name a problem, else nil.
func invalid(message string, fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	return &InvalidError{Message: message, Fields: fields}
}

// ScopeError is a subscription to an event whose scope the app does not hold.
type ScopeError struct {
	Scope string
	Event string
}

func (e *ScopeError) Error() string {
	return "the app is not approved for the scope " + e.Scope + ", which the event " + e.Event + " needs"
}

// Store keeps subscriptions, events and deliveries.
type Store interface {
	// CreateSubscription inserts s unless its app already holds max (ErrTooMany).
	CreateSubscription(ctx context.Context, s Subscription, max int) (Subscription, error)
	// Subscription returns one subscription (ErrNotFound).
	Subscription(ctx context.Context, id string) (Subscription, error)
	// Subscriptions returns an app's subscriptions by creation, every app's when clientID is 0.
	Subscriptions(ctx context.Context, clientID int64) ([]Subscription, error)
	// UpdateSubscription applies ch (ErrNotFound); enabling a subscription
	// an operator disabled is ErrOperatorDisabled unless ch.By is ByOperator.
	UpdateSubscription(ctx context.Context, id string, ch Change) (Subscription, error)
	// DeleteSubscription removes a subscription and its deliveries (ErrNotFound).
	DeleteSubscription(ctx context.Context, id string) error
	// Deliveries returns up to limit deliveries of a subscription with seq
	// after after, in seq order, of state (every state when "").
	Deliveries(ctx context.Context, subscriptionID string, state DeliveryState, after int64, limit int) ([]Delivery, error)
	// Replay makes a delivery of the subscription pending, due now, its
	// attempts reset (ErrDeliveryNotFound).
	Replay(ctx context.Context, subscriptionID, deliveryID string) (Delivery, error)
	// ReplayDead does Replay for every dead delivery of a subscription.
	ReplayDead(ctx context.Context, subscriptionID string) (int, error)
	// PrivateTargets reports whether an operator allows app clientID
	// targets inside the allowed networks.
	PrivateTargets(ctx context.Context, clientID int64) (bool, error)
	// SetPrivateTargets allows app clientID targets inside the allowed
	// networks, or no longer (ErrAppNotFound).
	SetPrivateTargets(ctx context.Context, clientID int64, allowed bool) error
	// PrivateApps returns the apps allowed private targets, by id.
	PrivateApps(ctx context.Context) ([]int64, error)
	// Ingest stores the events not seen before (by id) in order, and for
	// each a delivery to every subscription listing its type whose app holds
	// scopes[type], in one transaction. It returns the new events' types.
	Ingest(ctx context.Context, events []Event, scopes map[string]string) ([]string, error)
}

// Change is what an update sets; nil fields stay as they are.
type Change struct {
	URL         *string
	Events      []string // nil: unchanged
	Description *string
	Format      *Format
	State       *State
	// By is who makes the change: ByApp or ByOperator. An operator's
	// disable replaces any other; only an operator lifts it.
	By DisabledBy
	// Reason is the disabled reason when State disables the subscription
	// (set by the Service from By).
	Reason string
}

// Apps reads the apps (OAuth clients) whose scopes decide what they may
// subscribe to: *client.Service or the client store.
type Apps interface {
	Get(ctx context.Context, id int64) (client.Client, error)
}

// ParseID returns the canonical form of a subscription, delivery or event
// id (a UUID), ok false when raw is not one.
func ParseID(raw string) (string, bool) {
	if len(raw) != 36 {
		return "", false
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return "", false
	}
	return id.String(), true
}
