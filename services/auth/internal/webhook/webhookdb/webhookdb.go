// Package webhookdb stores webhook subscriptions, events and deliveries in PostgreSQL, and is the dispatcher's queue.
package webhookdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// Store is the PostgreSQL webhook store.
type Store struct{ pool *pgxpool.Pool }

var (
	_ webhook.Store = (*Store)(nil)
	_ webhook.Queue = (*Store)(nil)
)

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// channel is the NOTIFY channel that wakes dispatchers.
const channel = "webhook_deliveries"

// Advisory locks (transaction-scoped) serializing claims and ingests across
// replicas; "auth" (0x61757468) is the key rotation's.
const (
	claimLock  = 0x77686b63 // "whkc"
	ingestLock = 0x77686b69 // "whki"
)

const subscriptionColumns = `id, client_id, url, events, description, format, state, coalesce(disabled_reason, ''),
	CASE WHEN state = 'disabled' THEN coalesce(disabled_by, '') ELSE '' END,
	coalesce(failing_since, 'epoch'::timestamptz), created_at, updated_at`

func scanSubscription(row pgx.Row) (webhook.Subscription, error) {
	var s webhook.Subscription
	var format, state, by string
	err := row.Scan(&s.ID, &s.ClientID, &s.URL, &s.Events, &s.Description, &format, &state, &s.DisabledReason, &by, &s.FailingSince, &s.CreatedAt, &s.UpdatedAt)
	s.Format, s.State, s.DisabledBy = webhook.Format(format), webhook.State(state), webhook.DisabledBy(by)
	if s.FailingSince.Unix() == 0 {
		s.FailingSince = time.Time{}
	}
	return s, err
}

// CreateSubscription inserts s unless its app holds max already; the
// app's row is locked so that parallel creations count right.
func (s *Store) CreateSubscription(ctx context.Context, sub webhook.Subscription, max int) (webhook.Subscription, error) {
	var out webhook.Subscription
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_subscriptions WHERE client_id = c.id)
			FROM clients c WHERE c.id = $1 FOR UPDATE`, sub.ClientID).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrAppNotFound
		}
		if err != nil {
			return fmt.Errorf("counting the subscriptions of app %d: %w", sub.ClientID, err)
		}
		if n >= max {
			return webhook.ErrTooMany
		}
		out, err = scanSubscription(tx.QueryRow(ctx, `
			INSERT INTO webhook_subscriptions (id, client_id, url, events, description, format)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+subscriptionColumns,
			sub.ID, sub.ClientID, sub.URL, sub.Events, sub.Description, string(sub.Format)))
		if err != nil {
			return fmt.Errorf("inserting a subscription of app %d: %w", sub.ClientID, err)
		}
		return nil
	})
	return out, err
}

// Subscription returns one subscription.
func (s *Store) Subscription(ctx context.Context, id string) (webhook.Subscription, error) {
	sub, err := scanSubscription(s.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sub, webhook.ErrNotFound
	}
	if err != nil {
		return sub, fmt.Errorf("reading subscription %s: %w", id, err)
	}
	return sub, nil
}

