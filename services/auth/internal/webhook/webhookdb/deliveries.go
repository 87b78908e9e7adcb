package webhookdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

const deliveryColumns = `d.id, d.subscription_id, d.event_id, e.type, d.seq, d.state, d.attempts, coalesce(d.last_status, 0),
	coalesce(d.last_error, ''), d.next_attempt_at, CASE WHEN d.state = 'delivered' THEN d.finished_at END, d.created_at`

func scanDelivery(row pgx.Row) (webhook.Delivery, error) {
	var d webhook.Delivery
	var state string
	var next, delivered *time.Time
	err := row.Scan(&d.ID, &d.SubscriptionID, &d.EventID, &d.Event, &d.Seq, &state, &d.Attempts, &d.LastStatus, &d.LastError, &next, &delivered, &d.CreatedAt)
	d.State = webhook.DeliveryState(state)
	if next != nil {
		d.NextAttemptAt = *next
	}
	if delivered != nil {
		d.DeliveredAt = *delivered
	}
	return d, err
}

// Deliveries returns up to limit deliveries of a subscription after seq after.
func (s *Store) Deliveries(ctx context.Context, subscriptionID string, state webhook.DeliveryState, after int64, limit int) ([]webhook.Delivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+`
		FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
		WHERE d.subscription_id = $1 AND ($2 = '' OR d.state = $2) AND d.seq > $3
		ORDER BY d.seq LIMIT $4`, subscriptionID, string(state), after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing deliveries of %s: %w", subscriptionID, err)
	}
	defer rows.Close()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("reading deliveries: %w", err)
	}
	return out, nil
}

// replaySet makes deliveries pending and due now with a fresh retry
// window; a leased one keeps its lease (it is being sent).
const replaySet = `state = 'pending', attempts = CASE WHEN d.state = 'pending' THEN d.attempts ELSE 0 END,
	next_attempt_at = now(), retry_from = now(), finished_at = NULL,
	leased_until = CASE WHEN d.state = 'pending' THEN d.leased_until END,
	lease_id = CASE WHEN d.state = 'pending' THEN d.lease_id END`

// Replay makes one delivery pending and due now.
func (s *Store) Replay(ctx context.Context, subscriptionID, deliveryID string) (webhook.Delivery, error) {
	var out webhook.Delivery
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanDelivery(tx.QueryRow(ctx, `
			WITH d AS (UPDATE webhook_deliveries d SET `+replaySet+`
				WHERE d.id = $1 AND d.subscription_id = $2 RETURNING d.*)
			SELECT `+deliveryColumns+` FROM d JOIN webhook_events e ON e.id = d.event_id`, deliveryID, subscriptionID))
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrDeliveryNotFound
		}
		if err != nil {
			return fmt.Errorf("replaying delivery %s: %w", deliveryID, err)
		}
		return notify(ctx, tx)
	})
	return out, err
}

// ReplayDead makes every dead delivery of a subscription pending.
func (s *Store) ReplayDead(ctx context.Context, subscriptionID string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries d SET `+replaySet+`
			WHERE d.subscription_id = $1 AND d.state = 'dead'`, subscriptionID)
		if err != nil {
			return fmt.Errorf("replaying the dead deliveries of %s: %w", subscriptionID, err)
		}
		n = int(tag.RowsAffected())
		if n == 0 {
			return nil
		}
		return notify(ctx, tx)
	})
	return n, err
}

// Ingest stores the new events in order and fans them out, in one
// transaction. Ingests are serialized, so seq order is commit order.
func (s *Store) Ingest(ctx context.Context, events []webhook.Event, scopes map[string]string) ([]string, error) {
	types, scopeOf := make([]string, 0, len(scopes)), make([]string, 0, len(scopes))
	for t, sc := range scopes {
		types, scopeOf = append(types, t), append(scopeOf, sc)
	}
	var fresh []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fresh = fresh[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ingestLock); err != nil {
			return fmt.Errorf("taking the ingest lock: %w", err)
		}
		// One statement per event: each takes its seq in batch order.
		batch := &pgx.Batch{}
		for _, e := range events {
			batch.Queue(`INSERT INTO webhook_events (id, type, source, resource, body, occurred_at, traceparent)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING RETURNING id`,
				e.ID, e.Type, e.Source, e.Resource, e.Body, e.OccurredAt, e.TraceParent)
		}
		results := tx.SendBatch(ctx, batch)
		ids := make([]string, 0, len(events))
		for _, e := range events {
			var id string
			err := results.QueryRow().Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // received before
			}
			if err != nil {
				results.Close()
				return fmt.Errorf("inserting event %s: %w", e.ID, err)
			}
			ids = append(ids, id)
			fresh = append(fresh, e.Type)
		}
		if err := results.Close(); err != nil {
			return fmt.Errorf("inserting events: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_deliveries (id, subscription_id, event_id, seq, resource, next_attempt_at, retry_from)
			SELECT gen_random_uuid(), s.id, e.id, e.seq, e.resource, now(), e.occurred_at
			FROM webhook_events e
			JOIN unnest($2::text[], $3::text[]) AS m (type, scope) ON m.type = e.type
			JOIN webhook_subscriptions s ON e.type = ANY (s.events)
			JOIN clients c ON c.id = s.client_id AND m.scope = ANY (c.scopes)
			WHERE e.id = ANY ($1::uuid[])
			ORDER BY e.seq, s.id`, ids, types, scopeOf)
		if err != nil {
			return fmt.Errorf("fanning out %d events: %w", len(ids), err)
		}
		if tag.RowsAffected() > 0 {
			return notify(ctx, tx)
		}
		return nil
	})
	return fresh, err
}
