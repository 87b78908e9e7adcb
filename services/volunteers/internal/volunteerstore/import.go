package volunteerstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// ImportResult counts what an import did.
type ImportResult struct {
	DepartmentsInserted, DepartmentsUpdated, DepartmentsUnchanged int64
	Inserted, Updated, Unchanged                                  int64
}

// DepartmentIDs returns the ids of the stored departments.
func (s *Store) DepartmentIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM departments`)
	if err != nil {
		return nil, fmt.Errorf("listing department ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("listing department ids: %w", err)
	}
	return ids, nil
}

const bumpUpdatedAt = `updated_at = greatest(now(), %[1]s.updated_at + interval '1 millisecond')`

// Import upserts departments and volunteers (validated by
// volunteer.FromFixture) in one transaction: all or nothing. Volunteers are
// streamed with COPY into a staging table and merged with one statement; a
// record whose data did not change keeps its updatedAt, so importing a file
// twice changes nothing.
func (s *Store) Import(ctx context.Context, deps []volunteer.Department, vols []volunteer.Volunteer) (ImportResult, error) {
	var res ImportResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("starting the import: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	for _, d := range deps {
		var inserted bool
		err := tx.QueryRow(ctx, `
			INSERT INTO departments (id, name, email, publicly_visible, leads) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, email = EXCLUDED.email,
				publicly_visible = EXCLUDED.publicly_visible, leads = EXCLUDED.leads, `+fmt.Sprintf(bumpUpdatedAt, "departments")+`
			WHERE (departments.name, departments.email, departments.publicly_visible, departments.leads)
				IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.email, EXCLUDED.publicly_visible, EXCLUDED.leads)
			RETURNING (xmax = 0)`, d.ID, d.Name, d.Email, d.PubliclyVisible, d.Leads).Scan(&inserted)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			res.DepartmentsUnchanged++
		case err != nil:
			return res, fmt.Errorf("storing department %d: %w", d.ID, err)
		case inserted:
			res.DepartmentsInserted++
		default:
			res.DepartmentsUpdated++
		}
	}

	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE volunteers_import (LIKE volunteers INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
		return res, fmt.Errorf("creating the staging table: %w", err)
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= len(vols) {
			return nil, nil
		}
		v := vols[i]
		i++
		contacts, err := json.Marshal(nonNil(v.ContactMethods))
		if err != nil {
			return nil, err
		}
		choices, err := json.Marshal(nonNil(v.Choices))
		if err != nil {
			return nil, err
		}
		options, err := json.Marshal(nonNil(v.Options))
		if err != nil {
			return nil, err
		}
		return []any{v.ConventionID, v.UserID, contacts, choices, options}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"volunteers_import"},
		[]string{"convention_id", "user_id", "contact_methods", "departments", "options"}, src); err != nil {
		return res, fmt.Errorf("copying volunteers into the staging table: %w", err)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO volunteers (convention_id, user_id, contact_methods, departments, options)
		SELECT convention_id, user_id, contact_methods, departments, options
		FROM volunteers_import ORDER BY convention_id, user_id
		ON CONFLICT (convention_id, user_id) DO UPDATE SET
			contact_methods = EXCLUDED.contact_methods, departments = EXCLUDED.departments, options = EXCLUDED.options,
			`+fmt.Sprintf(bumpUpdatedAt, "volunteers")+`
		WHERE (volunteers.contact_methods, volunteers.departments, volunteers.options)
			IS DISTINCT FROM (EXCLUDED.contact_methods, EXCLUDED.departments, EXCLUDED.options)
		RETURNING (xmax = 0)`)
	if err != nil {
		return res, fmt.Errorf("merging volunteers: %w", err)
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return res, fmt.Errorf("merging volunteers: %w", err)
	}
	for _, ins := range inserted {
		if ins {
			res.Inserted++
		} else {
			res.Updated++
		}
	}
	res.Unchanged = int64(len(vols)) - res.Inserted - res.Updated
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("committing the import: %w", err)
	}
	return res, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
