package webhook

import (
	"context"
	"time"
)

// Queue is the dispatcher's view of the store: claims, outcomes, sweeps
// and wake-ups.
type Queue interface {
	// Claim leases up to limit due deliveries for lease: pending, due, not
	// leased, their subscription active with fewer than perEndpoint
	// unexpired leases and its app with fewer than perApp across its
	// subscriptions, and no earlier pending delivery of the same
	// subscription and resource. Claims never race (one at a time).
	Claim(ctx context.Context, limit, perEndpoint, perApp int, lease time.Duration) ([]Claim, error)
	// Delivered records a 2xx and clears the subscription's failing_since.
	Delivered(ctx context.Context, c Claim, status int) error
	// Failed records a failed attempt: retried after delay, or dead once
	// retryFor has passed since the delivery's retry_from. The subscription
	// starts failing (failing_since) and is disabled once it has failed for
	// longer than disableAfter. It returns the delivery's new state.
	Failed(ctx context.Context, c Claim, f Failure) (DeliveryState, error)
	// Dead gives the delivery up at once, with reason.
	Dead(ctx context.Context, c Claim, reason string) error
	// ExpireDisabled makes dead the pending deliveries of disabled
	// subscriptions whose retry window began before before (none in
	// flight), so that a subscription left disabled keeps no growing
	// backlog. It returns how many went dead.
	ExpireDisabled(ctx context.Context, before time.Time) (int64, error)
	// Sweep deletes delivered deliveries finished before delivered, dead
	// ones finished before dead, and events left without deliveries that
	// were received before orphan. It returns how many rows went.
	Sweep(ctx context.Context, delivered, dead, orphan time.Time) (int64, error)
	// Listen calls wake on every notification of new due work until ctx
	// ends or the connection fails.
	Listen(ctx context.Context, wake func()) error
}

// Claim is a leased delivery with what sending it needs. Outcomes are
// recorded only while LeaseID still holds the delivery.
type Claim struct {
	DeliveryID     string
	LeaseID        string
	SubscriptionID string
	ClientID       int64
	URL            string
	// Format is the shape of the subscription's delivery tokens.
	Format Format
	// Subscribed is the subscription's event list now.
	Subscribed []string
	// AppScopes are the app's scopes now.
	AppScopes []string
	// PrivateTargets: an operator allows the app targets inside
	// WEBHOOK_ALLOWED_NETWORKS, now.
	PrivateTargets bool
	EventID        string
	EventType      string
	Body           []byte
	OccurredAt     time.Time
	TraceParent    string
	// Attempts made before this one.
	Attempts int
}

// Failure is a failed attempt to record.
type Failure struct {
	Status       int
	Problem      string
	Delay        time.Duration
	RetryFor     time.Duration
	DisableAfter time.Duration
}
