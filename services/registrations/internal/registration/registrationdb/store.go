// Package registrationdb keeps registrations in PostgreSQL: keyset-paginated reads, operators' changes and bulk import (each change with its event in the outbox), and the benchmark data generator.
package registrationdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// Store implements registration.Store.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `convention_id, user_id, badge_name, status, order_id, product_id, product_name,
	product_display_name, options, flags, created_at, updated_at`

const (
	getSQL = `SELECT ` + columns + ` FROM registrations WHERE convention_id = $1 AND user_id = $2`
	// The keyset queries read the primary key index (convention_id, user_id)
	// from the cursor on: the cost of a page does not grow with its depth.
	searchSQL = `SELECT ` + columns + ` FROM registrations
		WHERE convention_id = $1 AND user_id > $2 ORDER BY user_id LIMIT $3`
	searchUsersSQL = `SELECT ` + columns + ` FROM registrations
		WHERE convention_id = $1 AND user_id > $2 AND user_id = ANY($4::bigint[]) ORDER BY user_id LIMIT $3`
	// orderedSQL reads registrations_orders_by_user (migration 0003).
	orderedSQL = `SELECT ` + columns + ` FROM registrations
		WHERE user_id = $1 AND order_id IS NOT NULL ORDER BY created_at, convention_id`
	// updatedAt always moves forward, even for two changes within a clock tick.
	bumpUpdatedAt = `updated_at = greatest(now(), registrations.updated_at + interval '1 millisecond')`
	setStatusSQL  = `UPDATE registrations SET status = $3, ` + bumpUpdatedAt + `
		WHERE convention_id = $1 AND user_id = $2 RETURNING ` + columns
	recordPaymentSQL = `UPDATE registrations SET status = 'paid', order_id = $3, ` + bumpUpdatedAt + `
		WHERE convention_id = $1 AND user_id = $2 RETURNING ` + columns
)

// Get returns the user's registration in convention.
func (s *Store) Get(ctx context.Context, conventionID string, userID int64) (registration.Registration, error) {
	r, err := scanOne(s.pool.QueryRow(ctx, getSQL, conventionID, userID))
	if err != nil {
		return r, fmt.Errorf("reading the registration of user %d: %w", userID, err)
	}
	return r, nil
}

// Search returns up to ks.Limit+1 registrations after ks.After.
func (s *Store) Search(ctx context.Context, conventionID string, userIDs []int64, ks keyset.Seek) ([]registration.Registration, error) {
	var rows pgx.Rows
	var err error
	if userIDs != nil {
		rows, err = s.pool.Query(ctx, searchUsersSQL, conventionID, ks.After, ks.Limit+1, userIDs)
	} else {
		rows, err = s.pool.Query(ctx, searchSQL, conventionID, ks.After, ks.Limit+1)
	}
	if err != nil {
		return nil, fmt.Errorf("searching registrations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registration.Registration, error) { return scan(row) })
	if err != nil {
		return nil, fmt.Errorf("searching registrations: %w", err)
	}
	return out, nil
}

// Ordered returns the user's registrations that carry an order, in every
// convention, oldest first.
func (s *Store) Ordered(ctx context.Context, userID int64) ([]registration.Registration, error) {
	rows, err := s.pool.Query(ctx, orderedSQL, userID)
	if err != nil {
		return nil, fmt.Errorf("reading the orders of user %d: %w", userID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registration.Registration, error) { return scan(row) })
	if err != nil {
		return nil, fmt.Errorf("reading the orders of user %d: %w", userID, err)
	}
	return out, nil
}

// SetStatus changes a registration's status, with its event.
func (s *Store) SetStatus(ctx context.Context, conventionID string, userID int64, status string) (registration.Registration, error) {
	r, err := s.change(ctx, setStatusSQL, conventionID, userID, status)
	if err != nil {
		return r, fmt.Errorf("setting the status of the registration of user %d: %w", userID, err)
	}
	return r, nil
}

// RecordPayment marks a registration paid by an order, with its event.
func (s *Store) RecordPayment(ctx context.Context, conventionID string, userID int64, orderID string) (registration.Registration, error) {
	r, err := s.change(ctx, recordPaymentSQL, conventionID, userID, orderID)
	if err != nil {
		return r, fmt.Errorf("recording a payment for the registration of user %d: %w", userID, err)
	}
	return r, nil
}

// change runs an UPDATE ... RETURNING columns and writes the changed
// registration's registration-updated event in the same transaction (every
// operator's change moves updatedAt, so it is always a change).
func (s *Store) change(ctx context.Context, sql string, conventionID string, userID int64, value string) (registration.Registration, error) {
	var r registration.Registration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if r, err = scanOne(tx.QueryRow(ctx, sql, conventionID, userID, value)); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, registration.UpdatedEvent(r))
	})
	return r, err
}

func scanOne(row pgx.Row) (registration.Registration, error) {
	r, err := scan(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, registration.ErrNotFound
	}
	return r, err
}

// scan reads a row of columns, followed by extra columns into extra.
func scan(row pgx.Row, extra ...any) (registration.Registration, error) {
	var r registration.Registration
	// Options and Flags stay the JSON the database sends (jsonb, valid by
	// construction); the API renders them as they are. They are scanned into
	// plain byte slices on purpose: for a json.RawMessage target (a
	// json.Unmarshaler) pgx runs json.Unmarshal, which validates every byte
	// again, a large share of a search page's CPU. A []byte target is a copy.
	var options, flags []byte
	dest := append([]any{&r.ConventionID, &r.UserID, &r.BadgeName, &r.Status, &r.OrderID, &r.ProductID, &r.ProductName,
		&r.ProductDisplayName, &options, &flags, &r.CreatedAt, &r.UpdatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return r, err
	}
	r.Options, r.Flags = options, flags
	return r, nil
}
