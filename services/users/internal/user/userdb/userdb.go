// Package userdb is the PostgreSQL store of users.
package userdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// Store implements user.Store.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Columns are the user columns every read selects, in scan order.
const Columns = `u.id, u.username, u.email, u.email_verified, u.identity_verified, u.first_name, u.last_name,
	u.preferred_name, u.born_at, u.phone, u.newsletter, u.profile_picture_url,
	u.address_line1, u.address_line2, u.address_city, u.address_state, u.address_zipcode, u.address_country, u.updated_at`

// Scan reads one row of Columns.
func Scan(row pgx.Row) (user.User, error) {
	var u user.User
	var line1, city, state, zip, country *string
	var addr user.Address
	if err := row.Scan(&u.ID, &u.Username, &u.Email, &u.EmailVerified, &u.IdentityVerified, &u.FirstName, &u.LastName,
		&u.PreferredName, &u.BornAt, &u.Phone, &u.Newsletter, &u.ProfilePictureURL,
		&line1, &addr.Line2, &city, &state, &zip, &country, &u.UpdatedAt); err != nil {
		return u, err
	}
	if line1 != nil {
		addr.Line1, addr.City, addr.State, addr.Zipcode, addr.Country = *line1, deref(city), deref(state), deref(zip), deref(country)
		u.Address = &addr
	}
	return u, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Get implements user.Store.
func (s *Store) Get(ctx context.Context, id int64) (user.User, error) {
	u, err := Scan(s.pool.QueryRow(ctx, `SELECT `+Columns+` FROM users u WHERE u.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, user.ErrNotFound
	}
	if err != nil {
		return u, fmt.Errorf("reading user %d: %w", id, err)
	}
	return u, nil
}

// Search queries. Each walks an index in id order and stops after the page:
// users_pkey without a filter, users_email_lower_key for an email, and the
// role_members primary key (role_id, user_id, ...) for a role.
const (
	searchAll = `SELECT ` + Columns + ` FROM users u WHERE u.id > $1 ORDER BY u.id LIMIT $2`

	searchEmail = `SELECT ` + Columns + ` FROM users u
		WHERE lower(u.email) = lower($3) AND u.id > $1 ORDER BY u.id LIMIT $2`

	searchRole = `SELECT ` + Columns + ` FROM (
			SELECT DISTINCT m.user_id FROM role_members m
			WHERE m.role_id = $3 AND m.convention_id IN ('', $4) AND m.user_id > $1
			ORDER BY m.user_id LIMIT $2
		) ids JOIN users u ON u.id = ids.user_id
		ORDER BY ids.user_id`

	searchRoleEmail = `SELECT ` + Columns + ` FROM users u
		WHERE lower(u.email) = lower($3) AND u.id > $1
		  AND EXISTS (SELECT 1 FROM role_members m WHERE m.role_id = $4 AND m.user_id = u.id AND m.convention_id IN ('', $5))
		ORDER BY u.id LIMIT $2`
)

// SearchSQL returns the query and arguments Search runs (EXPLAIN tests use it).
func SearchSQL(f user.Filter, conventionID string, ks keyset.Seek) (string, []any) {
	limit := ks.Limit + 1
	switch {
	case f.RoleID != 0 && f.Email != "":
		return searchRoleEmail, []any{ks.After, limit, f.Email, f.RoleID, conventionID}
	case f.RoleID != 0:
		return searchRole, []any{ks.After, limit, f.RoleID, conventionID}
	case f.Email != "":
		return searchEmail, []any{ks.After, limit, f.Email}
	default:
		return searchAll, []any{ks.After, limit}
	}
}

// Search implements user.Store.
func (s *Store) Search(ctx context.Context, f user.Filter, conventionID string, ks keyset.Seek) ([]user.User, error) {
	q, args := SearchSQL(f, conventionID, ks)
	return s.list(ctx, "searching users", q, args...)
}

// GetMany implements user.Store.
func (s *Store) GetMany(ctx context.Context, ids []int64) ([]user.User, error) {
	return s.list(ctx, "reading users", `SELECT `+Columns+` FROM users u WHERE u.id = ANY($1) ORDER BY u.id`, ids)
}

// Summaries implements user.Store: the summary's seven columns, not the
// user's eighteen (registration and volunteer pages ask for 100 at a time).
func (s *Store) Summaries(ctx context.Context, ids []int64) ([]user.Summary, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, username, email, first_name, last_name, preferred_name, phone
		FROM users WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading user summaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (user.Summary, error) {
		var u user.Summary
		err := r.Scan(&u.ID, &u.Username, &u.Email, &u.FirstName, &u.LastName, &u.PreferredName, &u.Phone)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading user summaries: %w", err)
	}
	return out, nil
}

func (s *Store) list(ctx context.Context, what, q string, args ...any) ([]user.User, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (user.User, error) { return Scan(r) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return users, nil
}

// Credentials implements user.Store. Usernames never contain "@" and emails
// always do, so at most one user matches.
func (s *Store) Credentials(ctx context.Context, login string) (int64, string, error) {
	var id int64
	var hash *string
	err := s.pool.QueryRow(ctx, `SELECT id, password_hash FROM users
		WHERE lower(username) = lower($1) OR lower(email) = lower($1) LIMIT 1`, login).Scan(&id, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", user.ErrNotFound
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading credentials: %w", err)
	}
	if hash == nil {
		return id, "", nil
	}
	return id, *hash, nil
}

// Create implements user.Store: the user and its user-updated event (a
// new user's service view appears), in one transaction.
func (s *Store) Create(ctx context.Context, u user.User, passwordHash *string) error {
	a := u.Address
	if a == nil {
		a = &user.Address{}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		stored, err := Scan(tx.QueryRow(ctx, `INSERT INTO users AS u (id, username, email, password_hash, email_verified, identity_verified,
			first_name, last_name, preferred_name, born_at, phone, newsletter, profile_picture_url,
			address_line1, address_line2, address_city, address_state, address_zipcode, address_country)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
			RETURNING `+Columns,
			u.ID, u.Username, u.Email, passwordHash, u.EmailVerified, u.IdentityVerified,
			u.FirstName, u.LastName, u.PreferredName, u.BornAt, u.Phone, u.Newsletter, u.ProfilePictureURL,
			ifAddr(u, a.Line1), ifAddrPtr(u, a.Line2), ifAddr(u, a.City), ifAddr(u, a.State), ifAddr(u, a.Zipcode), ifAddr(u, a.Country)))
		if err != nil {
			return err
		}
		return outbox.Add(ctx, tx, user.UpdatedEvent(stored))
	})
	if err != nil {
		if field := DuplicateField(err); field != "" {
			return &user.DuplicateError{Field: field}
		}
		return fmt.Errorf("creating user %d: %w", u.ID, err)
	}
	return nil
}

func ifAddr(u user.User, v string) *string {
	if u.Address == nil {
		return nil
	}
	return &v
}

func ifAddrPtr(u user.User, v *string) *string {
	if u.Address == nil {
		return nil
	}
	return v
}

// DuplicateField names the field of a unique violation on users, or "".
func DuplicateField(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return ""
	}
	switch pgErr.ConstraintName {
	case "users_pkey":
		return "id"
	case "users_email_lower_key":
		return "email"
	case "users_username_lower_key":
		return "username"
	}
	return "a unique field"
}

// SetPassword implements user.Store.
func (s *Store) SetPassword(ctx context.Context, id int64, passwordHash string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1`, id, passwordHash, time.Now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return user.ErrNotFound
		}
		return outbox.Add(ctx, tx, user.SignedOutEvent(id, user.SignOutPasswordChanged))
	})
	if err != nil && !errors.Is(err, user.ErrNotFound) {
		return fmt.Errorf("setting the password of user %d: %w", id, err)
	}
	return err
}

// SignOut implements user.Store.
func (s *Store) SignOut(ctx context.Context, id int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)`, id).Scan(&found); err != nil {
			return err
		}
		if !found {
			return user.ErrNotFound
		}
		return outbox.Add(ctx, tx, user.SignedOutEvent(id, user.SignOutOperator))
	})
	if err != nil && !errors.Is(err, user.ErrNotFound) {
		return fmt.Errorf("signing user %d out: %w", id, err)
	}
	return err
}

// NextID implements user.Store: one above the highest id in use.
func (s *Store) NextID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) + 1 FROM users`).Scan(&id); err != nil {
		return 0, fmt.Errorf("finding the next user id: %w", err)
	}
	return id, nil
}
