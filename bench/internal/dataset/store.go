package dataset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
)

// Store reads the services' databases: row counts and the keys of deep
// pages; the only change it makes is VACUUM. It is the only place in the
// suite with SQL.
type Store struct {
	users, registrations, volunteers *pgx.Conn
}

// Open connects to the users, registrations and volunteers databases of s.
func Open(ctx context.Context, s *stack.Stack) (*Store, error) {
	st := &Store{}
	for _, c := range []struct {
		name string
		conn **pgx.Conn
	}{{"users", &st.users}, {"registrations", &st.registrations}, {"volunteers", &st.volunteers}} {
		conn, err := pgx.Connect(ctx, s.DatabaseURL(c.name))
		if err != nil {
			st.Close(ctx)
			return nil, fmt.Errorf("connecting to the %s database: %w", c.name, err)
		}
		*c.conn = conn
	}
	return st, nil
}

// Close closes the connections.
func (st *Store) Close(ctx context.Context) {
	for _, c := range []*pgx.Conn{st.users, st.registrations, st.volunteers} {
		if c != nil {
			_ = c.Close(ctx)
		}
	}
}

// Vacuum runs VACUUM (ANALYZE) in the users, registrations and volunteers
// databases: it sets the visibility maps that index-only scans rely on, as
// autovacuum would in production (and as pgbench -i does for the baseline's
// tables). A PostgreSQL may run with autovacuum off, as this machine's does;
// on tables vacuumed before it costs about a second.
func (st *Store) Vacuum(ctx context.Context) error {
	for _, db := range []struct {
		name string
		conn *pgx.Conn
	}{{"users", st.users}, {"registrations", st.registrations}, {"volunteers", st.volunteers}} {
		if _, err := db.conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
			return fmt.Errorf("vacuuming the %s database: %w", db.name, err)
		}
	}
	return nil
}

// Count returns the generated rows of each data set.
func (st *Store) Count(ctx context.Context, convention string) (Counts, error) {
	var c Counts
	var firstRole *int64
	if err := st.users.QueryRow(ctx, `SELECT count(*) FROM users WHERE id >= $1`, GeneratedUsersFrom).Scan(&c.Users); err != nil {
		return c, fmt.Errorf("counting generated users: %w", err)
	}
	if err := st.users.QueryRow(ctx, `SELECT count(*), min(id) FROM roles WHERE name LIKE 'generated-%'`).Scan(&c.Roles, &firstRole); err != nil {
		return c, fmt.Errorf("counting generated roles: %w", err)
	}
	if firstRole != nil {
		c.FirstRoleID = *firstRole
	}
	if err := st.registrations.QueryRow(ctx, `SELECT count(*) FROM registrations WHERE convention_id = $1 AND user_id >= $2`,
		convention, GeneratedUsersFrom).Scan(&c.Registrations); err != nil {
		return c, fmt.Errorf("counting generated registrations: %w", err)
	}
	if err := st.volunteers.QueryRow(ctx, `SELECT count(*) FROM volunteers WHERE convention_id = $1 AND user_id >= $2`,
		convention, GeneratedUsersFrom).Scan(&c.Volunteers); err != nil {
		return c, fmt.Errorf("counting generated volunteers: %w", err)
	}
	return c, nil
}

// UserAtDepth returns the id of the depth-th user (1-based) in id order: a
// search cursor continuing after it opens the page at that depth.
func (st *Store) UserAtDepth(ctx context.Context, depth int64) (int64, error) {
	var id int64
	if err := st.users.QueryRow(ctx, `SELECT id FROM users ORDER BY id OFFSET $1 LIMIT 1`, depth-1).Scan(&id); err != nil {
		return 0, fmt.Errorf("finding the user at depth %d: %w", depth, err)
	}
	return id, nil
}

// Users returns the number of users (fixture and generated).
func (st *Store) Users(ctx context.Context) (int64, error) {
	var n int64
	if err := st.users.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting users: %w", err)
	}
	return n, nil
}

// RegistrationBeforeLastPage returns the number of registrations of the
// convention and the user id after which the last full page of 100 starts.
func (st *Store) RegistrationBeforeLastPage(ctx context.Context, convention string, pageSize int64) (total, after int64, err error) {
	if err := st.registrations.QueryRow(ctx, `SELECT count(*) FROM registrations WHERE convention_id = $1`, convention).Scan(&total); err != nil {
		return 0, 0, fmt.Errorf("counting registrations: %w", err)
	}
	if total <= pageSize {
		return total, 0, nil
	}
	if err := st.registrations.QueryRow(ctx, `SELECT user_id FROM registrations WHERE convention_id = $1 ORDER BY user_id OFFSET $2 LIMIT 1`,
		convention, total-pageSize-1).Scan(&after); err != nil {
		return total, 0, fmt.Errorf("finding the registration before the last page: %w", err)
	}
	return total, after, nil
}

// RoleMemberBeforeLastPage returns the number of members of a role (global
// or of the convention) and the user id after which their last full page
// starts.
func (st *Store) RoleMemberBeforeLastPage(ctx context.Context, roleID int64, convention string, pageSize int64) (total, after int64, err error) {
	if err := st.users.QueryRow(ctx, `SELECT count(DISTINCT user_id) FROM role_members WHERE role_id = $1 AND convention_id IN ('', $2)`,
		roleID, convention).Scan(&total); err != nil {
		return 0, 0, fmt.Errorf("counting the members of role %d: %w", roleID, err)
	}
	if total <= pageSize {
		return total, 0, nil
	}
	if err := st.users.QueryRow(ctx, `SELECT DISTINCT user_id FROM role_members WHERE role_id = $1 AND convention_id IN ('', $2)
		ORDER BY user_id OFFSET $3 LIMIT 1`, roleID, convention, total-pageSize-1).Scan(&after); err != nil {
		return total, 0, fmt.Errorf("finding the member of role %d before the last page: %w", roleID, err)
	}
	return total, after, nil
}

// VolunteerRecord is a stored volunteer as a fixture writes it.
type VolunteerRecord struct {
	UserID         int64           `json:"userId"`
	ContactMethods json.RawMessage `json:"contactMethods"`
	Departments    json.RawMessage `json:"departments"`
	Options        json.RawMessage `json:"options"`
}

// Volunteers returns up to n volunteers of convention in user id order, as
// stored.
func (st *Store) Volunteers(ctx context.Context, convention string, n int) ([]VolunteerRecord, error) {
	rows, err := st.volunteers.Query(ctx, `SELECT user_id, contact_methods, departments, options FROM volunteers
		WHERE convention_id = $1 ORDER BY user_id LIMIT $2`, convention, n)
	if err != nil {
		return nil, fmt.Errorf("reading volunteers: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (VolunteerRecord, error) {
		var v VolunteerRecord
		err := r.Scan(&v.UserID, &v.ContactMethods, &v.Departments, &v.Options)
		return v, err
	})
}
