package webhook

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/logging"
)

// DispatcherConfig tunes the dispatcher (config.Webhooks).
type DispatcherConfig struct {
	Workers             int
	EndpointConcurrency int
	// AppConcurrency bounds the deliveries in flight to one app's
	// subscriptions together, across replicas (0: a quarter of Workers, at
	// least 1), so that one app's slow endpoints leave workers to the others.
	AppConcurrency int
	Timeout        time.Duration
	Lease          time.Duration
	PollInterval   time.Duration
	RetryBase      time.Duration
	RetryMax       time.Duration
	RetryFor       time.Duration
	DisableAfter   time.Duration
	Retention      time.Duration
	DeadRetention  time.Duration
	// SweepInterval is how often retention runs (default 10m).
	SweepInterval time.Duration
	// Issuer is the iss of delivery tokens (AUTH_ISSUER).
	Issuer string
	// Policy decides which addresses deliveries may connect to.
	Policy *Policy
	// Tracer makes the delivery spans (default: the global provider's).
	Tracer trace.Tracer
	Log    *slog.Logger
	// Metrics may be nil.
	Metrics *Metrics
}

// orphanAge: an event without deliveries is kept this long, so that a
// batch sent again (a lost answer) is still recognized and not fanned out
// a second time.
const orphanAge = 24 * time.Hour

// Dispatcher delivers due deliveries: claims in short transactions, each
// delivery in its own goroutine, bounded per replica and per endpoint.
type Dispatcher struct {
	queue  Queue
	send   *sender
	cfg    DispatcherConfig
	tracer trace.Tracer
	log    *slog.Logger
}

// NewDispatcher returns a dispatcher over queue signing with signer.
func NewDispatcher(queue Queue, signer Signer, cfg DispatcherConfig) *Dispatcher {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Tracer == nil {
		cfg.Tracer = otel.GetTracerProvider().Tracer("github.com/eventreg/eventreg/services/auth/internal/webhook")
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 10 * time.Minute
	}
	if cfg.Policy == nil {
		cfg.Policy = NewPolicy(nil)
	}
	if cfg.AppConcurrency <= 0 {
		cfg.AppConcurrency = max(1, cfg.Workers/4)
	}
	return &Dispatcher{queue: queue, send: newSender(cfg.Policy, signer, cfg.Issuer, cfg.Timeout, cfg.Workers),
		cfg: cfg, tracer: cfg.Tracer, log: cfg.Log}
}