// Subscriptions returns an app's subscriptions (every app's for 0) by creation.
func (s *Store) Subscriptions(ctx context.Context, clientID int64) ([]webhook.Subscription, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions
		WHERE $1 = 0 OR client_id = $1 ORDER BY client_id, created_at, id`, clientID)
	if err != nil {
		return nil, fmt.Errorf("listing subscriptions: %w", err)
	}
	defer rows.Close()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Subscription, error) { return scanSubscription(r) })
	if err != nil {
		return nil, fmt.Errorf("reading subscriptions: %w", err)
	}
	return out, nil
}

// UpdateSubscription applies ch. Enabling a disabled subscription clears
// its failure record and makes its pending deliveries due now; one an
// operator disabled only an operator enables. An operator's disable
// replaces an earlier one by the app or after failures; the app's does not
// replace an earlier one.
func (s *Store) UpdateSubscription(ctx context.Context, id string, ch webhook.Change) (webhook.Subscription, error) {
	var state, format *string
	if ch.State != nil {
		v := string(*ch.State)
		state = &v
	}
	if ch.Format != nil {
		v := string(*ch.Format)
		format = &v
	}
	var out webhook.Subscription
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var wasDisabled bool
		var by string
		err := tx.QueryRow(ctx, `SELECT state = 'disabled', coalesce(disabled_by, '') FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, id).
			Scan(&wasDisabled, &by)
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("locking subscription %s: %w", id, err)
		}
		if wasDisabled && webhook.DisabledBy(by) == webhook.ByOperator && state != nil && *state == string(webhook.StateActive) &&
			ch.By != webhook.ByOperator {
			return webhook.ErrOperatorDisabled
		}
		out, err = scanSubscription(tx.QueryRow(ctx, `
			UPDATE webhook_subscriptions SET
				url = coalesce($2, url),
				events = coalesce($3, events),
				description = coalesce($4, description),
				format = coalesce($8, format),
				state = coalesce($5, state),
				disabled_reason = CASE WHEN $5 = 'active' THEN NULL
				                       WHEN $5 = 'disabled' AND (state = 'active' OR $7 = 'operator') THEN $6
				                       ELSE disabled_reason END,
				disabled_by = CASE WHEN $5 = 'active' THEN NULL
				                   WHEN $5 = 'disabled' AND (state = 'active' OR $7 = 'operator') THEN $7
				                   ELSE disabled_by END,
				failing_since = CASE WHEN $5 = 'active' AND state = 'disabled' THEN NULL ELSE failing_since END,
				updated_at = now()
			WHERE id = $1 RETURNING `+subscriptionColumns,
			id, ch.URL, ch.Events, ch.Description, state, ch.Reason, string(ch.By), format))
		if err != nil {
			return fmt.Errorf("updating subscription %s: %w", id, err)
		}
		if wasDisabled && out.State == webhook.StateActive {
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now()
				WHERE subscription_id = $1 AND state = 'pending' AND next_attempt_at > now()`, id); err != nil {
				return fmt.Errorf("making the deliveries of subscription %s due: %w", id, err)
			}
			return notify(ctx, tx)
		}
		return nil
	})
	return out, err
}

// DeleteSubscription removes a subscription and its deliveries.
func (s *Store) DeleteSubscription(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("deleting subscription %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return webhook.ErrNotFound
	}
	return nil
}

// PrivateTargets reports whether an operator allows the app targets
// inside the allowed networks.
func (s *Store) PrivateTargets(ctx context.Context, clientID int64) (bool, error) {
	var allowed bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_private_apps WHERE client_id = $1)`, clientID).Scan(&allowed)
	if err != nil {
		return false, fmt.Errorf("reading whether app %d may reach private targets: %w", clientID, err)
	}
	return allowed, nil
}

// SetPrivateTargets allows the app private targets, or no longer.
func (s *Store) SetPrivateTargets(ctx context.Context, clientID int64, allowed bool) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM clients WHERE id = $1 FOR KEY SHARE`, clientID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrAppNotFound
		}
		if err != nil {
			return fmt.Errorf("reading app %d: %w", clientID, err)
		}
		q := `DELETE FROM webhook_private_apps WHERE client_id = $1`
		if allowed {
			q = `INSERT INTO webhook_private_apps (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING`
		}
		if _, err := tx.Exec(ctx, q, clientID); err != nil {
			return fmt.Errorf("setting whether app %d may reach private targets: %w", clientID, err)
		}
		return nil
	})
}

// PrivateApps returns the apps allowed private targets.
func (s *Store) PrivateApps(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT client_id FROM webhook_private_apps ORDER BY client_id`)
	if err != nil {
		return nil, fmt.Errorf("listing the apps allowed private targets: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading the apps allowed private targets: %w", err)
	}
	return ids, nil
}

func notify(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, channel); err != nil {
		return fmt.Errorf("notifying dispatchers: %w", err)
	}
	return nil
}
