package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/authapi"
)

// lockKey is the advisory lock of the relay: one per database (each
// service has its own), held for the transaction of one batch.
const lockKey int64 = 0x6f7574626f78 // "outbox"

// Row is one pending event as stored.
type Row struct {
	ID          int64
	EventID     string
	Type        string
	Resource    string
	Payload     json.RawMessage
	TraceParent string
	CreatedAt   time.Time
}

// RenderFunc renders rows as the read API renders their objects: out[i] is
// the data of rows[i]. An error that is (or wraps) a *BadRows names rows
// that can never be rendered: the others are published and those set aside
// (see the package doc). Any other error fails the batch, retried later.
type RenderFunc func(ctx context.Context, rows []Row) ([]json.RawMessage, error)

// PublishFunc hands events to auth in order; nil means every one is stored.
type PublishFunc func(ctx context.Context, events []authapi.Event) error

// BadRows names the rows of a batch that can never be rendered, by index.
type BadRows struct {
	Errs map[int]error
}

// Add records that rows[i] cannot be rendered because of err.
func (b *BadRows) Add(i int, err error) {
	if b.Errs == nil {
		b.Errs = map[int]error{}
	}
	b.Errs[i] = err
}

// Err returns b, or nil when no row is bad.
func (b *BadRows) Err() error {
	if b == nil || len(b.Errs) == 0 {
		return nil
	}
	return b
}

func (b *BadRows) Error() string { return fmt.Sprintf("%d events cannot be rendered", len(b.Errs)) }

// PublishTo returns the PublishFunc of an auth internal API client.
func PublishTo(c *authapi.Client) PublishFunc {
	return func(ctx context.Context, events []authapi.Event) error {
		_, err := c.PublishEvents(ctx, events)
		return err
	}
}

// Config configures a Relay. Pool, Source, Render and Publish are required.
type Config struct {
	Pool *pgxpool.Pool
	// Source names the producing service in every event ("volunteers").
	Source  string
	Render  RenderFunc
	Publish PublishFunc
	// BatchSize is the most events read, rendered and published at once
	// (default 500).
	BatchSize int
	// PollInterval is how often the outbox is read without a notification
	// (default 1 s).
	PollInterval time.Duration
	// MaxBackoff caps the wait after failed attempts (default 30 s).
	MaxBackoff time.Duration
	// MaxPublishBytes bounds the size of one Publish call (default 512 KiB,
	// half of a listener's default body limit): a batch of large events is
	// handed over in several calls, in order. An event larger than it goes
	// alone.
	MaxPublishBytes int
	// Log receives failures (default: discarded).
	Log *slog.Logger
	// Metrics registers the relay's metrics (nil: not registered).
	Metrics prometheus.Registerer
}

// Relay publishes the committed events of one database.
type Relay struct {
	cfg     Config
	tracer  trace.Tracer
	relayed *prometheus.CounterVec
	dead    *prometheus.CounterVec
	errors  prometheus.Counter

	mu     sync.Mutex
	oldest time.Time // created_at of the oldest pending row; zero when none
}

// NewRelay checks cfg, applies its defaults and registers the metrics.
func NewRelay(cfg Config) (*Relay, error) {
	if cfg.Pool == nil || cfg.Source == "" || cfg.Render == nil || cfg.Publish == nil {
		return nil, errors.New("outbox: a relay needs Pool, Source, Render and Publish")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.MaxPublishBytes <= 0 {
		cfg.MaxPublishBytes = 512 << 10
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{cfg: cfg, tracer: otel.Tracer("github.com/eventreg/eventreg/libs/outbox"),
		relayed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eventreg_outbox_relayed_total",
			Help: "Events handed to auth by the outbox relay, by event type."}, []string{"event"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eventreg_outbox_dead_total",
			Help: "Events that could not be rendered, moved to outbox_dead, by event type."}, []string{"event"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "eventreg_outbox_relay_errors_total",
			Help: "Failed relay attempts (database, render or publish); their events stay in the outbox."}),
	}
	oldest := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "eventreg_outbox_oldest_seconds",
		Help: "Age of the oldest event waiting in the outbox (0 when none)."}, r.oldestAge)
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{r.relayed, r.dead, r.errors, oldest} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("outbox: registering metrics: %w", err)
			}
		}
	}
	return r, nil
}

func (r *Relay) oldestAge() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.oldest.IsZero() {
		return 0
	}
	return max(0, time.Since(r.oldest).Seconds())
}

