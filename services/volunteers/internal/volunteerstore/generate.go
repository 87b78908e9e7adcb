package volunteerstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// GenerateOptions describe synthetic volunteers for benchmarks.
type GenerateOptions struct {
	ConventionID string
	Count        int64
	// UsersFrom and UsersTo bound the user ids; the Count volunteers are spread
	// evenly over the range, which must hold at least Count ids.
	UsersFrom, UsersTo int64
	// Departments is how many departments (ids 1..Departments) to create when
	// missing; volunteers choose among them.
	Departments int64
	Progress    io.Writer
}

// Generate writes synthetic departments and volunteers with COPY in one
// transaction. It refuses to touch a range where the convention already has
// volunteers.
func (s *Store) Generate(ctx context.Context, o GenerateOptions) (int64, error) {
	if o.Count < 1 || o.UsersFrom < 1 || o.UsersTo < o.UsersFrom || o.Departments < 1 {
		return 0, errors.New("generate: need --volunteers >= 1, --departments >= 1 and 1 <= --users-from <= --users-to")
	}
	span := o.UsersTo - o.UsersFrom + 1
	if span < o.Count {
		return 0, fmt.Errorf("generate: users %d..%d are %d ids, fewer than the %d volunteers asked for (one per user)", o.UsersFrom, o.UsersTo, span, o.Count)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("generate: starting: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var existing int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM volunteers WHERE convention_id = $1 AND user_id BETWEEN $2 AND $3`,
		o.ConventionID, o.UsersFrom, o.UsersTo).Scan(&existing); err != nil {
		return 0, fmt.Errorf("generate: checking the range: %w", err)
	}
	if existing > 0 {
		return 0, fmt.Errorf("generate: convention %s already has %d volunteers of users %d..%d; pick another range or convention", o.ConventionID, existing, o.UsersFrom, o.UsersTo)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO departments (id, name, email, publicly_visible, leads)
		SELECT g, 'Department ' || g, 'dept' || g || '@example.org', g % 4 <> 0, ARRAY[$2 + g - 1]
		FROM generate_series(1, $1::bigint) g
		ON CONFLICT (id) DO NOTHING`, o.Departments, o.UsersFrom); err != nil {
		return 0, fmt.Errorf("generate: departments: %w", err)
	}
	var progress *bulkload.Progress
	if o.Progress != nil {
		progress = bulkload.NewProgress(o.Progress, "volunteers", o.Count)
	}
	states := []string{`["experience","interest"]`, `["interest"]`, `["avoid"]`, `["assignment"]`, `["interest","request"]`}
	sizes := []string{"S", "M", "L", "XL"}
	n, err := bulkload.Copy(ctx, tx, pgx.Identifier{"volunteers"}, []string{"convention_id", "user_id", "contact_methods", "departments", "options"}, o.Count,
		func(i int64) []any {
			userID := o.UsersFrom + i*span/o.Count
			id := strconv.FormatInt(userID, 10)
			contacts := []byte(`[{"name":"email","isPrimary":true,"value":"user` + id + `@example.org"},{"name":"discord","isPrimary":false,"value":"user` + id + `"}]`)
			d1, d2 := i%o.Departments+1, (i+7)%o.Departments+1
			deps := `[{"id":` + strconv.FormatInt(d1, 10) + `,"states":` + states[i%5] + `}`
			if d2 != d1 {
				deps += `,{"id":` + strconv.FormatInt(d2, 10) + `,"states":` + states[(i+2)%5] + `}`
			}
			options := []byte(`[{"name":"Shirt size","type":"select","value":"` + sizes[i%4] + `"},{"name":"Hours available","type":"number","value":` + strconv.FormatInt(4+i%20, 10) + `}]`)
			return []any{o.ConventionID, userID, contacts, []byte(deps + `]`), options}
		}, progress)
	if err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	if _, err := tx.Exec(ctx, `ANALYZE volunteers; ANALYZE departments`); err != nil {
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
