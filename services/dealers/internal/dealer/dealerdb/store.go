// Package dealerdb keeps dealers and their applications in PostgreSQL: keyset-paginated reads, operators' changes and bulk import (each change with its dealer's event in the outbox).
package dealerdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// Store implements dealer.Store.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const dealerColumns = `id, user_id, name, email, address_line1, address_line2, address_city, address_zipcode,
	address_state, address_country, options, created_at, updated_at`

const appColumns = `id, dealer_id, convention_id, status, special_requests, table_number, dealer_request_types,
	table_type, area_id, area_name, options, created_at, updated_at`

const (
	getSQL = `SELECT ` + dealerColumns + ` FROM dealers WHERE id = $1`
	// The keyset queries read the primary key (or (user_id, id)) index from
	// the cursor on: the cost of a page does not grow with its depth.
	searchSQL      = `SELECT ` + dealerColumns + ` FROM dealers WHERE id > $1 ORDER BY id LIMIT $2`
	searchUsersSQL = `SELECT ` + dealerColumns + ` FROM dealers
		WHERE id > $1 AND user_id = ANY($3::bigint[]) ORDER BY id LIMIT $2`
	// A page's applications in one query, by the (dealer_id, convention_id, id) index.
	applicationsSQL = `SELECT ` + appColumns + ` FROM dealer_applications
		WHERE dealer_id = ANY($1::bigint[]) AND convention_id = $2 ORDER BY dealer_id, id`
	lockApplicationSQL = `SELECT ` + appColumns + ` FROM dealer_applications WHERE id = $1 FOR UPDATE`
	// updatedAt always moves forward, even for two changes within a clock tick.
	setStatusSQL = `UPDATE dealer_applications SET status = $2,
		updated_at = greatest(now(), updated_at + interval '1 millisecond') WHERE id = $1`
	deleteApplicationSQL = `DELETE FROM dealer_applications WHERE id = $1`
)

// Get returns dealer id with its applications of conventionID.
func (s *Store) Get(ctx context.Context, conventionID string, id int64) (dealer.Dealer, error) {
	return get(ctx, s.pool, conventionID, id)
}

func get(ctx context.Context, q querier, conventionID string, id int64) (dealer.Dealer, error) {
	d, err := scanDealer(q.QueryRow(ctx, getSQL, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, dealer.ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("reading dealer %d: %w", id, err)
	}
	ds := []dealer.Dealer{d}
	if err := attachApplications(ctx, q, conventionID, ds); err != nil {
		return d, err
	}
	return ds[0], nil
}

// Search returns up to ks.Limit+1 dealers after ks.After, with their
// applications of conventionID: two queries a page.
func (s *Store) Search(ctx context.Context, conventionID string, userIDs []int64, ks keyset.Seek) ([]dealer.Dealer, error) {
	var rows pgx.Rows
	var err error
	if userIDs != nil {
		rows, err = s.pool.Query(ctx, searchUsersSQL, ks.After, ks.Limit+1, userIDs)
	} else {
		rows, err = s.pool.Query(ctx, searchSQL, ks.After, ks.Limit+1)
	}
	if err != nil {
		return nil, fmt.Errorf("searching dealers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dealer.Dealer, error) { return scanDealer(row) })
	if err != nil {
		return nil, fmt.Errorf("searching dealers: %w", err)
	}
	if err := attachApplications(ctx, s.pool, conventionID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// attachApplications reads the applications of ds in conventionID in one
// query and sets each dealer's (never nil) and ConventionID.
func attachApplications(ctx context.Context, q querier, conventionID string, ds []dealer.Dealer) error {
	ids := make([]int64, len(ds))
	at := make(map[int64]int, len(ds))
	for i := range ds {
		ids[i], at[ds[i].ID] = ds[i].ID, i
		ds[i].ConventionID, ds[i].Applications = conventionID, []dealer.Application{}
	}
	if len(ds) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, applicationsSQL, ids, conventionID)
	if err != nil {
		return fmt.Errorf("reading the applications of %d dealers: %w", len(ds), err)
	}
	apps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dealer.Application, error) { return scanApplication(row) })
	if err != nil {
		return fmt.Errorf("reading the applications of %d dealers: %w", len(ds), err)
	}
	for _, a := range apps {
		i := at[a.DealerID]
		ds[i].Applications = append(ds[i].Applications, a)
	}
	return nil
}

// SetStatus changes an application's status when allow agrees and it
// differs, with its dealer's event, in one transaction.
func (s *Store) SetStatus(ctx context.Context, id int64, status string, allow func(dealer.Application) error) (dealer.Dealer, bool, error) {
	d, changed, err := s.change(ctx, id, allow, func(tx pgx.Tx, a dealer.Application) (bool, error) {
		if a.Status == status {
			return false, nil
		}
		_, err := tx.Exec(ctx, setStatusSQL, id, status)
		return true, err
	})
	if err != nil {
		return d, false, fmt.Errorf("setting the status of application %d: %w", id, err)
	}
	return d, changed, nil
}

// DeleteApplication deletes an application when allow agrees, with its
// dealer's event, in one transaction.
func (s *Store) DeleteApplication(ctx context.Context, id int64, allow func(dealer.Application) error) (dealer.Dealer, error) {
	d, _, err := s.change(ctx, id, allow, func(tx pgx.Tx, _ dealer.Application) (bool, error) {
		_, err := tx.Exec(ctx, deleteApplicationSQL, id)
		return true, err
	})
	if err != nil {
		return d, fmt.Errorf("deleting application %d: %w", id, err)
	}
	return d, nil
}

// change locks application id, runs allow then do, and reads its dealer
// with the applications of the application's convention; when do changed
// something, it writes the dealer's dealer-updated event in the same
// transaction.
func (s *Store) change(ctx context.Context, id int64, allow func(dealer.Application) error,
	do func(pgx.Tx, dealer.Application) (bool, error)) (dealer.Dealer, bool, error) {
	var d dealer.Dealer
	var changed bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := scanApplication(tx.QueryRow(ctx, lockApplicationSQL, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return dealer.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := allow(a); err != nil {
			return err
		}
		if changed, err = do(tx, a); err != nil {
			return err
		}
		if d, err = get(ctx, tx, a.ConventionID, a.DealerID); err != nil || !changed {
			return err
		}
		return outbox.Add(ctx, tx, dealer.UpdatedEvent(d))
	})
	return d, changed, err
}

// scanDealer reads a row of dealerColumns.
func scanDealer(row pgx.Row) (dealer.Dealer, error) {
	var d dealer.Dealer
	// Options stay the JSON the database sends, scanned into a plain []byte
	// (decision 0078: a json.RawMessage target would be validated again).
	var options []byte
	dest := []any{&d.ID, &d.UserID, &d.Name, &d.Email, &d.AddressLine1, &d.AddressLine2, &d.AddressCity,
		&d.AddressZipcode, &d.AddressState, &d.AddressCountry, &options, &d.CreatedAt, &d.UpdatedAt}
	if err := row.Scan(dest...); err != nil {
		return d, err
	}
	d.Options = options
	return d, nil
}

func scanApplication(row pgx.Row) (dealer.Application, error) {
	var a dealer.Application
	var requestTypes, tableType, options []byte
	if err := row.Scan(&a.ID, &a.DealerID, &a.ConventionID, &a.Status, &a.SpecialRequests, &a.TableNumber, &requestTypes,
		&tableType, &a.AreaID, &a.AreaName, &options, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return a, err
	}
	a.DealerRequestTypes, a.TableType, a.Options = requestTypes, tableType, options
	return a, nil
}
