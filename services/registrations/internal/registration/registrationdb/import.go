package registrationdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// Import upserts regs (validated by registration.FromFixture) in one
// transaction: all or nothing. Rows are streamed with COPY into a staging
// table and merged with one statement; a registration whose data did not
// change keeps its updatedAt, so importing a file twice changes nothing.
// Each registration inserted or changed gets a registration-updated event
// carrying it as stored, in the outbox, in the same transaction.
func (s *Store) Import(ctx context.Context, regs []registration.Registration) (registration.ImportResult, error) {
	var res registration.ImportResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("starting the import: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE registrations_import (LIKE registrations INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
		return res, fmt.Errorf("creating the staging table: %w", err)
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= len(regs) {
			return nil, nil
		}
		r := regs[i]
		i++
		return []any{r.ConventionID, r.UserID, r.BadgeName, r.Status, r.OrderID, r.ProductID, r.ProductName,
			r.ProductDisplayName, []byte(r.Options), []byte(r.Flags)}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"registrations_import"}, []string{"convention_id", "user_id", "badge_name",
		"status", "order_id", "product_id", "product_name", "product_display_name", "options", "flags"}, src); err != nil {
		return res, fmt.Errorf("copying registrations into the staging table: %w", err)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO registrations (convention_id, user_id, badge_name, status, order_id, product_id, product_name,
			product_display_name, options, flags)
		SELECT convention_id, user_id, badge_name, status, order_id, product_id, product_name, product_display_name, options, flags
		FROM registrations_import ORDER BY convention_id, user_id
		ON CONFLICT (convention_id, user_id) DO UPDATE SET
			badge_name = EXCLUDED.badge_name, status = EXCLUDED.status, order_id = EXCLUDED.order_id,
			product_id = EXCLUDED.product_id, product_name = EXCLUDED.product_name,
			product_display_name = EXCLUDED.product_display_name, options = EXCLUDED.options, flags = EXCLUDED.flags,
			`+bumpUpdatedAt+`
		WHERE (registrations.badge_name, registrations.status, registrations.order_id, registrations.product_id,
			registrations.product_name, registrations.product_display_name, registrations.options, registrations.flags)
			IS DISTINCT FROM
			(EXCLUDED.badge_name, EXCLUDED.status, EXCLUDED.order_id, EXCLUDED.product_id, EXCLUDED.product_name,
			 EXCLUDED.product_display_name, EXCLUDED.options, EXCLUDED.flags)
		RETURNING `+columns+`, (xmax = 0)`)
	if err != nil {
		return res, fmt.Errorf("merging registrations: %w", err)
	}
	var events []outbox.Event
	for rows.Next() {
		var inserted bool
		r, err := scan(rows, &inserted)
		if err != nil {
			rows.Close()
			return res, fmt.Errorf("merging registrations: %w", err)
		}
		if inserted {
			res.Inserted++
		} else {
			res.Updated++
		}
		events = append(events, registration.UpdatedEvent(r))
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("merging registrations: %w", err)
	}
	if err := outbox.Add(ctx, tx, events...); err != nil {
		return res, err
	}
	res.Unchanged = int64(len(regs)) - res.Inserted - res.Updated
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("committing the import: %w", err)
	}
	return res, nil
}