// Start runs the relay in the background until ctx ends. The function returned
// waits for it to stop (or for its own context to end): give it to
// service.Runtime.OnClose so that the pool outlives the relay.
func (r *Relay) Start(ctx context.Context) func(context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx)
	}()
	return func(wait context.Context) error {
		select {
		case <-done:
			return nil
		case <-wait.Done():
			return fmt.Errorf("outbox relay: %w", wait.Err())
		}
	}
}

// run relays events until ctx ends.
func (r *Relay) run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		r.listen(ctx, wake)
	}()
	defer func() { <-listening }()
	failures := 0
	for ctx.Err() == nil {
		n, err := r.step(ctx)
		r.updateOldest(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			r.errors.Inc()
			wait := backoff(failures, r.cfg.MaxBackoff)
			r.cfg.Log.WarnContext(ctx, "outbox relay failed; the events stay and are retried",
				"attempt", failures, "retry_in", wait.Round(time.Millisecond).String(), "error", err.Error())
			// A notification does not cut a backoff short: a failing
			// auth would otherwise be called again at every change.
			if !sleep(ctx, wait, nil) {
				return
			}
			continue
		}
		if failures > 0 {
			r.cfg.Log.InfoContext(ctx, "outbox relay recovered", "failed_attempts", failures)
			failures = 0
		}
		if n == r.cfg.BatchSize {
			continue // more are waiting
		}
		if !sleep(ctx, r.cfg.PollInterval, wake) {
			return
		}
	}
}

// sleep waits d, or until wake fires; false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// backoff is the wait after the n-th failure in a row: 250 ms doubling up
// to limit, with the upper half jittered so that replicas spread out.
func backoff(n int, limit time.Duration) time.Duration {
	d := limit
	if n < 20 {
		d = min(limit, 250*time.Millisecond<<(n-1))
	}
	return d/2 + rand.N(d/2+1)
}

// step relays one batch: the number of rows it took (0 when another
// replica holds the lock or none waits).
func (r *Relay) step(ctx context.Context) (int, error) {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("starting a relay transaction: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // after a commit, a no-op
	}()
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey).Scan(&locked); err != nil {
		return 0, fmt.Errorf("taking the relay lock: %w", err)
	}
	if !locked {
		return 0, nil
	}
	rows, err := readBatch(ctx, tx, r.cfg.BatchSize)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	published, err := r.relay(ctx, tx, rows)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		// Published but not deleted: the next attempt publishes the same
		// event ids again, which auth deduplicates.
		return 0, fmt.Errorf("committing a relayed batch: %w", err)
	}
	for _, e := range published {
		r.relayed.WithLabelValues(e.Type).Inc()
	}
	return len(rows), nil
}

func readBatch(ctx context.Context, tx pgx.Tx, limit int) ([]Row, error) {
	q, err := tx.Query(ctx, `SELECT id, event_id::text, type, resource, payload, coalesce(traceparent, ''), created_at
		FROM outbox ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	rows, err := pgx.CollectRows(q, func(row pgx.CollectableRow) (Row, error) {
		var x Row
		var payload []byte
		err := row.Scan(&x.ID, &x.EventID, &x.Type, &x.Resource, &payload, &x.TraceParent, &x.CreatedAt)
		x.Payload = payload
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	return rows, nil
}

// relay renders and publishes rows, then deletes them (and sets aside the
// ones that cannot be rendered) in tx.
func (r *Relay) relay(ctx context.Context, tx pgx.Tx, rows []Row) (published []authapi.Event, err error) {
	links := make([]trace.Link, 0, len(rows))
	for _, row := range rows {
		if row.TraceParent == "" {
			continue
		}
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": row.TraceParent}))
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx, span := r.tracer.Start(ctx, "outbox relay", trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("outbox.source", r.cfg.Source), attribute.Int("outbox.events", len(rows)),
			attribute.Int64("outbox.first_id", rows[0].ID), attribute.Int64("outbox.last_id", rows[len(rows)-1].ID)))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "relay failed")
		}
		span.End()
	}()

	data, err := r.cfg.Render(ctx, rows)
	var bad *BadRows
	if errors.As(err, &bad) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("rendering %d events: %w", len(rows), err)
	}
	if len(data) != len(rows) {
		return nil, fmt.Errorf("rendering %d events: got %d", len(rows), len(data))
	}
	events := make([]authapi.Event, 0, len(rows))
	ids := make([]int64, 0, len(rows))
	for i, row := range rows {
		ids = append(ids, row.ID)
		if bad != nil && bad.Errs[i] != nil {
			continue
		}
		events = append(events, authapi.Event{ID: row.EventID, Type: row.Type, Source: r.cfg.Source, Resource: row.Resource,
			Data: data[i], OccurredAt: row.CreatedAt.UTC(), TraceParent: row.TraceParent})
	}
	for _, part := range split(events, r.cfg.MaxPublishBytes) {
		if err := r.cfg.Publish(ctx, part); err != nil {
			// The parts published before are published again with the
			// rest: auth knows their ids.
			return nil, fmt.Errorf("publishing %d events: %w", len(part), err)
		}
	}
	if bad != nil && len(bad.Errs) > 0 {
		if err := r.setAside(ctx, tx, rows, bad); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM outbox WHERE id = ANY($1)`, ids); err != nil {
		return nil, fmt.Errorf("deleting %d relayed events: %w", len(ids), err)
	}
	return events, nil
}

