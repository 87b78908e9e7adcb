package dealerdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// bumpUpdatedAt moves updated_at forward, even for two changes within a clock tick.
func bumpUpdatedAt(table string) string {
	return `updated_at = greatest(now(), ` + table + `.updated_at + interval '1 millisecond')`
}

// Import upserts dealers (validated by dealer.FromFixture) and their
// applications of convention in one transaction: all or nothing. Rows are
// streamed with COPY into staging tables and merged by set statements; a row
// whose data did not change is not written, so importing a file twice
// changes nothing. A dealer that lists its applications (Applications not
// nil) loses those of convention the file no longer lists. Each dealer
// inserted or changed (itself or one of its applications) gets a
// dealer-updated event carrying it as stored, in the same transaction.
func (s *Store) Import(ctx context.Context, convention string, dealers []dealer.Dealer) (dealer.ImportResult, error) {
	var res dealer.ImportResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("starting the import: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := stage(ctx, tx, dealers); err != nil {
		return res, err
	}
	if err := checkApplicationOwners(ctx, tx, convention); err != nil {
		return res, err
	}
	inserted := map[int64]bool{}
	changed := map[int64]bool{}
	if err := collectIDs(ctx, tx, `
		INSERT INTO dealers (id, user_id, name, email, address_line1, address_line2, address_city, address_zipcode,
			address_state, address_country, options)
		SELECT id, user_id, name, email, address_line1, address_line2, address_city, address_zipcode,
			address_state, address_country, options FROM dealers_import ORDER BY id
		ON CONFLICT (id) DO UPDATE SET
			user_id = EXCLUDED.user_id, name = EXCLUDED.name, email = EXCLUDED.email,
			address_line1 = EXCLUDED.address_line1, address_line2 = EXCLUDED.address_line2,
			address_city = EXCLUDED.address_city, address_zipcode = EXCLUDED.address_zipcode,
			address_state = EXCLUDED.address_state, address_country = EXCLUDED.address_country,
			options = EXCLUDED.options, `+bumpUpdatedAt("dealers")+`
		WHERE (dealers.user_id, dealers.name, dealers.email, dealers.address_line1, dealers.address_line2,
			dealers.address_city, dealers.address_zipcode, dealers.address_state, dealers.address_country, dealers.options)
			IS DISTINCT FROM
			(EXCLUDED.user_id, EXCLUDED.name, EXCLUDED.email, EXCLUDED.address_line1, EXCLUDED.address_line2,
			 EXCLUDED.address_city, EXCLUDED.address_zipcode, EXCLUDED.address_state, EXCLUDED.address_country, EXCLUDED.options)
		RETURNING id, (xmax = 0)`, changed, inserted); err != nil {
		return res, fmt.Errorf("merging dealers: %w", err)
	}
	if err := collectIDs(ctx, tx, `
		DELETE FROM dealer_applications a USING dealers_listing l
		WHERE a.dealer_id = l.id AND a.convention_id = $1
		  AND NOT EXISTS (SELECT 1 FROM applications_import i WHERE i.id = a.id)
		RETURNING a.dealer_id, false`, changed, nil, convention); err != nil {
		return res, fmt.Errorf("removing applications the file no longer lists: %w", err)
	}
	if err := collectIDs(ctx, tx, `
		INSERT INTO dealer_applications (id, dealer_id, convention_id, status, special_requests, table_number,
			dealer_request_types, table_type, area_id, area_name, options)
		SELECT id, dealer_id, convention_id, status, special_requests, table_number, dealer_request_types,
			table_type, area_id, area_name, options FROM applications_import ORDER BY id
		ON CONFLICT (id) DO UPDATE SET
			status = EXCLUDED.status, special_requests = EXCLUDED.special_requests, table_number = EXCLUDED.table_number,
			dealer_request_types = EXCLUDED.dealer_request_types, table_type = EXCLUDED.table_type,
			area_id = EXCLUDED.area_id, area_name = EXCLUDED.area_name, options = EXCLUDED.options,
			`+bumpUpdatedAt("dealer_applications")+`
		WHERE (dealer_applications.status, dealer_applications.special_requests, dealer_applications.table_number,
			dealer_applications.dealer_request_types, dealer_applications.table_type, dealer_applications.area_id,
			dealer_applications.area_name, dealer_applications.options)
			IS DISTINCT FROM
			(EXCLUDED.status, EXCLUDED.special_requests, EXCLUDED.table_number, EXCLUDED.dealer_request_types,
			 EXCLUDED.table_type, EXCLUDED.area_id, EXCLUDED.area_name, EXCLUDED.options)
		RETURNING dealer_id, false`, changed, nil); err != nil {
		return res, fmt.Errorf("merging applications: %w", err)
	}
	if err := addEvents(ctx, tx, convention, changed); err != nil {
		return res, err
	}
	res.Inserted = int64(len(inserted))
	res.Updated = int64(len(changed)) - res.Inserted
	res.Unchanged = int64(len(dealers)) - res.Inserted - res.Updated
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("committing the import: %w", err)
	}
	return res, nil
}

