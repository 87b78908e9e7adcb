package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/fixture"

	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// Operator is the owner argument of an operator's call (the CLI): it may
// act on every app's subscriptions.
const Operator int64 = 0

// Reasons a subscription is disabled other than failing.
const (
	ReasonApp      = "disabled by the app"
	ReasonOperator = "disabled by an operator"
)

// Service is the webhook business the API and the CLI call.
type Service struct {
	store   Store
	apps    Apps
	policy  *Policy
	metrics *Metrics
}

// NewService returns the business over store; apps tells each app's scopes,
// policy which targets are allowed; metrics may be nil.
func NewService(store Store, apps Apps, policy *Policy, metrics *Metrics) *Service {
	return &Service{store: store, apps: apps, policy: policy, metrics: metrics}
}

// NewSubscription is what an app (or an operator) subscribes.
type NewSubscription struct {
	URL         string
	Events      []string
	Description string
	// Format is the shape of its delivery tokens ("": FormatEventreg).
	Format Format
}

// Create subscribes app clientID to n's events at n's URL.
func (s *Service) Create(ctx context.Context, clientID int64, n NewSubscription) (Subscription, error) {
	fields := map[string]string{}
	if err := s.checkURL(ctx, clientID, n.URL, fields); err != nil {
		return Subscription{}, err
	}
	checkEvents(n.Events, fields)
	checkDescription(n.Description, fields)
	if n.Format == "" {
		n.Format = FormatEventreg
	}
	checkFormat(n.Format, fields)
	if err := invalid("The webhook subscription is not valid.", fields); err != nil {
		return Subscription{}, err
	}
	if err := s.checkScopes(ctx, clientID, n.Events); err != nil {
		return Subscription{}, err
	}
	sub := Subscription{ID: uuid.NewString(), ClientID: clientID, URL: n.URL, Events: slices.Clone(n.Events),
		Description: n.Description, Format: n.Format, State: StateActive}
	return s.store.CreateSubscription(ctx, sub, MaxSubscriptions)
}

// List returns the subscriptions of app owner (every app's for Operator).
func (s *Service) List(ctx context.Context, owner int64) ([]Subscription, error) {
	return s.store.Subscriptions(ctx, owner)
}

// Get returns subscription id when owner may see it; another app's is
// ErrNotFound, as an unknown one.
func (s *Service) Get(ctx context.Context, owner int64, id string) (Subscription, error) {
	canonical, ok := ParseID(id)
	if !ok {
		return Subscription{}, ErrNotFound
	}
	sub, err := s.store.Subscription(ctx, canonical)
	if err != nil {
		return Subscription{}, err
	}
	if owner != Operator && sub.ClientID != owner {
		return Subscription{}, ErrNotFound
	}
	return sub, nil
}

// Update applies ch to subscription id of owner. A new URL is checked
// against the target policy, new events against the app's scopes. Who
// changes it is owner: an operator's disable sticks until an operator
// enables the subscription (an app gets ErrOperatorDisabled).
func (s *Service) Update(ctx context.Context, owner int64, id string, ch Change) (Subscription, error) {
	sub, err := s.Get(ctx, owner, id)
	if err != nil {
		return Subscription{}, err
	}
	fields := map[string]string{}
	if ch.URL != nil {
		if err := s.checkURL(ctx, sub.ClientID, *ch.URL, fields); err != nil {
			return Subscription{}, err
		}
	}
	if ch.Events != nil {
		checkEvents(ch.Events, fields)
	}
	if ch.Description != nil {
		checkDescription(*ch.Description, fields)
	}
	if ch.Format != nil {
		checkFormat(*ch.Format, fields)
	}
	if ch.State != nil && *ch.State != StateActive && *ch.State != StateDisabled {
		fields["state"] = `must be "active" or "disabled"`
	}
	if err := invalid("The change is not valid.", fields); err != nil {
		return Subscription{}, err
	}
	if ch.Events != nil {
		if err := s.checkScopes(ctx, sub.ClientID, ch.Events); err != nil {
			return Subscription{}, err
		}
	}
	ch.By, ch.Reason = ByApp, ReasonApp
	if owner == Operator {
		ch.By, ch.Reason = ByOperator, ReasonOperator
	}
	return s.store.UpdateSubscription(ctx, sub.ID, ch)
}

// Delete removes subscription id of owner with its deliveries.
func (s *Service) Delete(ctx context.Context, owner int64, id string) error {
	sub, err := s.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	return s.store.DeleteSubscription(ctx, sub.ID)
}