// split cuts events, in order, into parts of about limit bytes of JSON.
func split(events []authapi.Event, limit int) [][]authapi.Event {
	var parts [][]authapi.Event
	start, size := 0, 0
	for i, e := range events {
		n := len(e.Data) + len(e.ID) + len(e.Type) + len(e.Source) + len(e.Resource) + len(e.TraceParent) + 128
		if i > start && size+n > limit {
			parts = append(parts, events[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(events) {
		parts = append(parts, events[start:])
	}
	return parts
}

// setAside copies the rows that cannot be rendered to outbox_dead.
func (r *Relay) setAside(ctx context.Context, tx pgx.Tx, rows []Row, bad *BadRows) error {
	idx := make([]int, 0, len(bad.Errs))
	for i := range bad.Errs {
		if i >= 0 && i < len(rows) {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	ids, reasons := make([]int64, len(idx)), make([]string, len(idx))
	for k, i := range idx {
		row := rows[i]
		ids[k], reasons[k] = row.ID, bad.Errs[i].Error()
		r.cfg.Log.ErrorContext(ctx, "outbox event cannot be rendered; moved to outbox_dead",
			"outbox_id", row.ID, "event_id", row.EventID, "event", row.Type, "resource", row.Resource, "error", reasons[k])
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox_dead (id, event_id, type, resource, payload, traceparent, created_at, error)
		SELECT o.id, o.event_id, o.type, o.resource, o.payload, o.traceparent, o.created_at, x.error
		FROM unnest($1::bigint[], $2::text[]) AS x(id, error) JOIN outbox o ON o.id = x.id
		ON CONFLICT (id) DO NOTHING`, ids, reasons); err != nil {
		return fmt.Errorf("setting aside %d events that cannot be rendered: %w", len(ids), err)
	}
	for _, i := range idx {
		r.dead.WithLabelValues(rows[i].Type).Inc()
	}
	return nil
}

// updateOldest reads the time of the oldest pending row for the gauge.
func (r *Relay) updateOldest(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var oldest *time.Time
	if err := r.cfg.Pool.QueryRow(qctx, `SELECT min(created_at) FROM (SELECT created_at FROM outbox ORDER BY id LIMIT 1) o`).Scan(&oldest); err != nil {
		return // keep the last value; the failure shows in the relay's own errors
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if oldest == nil {
		r.oldest = time.Time{}
	} else {
		r.oldest = *oldest
	}
}

// listen signals wake at every notification on channel, on a dedicated
// connection re-opened when lost, until ctx ends. It signals once after each
// (re)connection too, for what was committed while it was away.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	cfg := r.cfg.Pool.Config().ConnConfig
	failures := 0
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, cfg, signal)
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := backoff(failures, r.cfg.MaxBackoff)
		if failures == 1 || failures%10 == 0 {
			r.cfg.Log.WarnContext(ctx, "outbox relay: listening for notifications failed; polling meanwhile",
				"attempt", failures, "retry_in", wait.Round(time.Millisecond).String(), "error", err.Error())
		}
		if !sleep(ctx, wait, nil) {
			return
		}
	}
}

// listenIdle is how long the listening connection waits for a notification
// before it checks that the server still answers (a connection whose peer
// vanished without a reset would otherwise wait forever).
const listenIdle = 30 * time.Second

func (r *Relay) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, signal func()) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	signal()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			signal()
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("the listening connection stopped answering: %w", err)
			}
		default:
			return fmt.Errorf("waiting for notifications: %w", err)
		}
	}
}
