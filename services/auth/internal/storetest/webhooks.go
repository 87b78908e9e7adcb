package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// WebhookStore is the contract of a webhook store: the business keeps
// subscriptions, events and deliveries in it (webhook.Store), and the
// dispatcher leases and settles deliveries through it (webhook.Queue).
type WebhookStore interface {
	webhook.Store
	webhook.Queue
}

// Webhooks runs the contract of webhook stores; open returns an empty
// store and the client store of its database (a subscription is an app's),
// which holds no client with an id from 9000 to 9999.
func Webhooks(t *testing.T, open func(t *testing.T) (WebhookStore, client.Store)) {
	const holder, lacker = int64(9201), int64(9202)
	// scopes are the events of the tests and the scope each needs.
	scopes := map[string]string{"user.updated": "user:read", "registration.created": "registration:read"}
	store, apps := open(t)
	for id, sc := range map[int64]string{holder: "user:read registration:read", lacker: "registration:read"} {
		_, err := apps.Create(ctx, client.Client{ID: id, Name: "App", Kind: client.KindService, SecretHash: []byte("h"), Scopes: scope.Parse(sc)})
		must(t, "registering an app", err)
	}
	// setup returns the store, emptied when the case ends: claims take
	// every due delivery, so each case starts with none.
	setup := func(t *testing.T) WebhookStore {
		t.Cleanup(func() {
			subs, err := store.Subscriptions(ctx, 0)
			must(t, "listing the subscriptions to delete", err)
			for _, sub := range subs {
				must(t, "deleting a subscription", store.DeleteSubscription(ctx, sub.ID))
			}
			later := time.Now().Add(time.Hour)
			_, err = store.Sweep(ctx, later, later, later)
			must(t, "sweeping the events", err)
		})
		return store
	}
	subscribe := func(t *testing.T, s WebhookStore, app int64, events ...string) webhook.Subscription {
		t.Helper()
		sub, err := s.CreateSubscription(ctx, webhook.Subscription{ID: uuid.NewString(), ClientID: app, URL: "https://hooks.example/" + uuid.NewString(),
			Events: events, Description: "d", Format: webhook.FormatEventreg}, webhook.MaxSubscriptions)
		must(t, "subscribing", err)
		return sub
	}
	event := func(typ, resource string) webhook.Event {
		return webhook.Event{ID: uuid.NewString(), Type: typ, Source: "users", Resource: resource,
			Body: []byte(`{"event":"` + typ + `","data":{}}`), OccurredAt: time.Now().Truncate(time.Microsecond), TraceParent: ""}
	}
	ingest := func(t *testing.T, s WebhookStore, events ...webhook.Event) []string {
		t.Helper()
		fresh, err := s.Ingest(ctx, events, scopes)
		must(t, "ingesting", err)
		return fresh
	}
	deliveries := func(t *testing.T, s WebhookStore, sub string, state webhook.DeliveryState) []webhook.Delivery {
		t.Helper()
		ds, err := s.Deliveries(ctx, sub, state, 0, 100)
		must(t, "listing deliveries", err)
		return ds
	}
	claim := func(t *testing.T, s WebhookStore, perEndpoint int, lease time.Duration) []webhook.Claim {
		t.Helper()
		cs, err := s.Claim(ctx, 10, perEndpoint, 100, lease)
		must(t, "claiming", err)
		return cs
	}
	eventIDs := func(cs []webhook.Claim) []string {
		ids := []string{}
		for _, c := range cs {
			ids = append(ids, c.EventID)
		}
		return ids
	}
	stamps := cmpopts.IgnoreFields(webhook.Subscription{}, "CreatedAt", "UpdatedAt")
	disable := func(by webhook.DisabledBy) webhook.Change {
		st := webhook.StateDisabled
		return webhook.Change{State: &st, By: by, Reason: "disabled by " + string(by)}
	}
	enable := func(by webhook.DisabledBy) webhook.Change {
		st := webhook.StateActive
		return webhook.Change{State: &st, By: by}
	}

	t.Run("a subscription reads back; an app's list is by creation, the operator's holds every app's", func(t *testing.T) {
		s := setup(t)
		a, b, c := subscribe(t, s, holder, "user.updated"), subscribe(t, s, holder, "registration.created"), subscribe(t, s, lacker, "registration.created")
		check(t, "the created subscription", a, webhook.Subscription{ID: a.ID, ClientID: holder, URL: a.URL, Events: []string{"user.updated"},
			Description: "d", Format: webhook.FormatEventreg, State: webhook.StateActive}, stamps)
		got, err := s.Subscription(ctx, a.ID)
		must(t, "reading", err)
		check(t, "the subscription read back", got, a)
		mine, err := s.Subscriptions(ctx, holder)
		must(t, "listing the app's", err)
		check(t, "the app's subscriptions", mine, []webhook.Subscription{a, b})
		all, err := s.Subscriptions(ctx, 0)
		must(t, "listing every app's", err)
		check(t, "every app's subscriptions", all, []webhook.Subscription{a, b, c})
	})
	t.Run("an app holds at most the limit of subscriptions; an unknown app or subscription is refused", func(t *testing.T) {
		s := setup(t)
		sub := webhook.Subscription{ClientID: lacker, URL: "https://hooks.example/x", Events: []string{"registration.created"}, Format: webhook.FormatEventreg}
		for i := range 3 {
			sub.ID = uuid.NewString()
			_, err := s.CreateSubscription(ctx, sub, 2)
			if i < 2 {
				must(t, "subscribing within the limit", err)
			} else {
				is(t, "subscribing past the limit", err, webhook.ErrTooMany)
			}
		}
		sub.ID, sub.ClientID = uuid.NewString(), 9999
		_, err := s.CreateSubscription(ctx, sub, 2)
		is(t, "an unknown app's subscription", err, webhook.ErrAppNotFound)
		_, err = s.Subscription(ctx, uuid.NewString())
		is(t, "an unknown subscription", err, webhook.ErrNotFound)
		_, err = s.UpdateSubscription(ctx, uuid.NewString(), enable(webhook.ByApp))
		is(t, "updating an unknown subscription", err, webhook.ErrNotFound)
	})
	t.Run("an update sets what it names; only an operator lifts an operator's disable", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		url := "https://hooks.example/moved"
		got, err := s.UpdateSubscription(ctx, sub.ID, webhook.Change{URL: &url, By: webhook.ByApp})
		must(t, "moving", err)
		check(t, "URL and events", []any{got.URL, got.Events}, []any{url, []string{"user.updated"}})
		got, err = s.UpdateSubscription(ctx, sub.ID, disable(webhook.ByApp))
		must(t, "disabling as the app", err)
		check(t, "state, by, reason", []any{got.State, got.DisabledBy, got.DisabledReason}, []any{webhook.StateDisabled, webhook.ByApp, "disabled by app"})
		got, err = s.UpdateSubscription(ctx, sub.ID, enable(webhook.ByApp))
		must(t, "enabling as the app", err)
		check(t, "state, by, reason", []any{got.State, got.DisabledBy, got.DisabledReason}, []any{webhook.StateActive, webhook.DisabledBy(""), ""})
		_, err = s.UpdateSubscription(ctx, sub.ID, disable(webhook.ByOperator))
		must(t, "disabling as an operator", err)
		_, err = s.UpdateSubscription(ctx, sub.ID, enable(webhook.ByApp))
		is(t, "enabling as the app", err, webhook.ErrOperatorDisabled)
		got, err = s.UpdateSubscription(ctx, sub.ID, enable(webhook.ByOperator))
		must(t, "enabling as an operator", err)
		check(t, "the state", got.State, webhook.StateActive)
	})
	t.Run("a deleted subscription is gone with its deliveries", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		ingest(t, s, event("user.updated", "user/1"))
		must(t, "deleting", s.DeleteSubscription(ctx, sub.ID))
		_, err := s.Subscription(ctx, sub.ID)
		is(t, "reading it", err, webhook.ErrNotFound)
		is(t, "deleting it again", s.DeleteSubscription(ctx, sub.ID), webhook.ErrNotFound)
		check(t, "claims of its deliveries", eventIDs(claim(t, s, 4, time.Minute)), []string{})
	})
	t.Run("ingest stores each event once, for the subscriptions of its type whose app holds its scope", func(t *testing.T) {
		s := setup(t)
		users, regs := subscribe(t, s, holder, "user.updated"), subscribe(t, s, lacker, "user.updated", "registration.created")
		e1, e2 := event("user.updated", "user/1"), event("registration.created", "registration/1")
		check(t, "the new events' types", ingest(t, s, e1, e2), []string{"user.updated", "registration.created"})
		check(t, "a repeated event's types", ingest(t, s, e1), []string{})
		gotUsers, gotRegs := deliveries(t, s, users.ID, ""), deliveries(t, s, regs.ID, "")
		if len(gotUsers) != 1 || gotUsers[0].EventID != e1.ID || len(gotRegs) != 1 || gotRegs[0].EventID != e2.ID {
			t.Fatalf("deliveries %+v and %+v; want %s to the first and %s, whose scope the second app holds, to the second", gotUsers, gotRegs, e1.ID, e2.ID)
		}
		d := gotUsers[0]
		check(t, "a new delivery", []any{d.SubscriptionID, d.Event, d.State, d.Attempts}, []any{users.ID, "user.updated", webhook.DeliveryPending, 0})
	})
	t.Run("deliveries page by their events' order", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		es := []webhook.Event{event("user.updated", "user/1"), event("user.updated", "user/2"), event("user.updated", "user/3")}
		ingest(t, s, es...)
		first, err := s.Deliveries(ctx, sub.ID, "", 0, 2)
		must(t, "the first page", err)
		rest, err := s.Deliveries(ctx, sub.ID, "", first[len(first)-1].Seq, 2)
		must(t, "the next page", err)
		var got []string
		for _, d := range append(first, rest...) {
			got = append(got, d.EventID)
		}
		check(t, "the events in order", got, []string{es[0].ID, es[1].ID, es[2].ID})
	})
	t.Run("a claim leases a due delivery once, with what sending it needs; an outcome needs the lease", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		e := event("user.updated", "user/1")
		ingest(t, s, e)
		cs := claim(t, s, 4, time.Minute)
		if len(cs) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(cs))
		}
		c := cs[0]
		check(t, "the claim", c, webhook.Claim{SubscriptionID: sub.ID, ClientID: holder, URL: sub.URL, Format: webhook.FormatEventreg,
			Subscribed: []string{"user.updated"}, AppScopes: []string{"registration:read", "user:read"}, EventID: e.ID, EventType: e.Type,
			Body: e.Body, OccurredAt: e.OccurredAt}, cmpopts.IgnoreFields(webhook.Claim{}, "DeliveryID", "LeaseID"))
		check(t, "a second claim", eventIDs(claim(t, s, 4, time.Minute)), []string{})
		must(t, "recording the delivery", s.Delivered(ctx, c, 204))
		is(t, "recording it again", s.Delivered(ctx, c, 204), webhook.ErrLeaseLost)
		ds := deliveries(t, s, sub.ID, webhook.DeliveryDelivered)
		if len(ds) != 1 || ds[0].LastStatus != 204 || ds[0].Attempts != 1 || ds[0].DeliveredAt.IsZero() {
			t.Fatalf("delivered: %+v", ds)
		}
	})
	t.Run("a resource's deliveries go one at a time, in order; the endpoint limit bounds the leases", func(t *testing.T) {
		s := setup(t)
		subscribe(t, s, holder, "user.updated")
		a1, a2, b, c := event("user.updated", "user/1"), event("user.updated", "user/1"), event("user.updated", "user/2"), event("user.updated", "user/3")
		ingest(t, s, a1, a2, b, c)
		first := claim(t, s, 2, time.Minute)
		check(t, "the first claim (two per endpoint)", eventIDs(first), []string{a1.ID, b.ID})
		check(t, "a claim while both are leased", eventIDs(claim(t, s, 2, time.Minute)), []string{})
		must(t, "recording the first", s.Delivered(ctx, first[0], 204))
		check(t, "the next claim", eventIDs(claim(t, s, 2, time.Minute)), []string{a2.ID})
	})
	t.Run("a lease that ends lets another claim take the delivery, and drops the old lease's outcome", func(t *testing.T) {
		s := setup(t)
		subscribe(t, s, holder, "user.updated")
		ingest(t, s, event("user.updated", "user/1"))
		old := claim(t, s, 4, 50*time.Millisecond)
		outlive(50 * time.Millisecond)
		again := claim(t, s, 4, time.Minute)
		if len(old) != 1 || len(again) != 1 || old[0].LeaseID == again[0].LeaseID {
			t.Fatalf("claims %+v then %+v; want the delivery claimed again under a new lease", old, again)
		}
		is(t, "the old lease's outcome", s.Delivered(ctx, old[0], 204), webhook.ErrLeaseLost)
		must(t, "the new lease's outcome", s.Delivered(ctx, again[0], 204))
	})
	t.Run("a failed attempt waits, past its retry window it is dead, and a replay sends it again", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		ingest(t, s, event("user.updated", "user/1"))
		c := claim(t, s, 4, time.Minute)[0]
		state, err := s.Failed(ctx, c, webhook.Failure{Status: 500, Problem: "HTTP 500", Delay: time.Hour, RetryFor: time.Hour, DisableAfter: time.Hour})
		must(t, "recording a failure", err)
		check(t, "the state after a failure", state, webhook.DeliveryPending)
		check(t, "a claim before the retry is due", eventIDs(claim(t, s, 4, time.Minute)), []string{})
		d, err := s.Replay(ctx, sub.ID, c.DeliveryID)
		must(t, "replaying", err)
		check(t, "the replayed delivery", []any{d.State, d.Attempts, d.LastStatus}, []any{webhook.DeliveryPending, 1, 500})
		c = claim(t, s, 4, time.Minute)[0]
		state, err = s.Failed(ctx, c, webhook.Failure{Status: 500, Problem: "HTTP 500", Delay: time.Second, RetryFor: 0, DisableAfter: time.Hour})
		must(t, "recording a failure past the window", err)
		check(t, "the state past the window", state, webhook.DeliveryDead)
		n, err := s.ReplayDead(ctx, sub.ID)
		must(t, "replaying the dead", err)
		check(t, "deliveries replayed", n, 1)
		c = claim(t, s, 4, time.Minute)[0]
		must(t, "giving up", s.Dead(ctx, c, "the target is not allowed"))
		ds := deliveries(t, s, sub.ID, webhook.DeliveryDead)
		if len(ds) != 1 || ds[0].LastError != "the target is not allowed" {
			t.Fatalf("dead: %+v", ds)
		}
		_, err = s.Replay(ctx, sub.ID, uuid.NewString())
		is(t, "replaying an unknown delivery", err, webhook.ErrDeliveryNotFound)
	})
	t.Run("a success clears a subscription's failures; failing for longer than allowed disables it", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		ingest(t, s, event("user.updated", "user/1"), event("user.updated", "user/2"), event("user.updated", "user/3"))
		failingSince := func(t *testing.T) time.Time {
			t.Helper()
			got, err := s.Subscription(ctx, sub.ID)
			must(t, "reading the subscription", err)
			return got.FailingSince
		}
		fail := func(t *testing.T, c webhook.Claim, disableAfter time.Duration) {
			t.Helper()
			_, err := s.Failed(ctx, c, webhook.Failure{Status: 500, Problem: "HTTP 500", RetryFor: time.Hour, DisableAfter: disableAfter})
			must(t, "recording a failure", err)
		}
		cs := claim(t, s, 4, time.Minute)
		if len(cs) != 3 {
			t.Fatalf("claimed %d deliveries, want 3", len(cs))
		}
		fail(t, cs[0], time.Hour)
		if failingSince(t).IsZero() {
			t.Fatal("a failure did not start the subscription's failing time")
		}
		must(t, "recording a success", s.Delivered(ctx, cs[1], 204))
		if !failingSince(t).IsZero() {
			t.Fatal("a success did not clear the subscription's failing time")
		}
		fail(t, cs[2], 0)
		for _, c := range claim(t, s, 4, time.Minute) { // the failed ones, due again at once
			fail(t, c, 0)
		}
		got, err := s.Subscription(ctx, sub.ID)
		must(t, "reading the subscription", err)
		check(t, "state and by after failing too long", []any{got.State, got.DisabledBy}, []any{webhook.StateDisabled, webhook.ByFailures})
	})
	t.Run("a disabled subscription's deliveries wait, and go dead once their window has passed", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		_, err := s.UpdateSubscription(ctx, sub.ID, disable(webhook.ByApp))
		must(t, "disabling", err)
		ingest(t, s, event("user.updated", "user/1"))
		check(t, "a claim", eventIDs(claim(t, s, 4, time.Minute)), []string{})
		n, err := s.ExpireDisabled(ctx, time.Now().Add(time.Minute))
		must(t, "expiring", err)
		check(t, "deliveries gone dead", n, int64(1))
		check(t, "dead deliveries", len(deliveries(t, s, sub.ID, webhook.DeliveryDead)), 1)
	})
	t.Run("a sweep deletes finished deliveries past their retention and events left without any", func(t *testing.T) {
		s := setup(t)
		sub := subscribe(t, s, holder, "user.updated")
		ingest(t, s, event("user.updated", "user/1"), event("registration.created", "registration/9"))
		c := claim(t, s, 4, time.Minute)[0]
		must(t, "recording the delivery", s.Delivered(ctx, c, 204))
		later := time.Now().Add(time.Minute)
		n, err := s.Sweep(ctx, later, later, later)
		must(t, "sweeping", err)
		check(t, "rows swept (the delivery, its event and the event no one subscribed to)", n, int64(3))
		check(t, "deliveries left", len(deliveries(t, s, sub.ID, "")), 0)
	})
	t.Run("an operator allows an app private targets, or no longer", func(t *testing.T) {
		s := setup(t)
		must(t, "allowing", s.SetPrivateTargets(ctx, holder, true))
		must(t, "allowing again", s.SetPrivateTargets(ctx, holder, true))
		allowed, err := s.PrivateTargets(ctx, holder)
		must(t, "reading", err)
		apps, err := s.PrivateApps(ctx)
		must(t, "listing", err)
		check(t, "allowed, and the apps allowed", []any{allowed, apps}, []any{true, []int64{holder}})
		must(t, "withdrawing", s.SetPrivateTargets(ctx, holder, false))
		allowed, err = s.PrivateTargets(ctx, holder)
		must(t, "reading", err)
		check(t, "allowed after the withdrawal", allowed, false)
		is(t, "allowing an unknown app", s.SetPrivateTargets(ctx, 9999, true), webhook.ErrAppNotFound)
	})
	t.Run("a listener is woken by new due work", func(t *testing.T) {
		s := setup(t)
		subscribe(t, s, holder, "user.updated")
		var wakes atomic.Int32
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Listen(lctx, func() { wakes.Add(1) }) }()
		t.Cleanup(func() { cancel(); <-done })
		waitFor(t, "the listener's first wake", func() bool { return wakes.Load() >= 1 })
		before := wakes.Load()
		ingest(t, s, event("user.updated", "user/1"))
		waitFor(t, "a wake after an ingest", func() bool { return wakes.Load() > before })
	})
}

// waitFor polls cond until it holds, for at most five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := testkit.Poll(ctx, 5*time.Second, func(context.Context) error {
		if cond() {
			return nil
		}
		return context.DeadlineExceeded
	})
	if err != nil {
		t.Fatalf("%s: not within 5s", what)
	}
}