// stage copies the dealers, their applications and the ids of the dealers
// that list their applications into temporary tables.
func stage(ctx context.Context, tx pgx.Tx, dealers []dealer.Dealer) error {
	for _, sql := range []string{
		`CREATE TEMP TABLE dealers_import (LIKE dealers INCLUDING DEFAULTS) ON COMMIT DROP`,
		`CREATE TEMP TABLE applications_import (LIKE dealer_applications INCLUDING DEFAULTS) ON COMMIT DROP`,
		`CREATE TEMP TABLE dealers_listing (id bigint PRIMARY KEY) ON COMMIT DROP`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("creating the staging tables: %w", err)
		}
	}
	var dealerRows, appRows, listing [][]any
	for _, d := range dealers {
		dealerRows = append(dealerRows, []any{d.ID, d.UserID, d.Name, d.Email, d.AddressLine1, d.AddressLine2,
			d.AddressCity, d.AddressZipcode, d.AddressState, d.AddressCountry, []byte(d.Options)})
		if d.Applications != nil {
			listing = append(listing, []any{d.ID})
		}
		for _, a := range d.Applications {
			appRows = append(appRows, []any{a.ID, d.ID, a.ConventionID, a.Status, a.SpecialRequests, a.TableNumber,
				[]byte(a.DealerRequestTypes), []byte(a.TableType), a.AreaID, a.AreaName, []byte(a.Options)})
		}
	}
	copies := []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"dealers_import", []string{"id", "user_id", "name", "email", "address_line1", "address_line2", "address_city",
			"address_zipcode", "address_state", "address_country", "options"}, dealerRows},
		{"applications_import", []string{"id", "dealer_id", "convention_id", "status", "special_requests", "table_number",
			"dealer_request_types", "table_type", "area_id", "area_name", "options"}, appRows},
		{"dealers_listing", []string{"id"}, listing},
	}
	for _, c := range copies {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return fmt.Errorf("copying into %s: %w", c.table, err)
		}
	}
	return nil
}

// checkApplicationOwners refuses the import when an application id of the
// file is stored for another dealer or convention: an id names one
// application for good.
func checkApplicationOwners(ctx context.Context, tx pgx.Tx, convention string) error {
	rows, err := tx.Query(ctx, `
		SELECT i.id, i.dealer_id, a.dealer_id, a.convention_id
		FROM applications_import i JOIN dealer_applications a ON a.id = i.id
		WHERE a.dealer_id <> i.dealer_id OR a.convention_id <> $1 ORDER BY i.id LIMIT 20`, convention)
	if err != nil {
		return fmt.Errorf("checking application ids: %w", err)
	}
	var problems []string
	for rows.Next() {
		var id, dealerID, storedDealer int64
		var storedConvention string
		if err := rows.Scan(&id, &dealerID, &storedDealer, &storedConvention); err != nil {
			rows.Close()
			return fmt.Errorf("checking application ids: %w", err)
		}
		problems = append(problems, fmt.Sprintf("application %d of dealer %d is stored for dealer %d in convention %s",
			id, dealerID, storedDealer, storedConvention))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("checking application ids: %w", err)
	}
	if len(problems) > 0 {
		return errors.New("fixture rejected, nothing was stored:\n  " + strings.Join(problems, "\n  "))
	}
	return nil
}

// collectIDs runs sql, which returns (dealer id, inserted) rows, adding each
// id to changed and, when inserted, to inserted.
func collectIDs(ctx context.Context, tx pgx.Tx, sql string, changed, inserted map[int64]bool, args ...any) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var ins bool
		if err := rows.Scan(&id, &ins); err != nil {
			return err
		}
		changed[id] = true
		if ins && inserted != nil {
			inserted[id] = true
		}
	}
	return rows.Err()
}

// addEvents writes a dealer-updated event for each changed dealer, as
// stored with its applications of convention, in id order.
func addEvents(ctx context.Context, tx pgx.Tx, convention string, changed map[int64]bool) error {
	if len(changed) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(changed))
	for id := range changed {
		ids = append(ids, id)
	}
	rows, err := tx.Query(ctx, `SELECT `+dealerColumns+` FROM dealers WHERE id = ANY($1::bigint[]) ORDER BY id`, ids)
	if err != nil {
		return fmt.Errorf("reading the changed dealers: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dealer.Dealer, error) { return scanDealer(row) })
	if err != nil {
		return fmt.Errorf("reading the changed dealers: %w", err)
	}
	if err := attachApplications(ctx, tx, convention, ds); err != nil {
		return err
	}
	events := make([]outbox.Event, len(ds))
	for i, d := range ds {
		events[i] = dealer.UpdatedEvent(d)
	}
	return outbox.Add(ctx, tx, events...)
}