// Deliveries returns up to limit deliveries of subscription id (of owner)
// after seq after, of state ("" for all), and whether more follow.
func (s *Service) Deliveries(ctx context.Context, owner int64, id string, state DeliveryState, after int64, limit int) ([]Delivery, bool, error) {
	switch state {
	case "", DeliveryPending, DeliveryDelivered, DeliveryDead:
	default:
		return nil, false, &InvalidError{Message: "state must be pending, delivered or dead.",
			Fields: map[string]string{"state": "must be pending, delivered or dead"}}
	}
	sub, err := s.Get(ctx, owner, id)
	if err != nil {
		return nil, false, err
	}
	ds, err := s.store.Deliveries(ctx, sub.ID, state, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(ds) > limit {
		return ds[:limit], true, nil
	}
	return ds, false, nil
}

// Replay sends delivery deliveryID of subscription id (of owner) again:
// pending, due now, attempts reset. A pending one becomes due now.
func (s *Service) Replay(ctx context.Context, owner int64, id, deliveryID string) (Delivery, error) {
	sub, err := s.Get(ctx, owner, id)
	if err != nil {
		return Delivery{}, err
	}
	did, ok := ParseID(deliveryID)
	if !ok {
		return Delivery{}, ErrDeliveryNotFound
	}
	return s.store.Replay(ctx, sub.ID, did)
}

// ReplayDead replays every dead delivery of subscription id (of owner).
func (s *Service) ReplayDead(ctx context.Context, owner int64, id string) (int, error) {
	sub, err := s.Get(ctx, owner, id)
	if err != nil {
		return 0, err
	}
	return s.store.ReplayDead(ctx, sub.ID)
}

// checkURL records in fields what is wrong with a target URL of app
// clientID: inside the allowed networks only if an operator allowed the app
// private targets.
func (s *Service) checkURL(ctx context.Context, clientID int64, raw string, fields map[string]string) error {
	private, err := s.store.PrivateTargets(ctx, clientID)
	if err != nil {
		return err
	}
	if problem := s.policy.CheckURL(ctx, raw, private); problem != "" {
		fields["url"] = problem
	}
	return nil
}

// AllowPrivate lets app clientID's subscriptions reach targets inside
// WEBHOOK_ALLOWED_NETWORKS (allowed), or no longer: its subscriptions to
// such targets are then refused at their next connection. An operator's
// decision (the CLI, a fixture), never the app's.
func (s *Service) AllowPrivate(ctx context.Context, clientID int64, allowed bool) error {
	return s.store.SetPrivateTargets(ctx, clientID, allowed)
}

// PrivateApps returns the apps allowed private targets.
func (s *Service) PrivateApps(ctx context.Context) ([]int64, error) {
	return s.store.PrivateApps(ctx)
}

// ImportPrivateTargets applies the webhookPrivateTargets of a fixture's
// clients (absent: unchanged); the clients must exist (imported first).
// It returns the ids of the clients whose setting it applied.
func (s *Service) ImportPrivateTargets(ctx context.Context, clients []fixture.Client) ([]int64, error) {
	var applied []int64
	for _, c := range clients {
		if c.WebhookPrivateTargets == nil {
			continue
		}
		if err := s.store.SetPrivateTargets(ctx, c.ID, *c.WebhookPrivateTargets); err != nil {
			return applied, fmt.Errorf("client %d: %w", c.ID, err)
		}
		applied = append(applied, c.ID)
	}
	return applied, nil
}

// checkEvents records in fields what is wrong with a list of event types.
func checkEvents(events []string, fields map[string]string) {
	if len(events) == 0 {
		fields["events"] = "must list at least one event type"
		return
	}
	seen := map[string]bool{}
	for _, e := range events {
		if _, known := authapi.EventScopes[e]; !known {
			fields["events"] = fmt.Sprintf("%q is not an event type (known: %s)", e, strings.Join(authapi.EventTypes, ", "))
			return
		}
		if seen[e] {
			fields["events"] = fmt.Sprintf("%q is listed twice", e)
			return
		}
		seen[e] = true
	}
}

func checkDescription(d string, fields map[string]string) {
	switch {
	case len(d) > MaxDescriptionLength:
		fields["description"] = fmt.Sprintf("must be at most %d bytes", MaxDescriptionLength)
	case strings.ContainsRune(d, 0): // PostgreSQL text cannot hold NUL: it would be a 500
		fields["description"] = "must not contain NUL characters"
	}
}

func checkFormat(f Format, fields map[string]string) {
	if f != FormatEventreg && f != FormatConCat {
		fields["format"] = `must be "eventreg" or "concat"`
	}
}

// checkScopes refuses events whose scope the app does not hold now.
func (s *Service) checkScopes(ctx context.Context, clientID int64, events []string) error {
	app, err := s.apps.Get(ctx, clientID)
	if errors.Is(err, client.ErrNotFound) {
		return ErrAppNotFound
	}
	if err != nil {
		return fmt.Errorf("reading app %d: %w", clientID, err)
	}
	for _, e := range events {
		if sc := authapi.EventScopes[e]; !app.Scopes.Contains(sc) {
			return &ScopeError{Scope: sc, Event: e}
		}
	}
	return nil
}
