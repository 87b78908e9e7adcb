package webhookdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// claimQuery leases the due deliveries: for each active subscription, up
// to its free slots (the endpoint limit less its unexpired leases) of its
// deliveries that are due, not leased, and first in their resource's line;
// of those, no more per app than the app's free slots (the app limit less
// the unexpired leases of all its subscriptions), so that one app's slow
// endpoints cannot hold every worker; of those, the limit that have waited
// longest. Rows another transaction holds are skipped, not waited for.
const claimQuery = `
WITH active AS (
	SELECT s.id, s.client_id, $2 - (SELECT count(*) FROM webhook_deliveries l
		WHERE l.subscription_id = s.id AND l.state = 'pending' AND l.leased_until > now()) AS free
	FROM webhook_subscriptions s
	WHERE s.state = 'active'
), apps AS (
	SELECT a.client_id, $4 - (SELECT count(*) FROM webhook_subscriptions ls JOIN webhook_deliveries l ON l.subscription_id = ls.id
		WHERE ls.client_id = a.client_id AND l.state = 'pending' AND l.leased_until > now()) AS free
	FROM (SELECT DISTINCT client_id FROM active) a
), due AS (
	SELECT d.id, d.next_attempt_at, d.seq, a.client_id,
		row_number() OVER (PARTITION BY a.client_id ORDER BY d.next_attempt_at, d.seq) AS n
	FROM active a
	CROSS JOIN LATERAL (
		SELECT d.id, d.next_attempt_at, d.seq
		FROM webhook_deliveries d
		WHERE d.subscription_id = a.id AND d.state = 'pending' AND d.next_attempt_at <= now()
			AND (d.leased_until IS NULL OR d.leased_until <= now())
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
				WHERE p.subscription_id = d.subscription_id AND p.resource = d.resource
					AND p.state = 'pending' AND p.seq < d.seq)
		ORDER BY d.next_attempt_at, d.seq
		LIMIT greatest(a.free, 0)
		FOR UPDATE OF d SKIP LOCKED
	) d
), picked AS (
	SELECT due.id
	FROM due JOIN apps ON apps.client_id = due.client_id
	WHERE due.n <= apps.free
	ORDER BY due.next_attempt_at, due.seq
	LIMIT $1
)
UPDATE webhook_deliveries d
SET leased_until = now() + $3::bigint * interval '1 microsecond', lease_id = gen_random_uuid()
FROM picked, webhook_subscriptions s, webhook_events e, clients c
WHERE d.id = picked.id AND s.id = d.subscription_id AND e.id = d.event_id AND c.id = s.client_id
RETURNING d.id, d.lease_id, s.id, s.client_id, s.url, s.format, s.events, c.scopes,
	EXISTS (SELECT 1 FROM webhook_private_apps p WHERE p.client_id = s.client_id),
	e.id, e.type, e.body, e.occurred_at, e.traceparent, d.attempts`

