// Package volunteerdb keeps volunteers and departments in PostgreSQL: keyset-paginated reads, the volunteer status, bulk import and the benchmark data generator.
package volunteerdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// Store implements volunteer.Store.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// columns renders a volunteer with its departments' names joined in, in the
// order the volunteer gave them.
const columns = `v.convention_id, v.user_id, v.contact_methods, v.options, v.created_at, v.updated_at,
	COALESCE((SELECT jsonb_agg(jsonb_build_object('id', d.id, 'name', d.name, 'states', c.value -> 'states') ORDER BY c.ord)
	          FROM jsonb_array_elements(v.departments) WITH ORDINALITY AS c(value, ord)
	          JOIN departments d ON d.id = (c.value ->> 'id')::bigint), '[]'::jsonb)`

const (
	getSQL = `SELECT ` + columns + ` FROM volunteers v WHERE v.convention_id = $1 AND v.user_id = $2`
	// The keyset query reads the primary key index (convention_id, user_id)
	// from the cursor on: the cost of a page does not grow with its depth.
	searchSQL = `SELECT ` + columns + ` FROM volunteers v
		WHERE v.convention_id = $1 AND v.user_id > $2 ORDER BY v.user_id LIMIT $3`
	departmentsSQL = `SELECT id, name, email, publicly_visible, leads FROM departments ORDER BY id`
	statusSQL      = `SELECT u.id,
		EXISTS (SELECT 1 FROM volunteers v WHERE v.convention_id = $1 AND v.user_id = u.id),
		EXISTS (SELECT 1 FROM departments d WHERE d.leads @> ARRAY[u.id])
		FROM unnest($2::bigint[]) AS u(id)`
)

// Get returns the user's volunteer record in convention.
func (s *Store) Get(ctx context.Context, conventionID string, userID int64) (volunteer.Volunteer, error) {
	v, err := scan(s.pool.QueryRow(ctx, getSQL, conventionID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, volunteer.ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("reading the volunteer record of user %d: %w", userID, err)
	}
	return v, nil
}

// Search returns up to ks.Limit+1 volunteers after ks.After.
func (s *Store) Search(ctx context.Context, conventionID string, ks keyset.Seek) ([]volunteer.Volunteer, error) {
	rows, err := s.pool.Query(ctx, searchSQL, conventionID, ks.After, ks.Limit+1)
	if err != nil {
		return nil, fmt.Errorf("searching volunteers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (volunteer.Volunteer, error) { return scan(row) })
	if err != nil {
		return nil, fmt.Errorf("searching volunteers: %w", err)
	}
	return out, nil
}

// Departments returns every department.
func (s *Store) Departments(ctx context.Context) ([]volunteer.Department, error) {
	rows, err := s.pool.Query(ctx, departmentsSQL)
	if err != nil {
		return nil, fmt.Errorf("listing departments: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (volunteer.Department, error) {
		var d volunteer.Department
		err := row.Scan(&d.ID, &d.Name, &d.Email, &d.PubliclyVisible, &d.Leads)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing departments: %w", err)
	}
	return out, nil
}

// StatusBy tells, for each of userIDs, whether the user volunteers in
// convention and leads a department: one query for the batch.
func (s *Store) StatusBy(ctx context.Context, conventionID string, userIDs []int64) (map[int64]volunteer.Status, error) {
	rows, err := s.pool.Query(ctx, statusSQL, conventionID, userIDs)
	if err != nil {
		return nil, fmt.Errorf("reading the volunteer status of %d users: %w", len(userIDs), err)
	}
	defer rows.Close()
	out := make(map[int64]volunteer.Status, len(userIDs))
	for rows.Next() {
		var id int64
		var st volunteer.Status
		if err := rows.Scan(&id, &st.IsVolunteer, &st.IsDepartmentLead); err != nil {
			return nil, fmt.Errorf("reading the volunteer status of %d users: %w", len(userIDs), err)
		}
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the volunteer status of %d users: %w", len(userIDs), err)
	}
	return out, nil
}

func scan(row pgx.Row) (volunteer.Volunteer, error) {
	var v volunteer.Volunteer
	var contacts, options, departments []byte
	if err := row.Scan(&v.ConventionID, &v.UserID, &contacts, &options, &v.CreatedAt, &v.UpdatedAt, &departments); err != nil {
		return v, err
	}
	if err := decodeStored(&v, contacts, options); err != nil {
		return v, err
	}
	var deps []struct {
		ID     int64    `json:"id"`
		Name   string   `json:"name"`
		States []string `json:"states"`
	}
	if err := json.Unmarshal(departments, &deps); err != nil {
		return v, fmt.Errorf("decoding the departments of user %d: %w", v.UserID, err)
	}
	v.Departments = make([]volunteer.Assignment, len(deps))
	for i, d := range deps {
		v.Departments[i] = volunteer.Assignment{DepartmentID: d.ID, Name: d.Name, States: d.States}
	}
	return v, nil
}

// decodeStored fills the contact methods and options of v from their
// stored JSON.
func decodeStored(v *volunteer.Volunteer, contacts, options []byte) error {
	if err := json.Unmarshal(contacts, &v.ContactMethods); err != nil {
		return fmt.Errorf("decoding the contact methods of user %d: %w", v.UserID, err)
	}
	if err := json.Unmarshal(options, &v.Options); err != nil {
		return fmt.Errorf("decoding the options of user %d: %w", v.UserID, err)
	}
	return nil
}