// Run delivers until ctx ends, then waits for the deliveries in flight:
// those cut short keep their lease and are sent again once it expires.
func (d *Dispatcher) Run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	kick := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() { defer wg.Done(); d.listen(ctx, kick) }()
	go func() { defer wg.Done(); d.sweep(ctx) }()
	poll := time.NewTicker(d.cfg.PollInterval)
	defer poll.Stop()
	slots := make(chan struct{}, d.cfg.Workers)
	var claimErrors logging.Recurring
	for {
		if free := cap(slots) - len(slots); free > 0 {
			claims, err := d.queue.Claim(ctx, free, d.cfg.EndpointConcurrency, d.cfg.AppConcurrency, d.cfg.Lease)
			if err != nil && ctx.Err() == nil {
				if claimErrors.Due(time.Now()) {
					d.log.Warn("claiming webhook deliveries failed", "error", err.Error())
				}
			}
			for _, c := range claims {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-slots; kick() }()
					d.deliver(ctx, c)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// listen keeps a LISTEN connection, reconnecting after failures.
func (d *Dispatcher) listen(ctx context.Context, wake func()) {
	var failures logging.Recurring
	for ctx.Err() == nil {
		err := d.queue.Listen(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if failures.Due(time.Now()) {
			d.log.Warn("listening for webhook notifications failed; polling meanwhile", "error", err.Error())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// sweep applies retention every SweepInterval: the pending deliveries of
// disabled subscriptions past their retry window die, finished ones past
// their retention go.
func (d *Dispatcher) sweep(ctx context.Context) {
	t := time.NewTicker(d.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		// A disabled subscription's deliveries die when their retry window
		// ends, as a failing one's do, and then go with the dead retention.
		expired, err := d.queue.ExpireDisabled(ctx, now.Add(-d.cfg.RetryFor))
		if err != nil && ctx.Err() == nil {
			d.log.Warn("giving up the deliveries of disabled webhook subscriptions failed", "error", err.Error())
		} else if expired > 0 {
			d.log.Info("webhook deliveries of disabled subscriptions given up", "dead", expired)
		}
		n, err := d.queue.Sweep(ctx, now.Add(-d.cfg.Retention), now.Add(-d.cfg.DeadRetention), now.Add(-orphanAge))
		if err != nil && ctx.Err() == nil {
			d.log.Warn("webhook retention sweep failed", "error", err.Error())
		} else if n > 0 {
			d.log.Info("webhook retention sweep", "deleted", n)
		}
	}
}

// deliver makes one attempt of c and records its outcome. When ctx ends
// mid-request the outcome is unknown: nothing is recorded and the lease
// expires, so the delivery is sent again (at least once).
func (d *Dispatcher) deliver(ctx context.Context, c Claim) {
	log := d.log.With("delivery_id", c.DeliveryID, "subscription_id", c.SubscriptionID, "event", c.EventType)
	// Recording an outcome already known must not be cut by shutdown.
	record, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if reason := d.unwanted(c); reason != "" {
		if err := d.queue.Dead(record, c, reason); err != nil && !errors.Is(err, ErrLeaseLost) {
			log.Warn("recording a webhook delivery failed", "error", err.Error())
			return
		}
		d.cfg.Metrics.attempted(c.EventType, OutcomeDead)
		log.Info("webhook delivery dead", "reason", reason)
		return
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("webhook.delivery_id", c.DeliveryID), attribute.String("webhook.subscription_id", c.SubscriptionID),
			attribute.String("webhook.event", c.EventType), attribute.String("webhook.event_id", c.EventID), attribute.Int("webhook.attempt", c.Attempts+1))}
	if sc := spanContextOf(c.TraceParent); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	sctx, span := d.tracer.Start(ctx, "webhook deliver", opts...)
	defer span.End()
	res := d.send.send(sctx, c)
	if res.status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.status))
	}
	if res.status == 0 && ctx.Err() != nil {
		span.SetStatus(codes.Error, "dispatcher stopped")
		return // the lease expires; another attempt follows
	}
	if res.ok() {
		span.SetStatus(codes.Ok, "")
		if err := d.queue.Delivered(record, c, res.status); err != nil && !errors.Is(err, ErrLeaseLost) {
			log.Warn("recording a webhook delivery failed", "error", err.Error())
			return
		}
		d.cfg.Metrics.attempted(c.EventType, OutcomeDelivered)
		d.cfg.Metrics.delivered(c.EventType, time.Since(c.OccurredAt))
		return
	}
	span.SetStatus(codes.Error, res.problem)
	state, err := d.queue.Failed(record, c, Failure{Status: res.status, Problem: res.problem,
		Delay: Backoff(c.Attempts+1, d.cfg.RetryBase, d.cfg.RetryMax), RetryFor: d.cfg.RetryFor, DisableAfter: d.cfg.DisableAfter})
	if err != nil {
		if !errors.Is(err, ErrLeaseLost) {
			log.Warn("recording a webhook delivery failed", "error", err.Error())
		}
		return
	}
	outcome := OutcomeFailed
	switch {
	case state == DeliveryDead:
		outcome = OutcomeDead
	case res.refused:
		outcome = OutcomeRefused
	}
	d.cfg.Metrics.attempted(c.EventType, outcome)
	log.Info("webhook delivery failed", "outcome", outcome, "status", res.status, "problem", res.problem, "attempt", c.Attempts+1)
}

// unwanted says why c must not be sent any more ("" when it may): the app
// lost the event's scope, or the subscription no longer lists the event.
func (d *Dispatcher) unwanted(c Claim) string {
	if sc := authapi.EventScopes[c.EventType]; !slices.Contains(c.AppScopes, sc) {
		return "the app no longer holds the scope " + sc
	}
	if !slices.Contains(c.Subscribed, c.EventType) {
		return "the subscription no longer lists " + c.EventType
	}
	return ""
}