// Claim leases up to limit due deliveries, in a short transaction under
// the claim lock.
func (s *Store) Claim(ctx context.Context, limit, perEndpoint, perApp int, lease time.Duration) ([]webhook.Claim, error) {
	var out []webhook.Claim
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = out[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
			return fmt.Errorf("taking the claim lock: %w", err)
		}
		rows, err := tx.Query(ctx, claimQuery, limit, perEndpoint, lease.Microseconds(), perApp)
		if err != nil {
			return fmt.Errorf("claiming deliveries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c webhook.Claim
			if err := rows.Scan(&c.DeliveryID, &c.LeaseID, &c.SubscriptionID, &c.ClientID, &c.URL, &c.Format, &c.Subscribed, &c.AppScopes, &c.PrivateTargets,
				&c.EventID, &c.EventType, &c.Body, &c.OccurredAt, &c.TraceParent, &c.Attempts); err != nil {
				return fmt.Errorf("reading claimed deliveries: %w", err)
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delivered records a 2xx.
func (s *Store) Delivered(ctx context.Context, c webhook.Claim, status int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSubscription(ctx, tx, c.SubscriptionID, "FOR KEY SHARE"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = $3,
			last_error = NULL, next_attempt_at = NULL, leased_until = NULL, lease_id = NULL, finished_at = now()
			WHERE id = $1 AND lease_id = $2`, c.DeliveryID, c.LeaseID, status)
		if err != nil {
			return fmt.Errorf("recording delivery %s: %w", c.DeliveryID, err)
		}
		if tag.RowsAffected() == 0 {
			return webhook.ErrLeaseLost
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET failing_since = NULL
			WHERE id = $1 AND failing_since IS NOT NULL`, c.SubscriptionID); err != nil {
			return fmt.Errorf("clearing the failures of subscription %s: %w", c.SubscriptionID, err)
		}
		return nil
	})
}

// Failed records a failed attempt, and the subscription's failure: it is
// disabled once it has failed without a success for longer than
// f.DisableAfter.
func (s *Store) Failed(ctx context.Context, c webhook.Claim, f webhook.Failure) (webhook.DeliveryState, error) {
	var state string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSubscription(ctx, tx, c.SubscriptionID, "FOR NO KEY UPDATE"); err != nil {
			return err
		}
		var status *int
		if f.Status != 0 {
			status = &f.Status
		}
		// The deadline is read from the row being updated (locked), not
		// from a snapshot taken before: a replay committed meanwhile moves
		// retry_from, and the failure must see it.
		err := tx.QueryRow(ctx, `
			UPDATE webhook_deliveries d SET attempts = attempts + 1, last_status = $3, last_error = $4,
				leased_until = NULL, lease_id = NULL,
				state = CASE WHEN now() >= d.retry_from + w.retry_for THEN 'dead' ELSE 'pending' END,
				next_attempt_at = CASE WHEN now() >= d.retry_from + w.retry_for THEN NULL
					ELSE least(now() + $6::bigint * interval '1 microsecond', d.retry_from + w.retry_for) END,
				finished_at = CASE WHEN now() >= d.retry_from + w.retry_for THEN now() END
			FROM (SELECT $5::bigint * interval '1 microsecond' AS retry_for) w
			WHERE d.id = $1 AND d.lease_id = $2 RETURNING d.state`,
			c.DeliveryID, c.LeaseID, status, f.Problem, f.RetryFor.Microseconds(), f.Delay.Microseconds()).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("recording delivery %s: %w", c.DeliveryID, err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_subscriptions SET
				failing_since = coalesce(failing_since, now()),
				state = CASE WHEN state = 'active' AND now() - failing_since > $2::bigint * interval '1 microsecond'
					THEN 'disabled' ELSE state END,
				disabled_reason = CASE WHEN state = 'active' AND now() - failing_since > $2::bigint * interval '1 microsecond'
					THEN 'no successful delivery since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; last: ' || $3
					ELSE disabled_reason END,
				disabled_by = CASE WHEN state = 'active' AND now() - failing_since > $2::bigint * interval '1 microsecond'
					THEN 'failures' ELSE disabled_by END,
				updated_at = CASE WHEN state = 'active' AND now() - failing_since > $2::bigint * interval '1 microsecond'
					THEN now() ELSE updated_at END
			WHERE id = $1`, c.SubscriptionID, f.DisableAfter.Microseconds(), f.Problem); err != nil {
			return fmt.Errorf("recording the failure of subscription %s: %w", c.SubscriptionID, err)
		}
		return nil
	})
	return webhook.DeliveryState(state), err
}

// lockSubscription takes the subscription's row before an outcome touches
// its delivery. Every transaction that touches both takes the subscription
// first (a delete cascades from it, an update re-enables from it), so none
// waits on another in a circle. A subscription deleted meanwhile took its
// deliveries with it: the lease is lost.
func lockSubscription(ctx context.Context, tx pgx.Tx, id, strength string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM webhook_subscriptions WHERE id = $1 `+strength, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("locking subscription %s: %w", id, err)
	}
	return nil
}

// Dead gives a delivery up at once.
func (s *Store) Dead(ctx context.Context, c webhook.Claim, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'dead', last_error = $3, next_attempt_at = NULL,
		leased_until = NULL, lease_id = NULL, finished_at = now() WHERE id = $1 AND lease_id = $2`, c.DeliveryID, c.LeaseID, reason)
	if err != nil {
		return fmt.Errorf("recording delivery %s: %w", c.DeliveryID, err)
	}
	if tag.RowsAffected() == 0 {
		return webhook.ErrLeaseLost
	}
	return nil
}

// expiredReason is the last error of a delivery given up because its
// subscription stayed disabled for its whole retry window.
const expiredReason = "not sent: the subscription was disabled until the retry window ended"

// ExpireDisabled gives up the pending deliveries of disabled subscriptions
// whose retry window began before before, unless one is in flight. The
// subscriptions are locked first, as every transaction touching a
// subscription and its deliveries does: an enable (FOR UPDATE) racing it
// either waits or is waited for. FOR KEY SHARE, as Delivered takes: an
// outcome recorded meanwhile may still update the subscription's failure
// record after its delivery without waiting on this in a circle.
func (s *Store) ExpireDisabled(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT s.id FROM webhook_subscriptions s WHERE s.state = 'disabled'
			AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.retry_from < $1)
			ORDER BY s.id FOR KEY SHARE OF s`, before)
		if err != nil {
			return fmt.Errorf("locking the disabled subscriptions: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'dead', last_error = $3, next_attempt_at = NULL,
				leased_until = NULL, lease_id = NULL, finished_at = now()
			WHERE subscription_id = ANY ($1::uuid[]) AND state = 'pending' AND retry_from < $2
				AND (leased_until IS NULL OR leased_until <= now())`, ids, before, expiredReason)
		if err != nil {
			return fmt.Errorf("giving up the deliveries of disabled subscriptions: %w", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}

// Sweep deletes finished deliveries past their retention and events left
// without deliveries.
func (s *Store) Sweep(ctx context.Context, delivered, dead, orphan time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries
		WHERE (state = 'delivered' AND finished_at < $1) OR (state = 'dead' AND finished_at < $2)`, delivered, dead)
	if err != nil {
		return 0, fmt.Errorf("deleting old deliveries: %w", err)
	}
	n := tag.RowsAffected()
	tag, err = s.pool.Exec(ctx, `DELETE FROM webhook_events e WHERE e.received_at < $1
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`, orphan)
	if err != nil {
		return n, fmt.Errorf("deleting events without deliveries: %w", err)
	}
	return n + tag.RowsAffected(), nil
}

// Listen waits for notifications on a connection of its own, taken out of
// the pool and closed when done.
func (s *Store) Listen(ctx context.Context, wake func()) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquiring a connection to listen: %w", err)
	}
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, `LISTEN `+channel); err != nil {
		return fmt.Errorf("listening on %s: %w", channel, err)
	}
	wake() // what was notified before LISTEN
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("waiting for notifications: %w", err)
		}
		wake()
	}
}
