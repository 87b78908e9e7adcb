package registrationstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// GenerateOptions describe synthetic registrations for benchmarks.
type GenerateOptions struct {
	ConventionID string
	Count        int64
	// UsersFrom and UsersTo bound the user ids; the Count users are spread
	// evenly over the range, which must hold at least Count ids.
	UsersFrom, UsersTo int64
	Progress           io.Writer
}

// Generate writes synthetic registrations with COPY in one transaction. It
// refuses to touch a range where the convention already has registrations.
func (s *Store) Generate(ctx context.Context, o GenerateOptions) (int64, error) {
	if o.Count < 1 || o.UsersFrom < 1 || o.UsersTo < o.UsersFrom {
		return 0, errors.New("generate: need --registrations >= 1 and 1 <= --users-from <= --users-to")
	}
	span := o.UsersTo - o.UsersFrom + 1
	if span < o.Count {
		return 0, fmt.Errorf("generate: users %d..%d are %d ids, fewer than the %d registrations asked for (one per user)", o.UsersFrom, o.UsersTo, span, o.Count)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("generate: starting: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var existing int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM registrations WHERE convention_id = $1 AND user_id BETWEEN $2 AND $3`,
		o.ConventionID, o.UsersFrom, o.UsersTo).Scan(&existing); err != nil {
		return 0, fmt.Errorf("generate: checking the range: %w", err)
	}
	if existing > 0 {
		return 0, fmt.Errorf("generate: convention %s already has %d registrations of users %d..%d; pick another range or convention", o.ConventionID, existing, o.UsersFrom, o.UsersTo)
	}
	var progress *bulkload.Progress
	if o.Progress != nil {
		progress = bulkload.NewProgress(o.Progress, "registrations", o.Count)
	}
	products := []struct{ id, name, display string }{{"5", "Attendee", "Attendee Weekend"}, {"6", "Staff", "Staff Weekend"}, {"7", "Sponsor", "Sponsor Weekend"}, {"8", "Day Pass", ""}}
	days := [][]byte{[]byte(`["Fri"]`), []byte(`["Sat"]`), []byte(`["Fri","Sat"]`), []byte(`["Fri","Sat","Sun"]`)}
	sizes := []string{"S", "M", "L", "XL"}
	n, err := bulkload.Copy(ctx, tx, pgx.Identifier{"registrations"}, []string{"convention_id", "user_id", "badge_name", "status",
		"order_id", "product_id", "product_name", "product_display_name", "options", "flags"}, o.Count,
		func(i int64) []any {
			userID := o.UsersFrom + i*span/o.Count
			p := products[i%int64(len(products))]
			var display *string
			if p.display != "" {
				display = &p.display
			}
			status, order := "paid", any("G"+strconv.FormatInt(100000+i, 10))
			if i%5 == 4 {
				status, order = "unpaid", nil
			}
			options := []byte(`[{"name":"Days","type":"multi","value":` + string(days[i%4]) + `},` +
				`{"name":"Shirt size","type":"select","value":"` + sizes[i%4] + `"},` +
				`{"name":"Dinner guests","type":"number","value":` + strconv.FormatInt(i%3, 10) + `}]`)
			flags := []byte(`[]`)
			if i%20 == 0 {
				flags = []byte(`[{"id":"3","shortName":"VIP"}]`)
			}
			return []any{o.ConventionID, userID, "Badge " + strconv.FormatInt(userID, 10), status, order, p.id, p.name, display, options, flags}
		}, progress)
	if err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	if _, err := tx.Exec(ctx, `ANALYZE registrations`); err != nil {
		return 0, fmt.Errorf("generate: analyzing: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("generate: committing: %w", err)
	}
	if progress != nil {
		progress.Finish()
	}
	return n, nil
}
