package volunteerdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

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

// importLock serializes imports (an advisory lock of the transaction).
const importLock int64 = 0x766f6c696d70 // "volimp"

const bumpUpdatedAt = `updated_at = greatest(now(), %[1]s.updated_at + interval '1 millisecond')`

// Import upserts departments and volunteers (validated by
// volunteer.FromFixture) in one transaction: all or nothing. Volunteers are
// streamed with COPY into a staging table and merged with one statement; a
// record whose data did not change keeps its updatedAt, so importing a file
// twice changes nothing. Each record inserted or changed gets its events
// (volunteer.ChangeEvents) in the outbox, in the same transaction; imports
// run one at a time, so that an event compares with the state it replaced.
func (s *Store) Import(ctx context.Context, deps []volunteer.Department, vols []volunteer.Volunteer) (volunteer.ImportResult, error) {
	var res volunteer.ImportResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("starting the import: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, importLock); err != nil {
		return res, fmt.Errorf("waiting for another import: %w", err)
	}

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
	// One statement merges the staging table and returns each record it
	// changed as stored, with its department choices as they were before
	// (NULL when inserted); records whose data did not change are not
	// returned. Their events carry them as the read query reads them: the
	// departments' names are joined here, from the names just stored (joined
	// in SQL per row, they cost about as much as the merge itself).
	names, err := departmentNames(ctx, tx)
	if err != nil {
		return res, err
	}
	rows, err := tx.Query(ctx, `
		WITH old AS (
			SELECT v.convention_id, v.user_id, v.departments
			FROM volunteers v JOIN volunteers_import i USING (convention_id, user_id)
		), merged AS (
			INSERT INTO volunteers (convention_id, user_id, contact_methods, departments, options)
			SELECT convention_id, user_id, contact_methods, departments, options
			FROM volunteers_import ORDER BY convention_id, user_id
			ON CONFLICT (convention_id, user_id) DO UPDATE SET
				contact_methods = EXCLUDED.contact_methods, departments = EXCLUDED.departments, options = EXCLUDED.options,
				`+fmt.Sprintf(bumpUpdatedAt, "volunteers")+`
			WHERE (volunteers.contact_methods, volunteers.departments, volunteers.options)
				IS DISTINCT FROM (EXCLUDED.contact_methods, EXCLUDED.departments, EXCLUDED.options)
			RETURNING convention_id, user_id, contact_methods, options, created_at, updated_at, departments, (xmax = 0) AS inserted
		)
		SELECT m.*, old.departments
		FROM merged m LEFT JOIN old ON old.convention_id = m.convention_id AND old.user_id = m.user_id
		ORDER BY m.convention_id, m.user_id`)
	if err != nil {
		return res, fmt.Errorf("merging volunteers: %w", err)
	}
	var events []outbox.Event
	for rows.Next() {
		var v volunteer.Volunteer
		var contacts, options, choices, before []byte
		var inserted bool
		if err := rows.Scan(&v.ConventionID, &v.UserID, &contacts, &options, &v.CreatedAt, &v.UpdatedAt, &choices, &inserted, &before); err != nil {
			rows.Close()
			return res, fmt.Errorf("merging volunteers: %w", err)
		}
		var now, was []volunteer.Choice
		err := decodeStored(&v, contacts, options)
		if err == nil {
			err = json.Unmarshal(choices, &now)
		}
		if err == nil && !inserted {
			err = json.Unmarshal(before, &was)
		}
		if err != nil {
			rows.Close()
			return res, fmt.Errorf("decoding the merged volunteer record of user %d: %w", v.UserID, err)
		}
		v.Departments = named(now, names)
		if inserted {
			res.Inserted++
		} else {
			res.Updated++
		}
		events = append(events, volunteer.ChangeEvents(inserted, was, v)...)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("merging volunteers: %w", err)
	}
	if err := outbox.Add(ctx, tx, events...); err != nil {
		return res, err
	}
	res.Unchanged = int64(len(vols)) - res.Inserted - res.Updated
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("committing the import: %w", err)
	}
	return res, nil
}

// departmentNames returns every department's name by id.
func departmentNames(ctx context.Context, tx pgx.Tx) (map[int64]string, error) {
	rows, err := tx.Query(ctx, `SELECT id, name FROM departments`)
	if err != nil {
		return nil, fmt.Errorf("reading department names: %w", err)
	}
	names := map[int64]string{}
	var id int64
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error { names[id] = name; return nil }); err != nil {
		return nil, fmt.Errorf("reading department names: %w", err)
	}
	return names, nil
}

// named is choices as the read query (columns) reads them: in the
// volunteer's order, with the department's name, a department that does
// not exist left out.
func named(choices []volunteer.Choice, names map[int64]string) []volunteer.Assignment {
	out := make([]volunteer.Assignment, 0, len(choices))
	for _, c := range choices {
		if name, ok := names[c.DepartmentID]; ok {
			out = append(out, volunteer.Assignment{DepartmentID: c.DepartmentID, Name: name, States: c.States})
		}
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
