// Package roledb is the PostgreSQL store of roles and role membership.
package roledb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
)

// Store implements role.Store.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// List implements role.Store.
func (s *Store) List(ctx context.Context, ks keyset.Seek) ([]role.Role, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, permissions, grantable FROM roles WHERE id > $1 ORDER BY id LIMIT $2`, ks.After, ks.Limit+1)
	if err != nil {
		return nil, fmt.Errorf("listing roles: %w", err)
	}
	roles, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (role.Role, error) {
		var x role.Role
		err := r.Scan(&x.ID, &x.Name, &x.Permissions, &x.Grantable)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing roles: %w", err)
	}
	return roles, nil
}

// HeldBy returns the roles each of userIDs holds globally or for
// conventionID, in role id order; a user that does not exist is not in the
// map. One query for the whole batch (role.Service coalesces lookups).
func (s *Store) HeldBy(ctx context.Context, userIDs []int64, conventionID string) (map[int64][]role.Held, error) {
	rows, err := s.pool.Query(ctx, `SELECT u.id, r.id, r.name, r.permissions, m.convention_id
		FROM users u
		LEFT JOIN role_members m ON m.user_id = u.id AND m.convention_id IN ('', $2)
		LEFT JOIN roles r ON r.id = m.role_id
		WHERE u.id = ANY($1)
		ORDER BY u.id, r.id, m.convention_id`, userIDs, conventionID)
	if err != nil {
		return nil, fmt.Errorf("reading the roles of %d users: %w", len(userIDs), err)
	}
	defer rows.Close()
	out := make(map[int64][]role.Held, len(userIDs))
	for rows.Next() {
		var userID int64
		var id *int64
		var name, conv *string
		var perms []string
		if err := rows.Scan(&userID, &id, &name, &perms, &conv); err != nil {
			return nil, fmt.Errorf("reading the roles of %d users: %w", len(userIDs), err)
		}
		held, ok := out[userID]
		if !ok {
			held = []role.Held{}
		}
		switch {
		case id == nil: // the user holds no role
		case len(held) > 0 && held[len(held)-1].Role.ID == *id:
			// A role held both ways (possible only through an import) is listed once.
		default:
			if perms == nil {
				perms = []string{}
			}
			scope := role.Global
			if *conv != "" {
				scope = role.Convention
			}
			held = append(held, role.Held{Role: role.Role{ID: *id, Name: *name, Permissions: perms}, Scope: scope})
		}
		out[userID] = held
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the roles of %d users: %w", len(userIDs), err)
	}
	return out, nil
}

// lockMembership starts the checks of a grant or revoke inside tx: it locks
// the user's row, so that changes to one user's roles run one at a time (and
// their events are in commit order), checks the role exists, and returns
// the user as read, for the user-updated event of the change.
func lockMembership(ctx context.Context, tx pgx.Tx, userID, roleID int64) (user.User, error) {
	u, err := userdb.Scan(tx.QueryRow(ctx, `SELECT `+userdb.Columns+` FROM users u WHERE u.id = $1 FOR UPDATE`, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, role.ErrUserNotFound
	}
	if err != nil {
		return u, fmt.Errorf("locking user %d: %w", userID, err)
	}
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM roles WHERE id = $1`, roleID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, role.ErrRoleNotFound
	}
	if err != nil {
		return u, fmt.Errorf("reading role %d: %w", roleID, err)
	}
	return u, nil
}

// Grant implements role.Store, writing the user's user-updated event with
// the membership.
func (s *Store) Grant(ctx context.Context, userID, roleID int64, conventionID string, scope role.Scope) error {
	conv := ""
	if scope == role.Convention {
		conv = conventionID
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := lockMembership(ctx, tx, userID, roleID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO role_members (role_id, user_id, convention_id)
			SELECT $1, $2, $3
			WHERE NOT EXISTS (SELECT 1 FROM role_members WHERE role_id = $1 AND user_id = $2 AND convention_id IN ('', $4))
			ON CONFLICT DO NOTHING`, roleID, userID, conv, conventionID)
		if err != nil {
			return fmt.Errorf("granting role %d to user %d: %w", roleID, userID, err)
		}
		if tag.RowsAffected() == 0 {
			return role.ErrAlreadyHeld
		}
		return outbox.Add(ctx, tx, user.UpdatedEvent(u))
	})
}

// Revoke implements role.Store, writing the user's user-updated event and
// the notice that the user's permissions narrowed (role.NarrowedEvent) with
// the removal.
func (s *Store) Revoke(ctx context.Context, userID, roleID int64, conventionID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := lockMembership(ctx, tx, userID, roleID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM role_members WHERE role_id = $1 AND user_id = $2 AND convention_id IN ('', $3)`,
			roleID, userID, conventionID)
		if err != nil {
			return fmt.Errorf("revoking role %d from user %d: %w", roleID, userID, err)
		}
		if tag.RowsAffected() == 0 {
			return role.ErrNotHeld
		}
		return outbox.Add(ctx, tx, user.UpdatedEvent(u), role.NarrowedEvent(userID))
	})
}

// Get implements role.Store.
func (s *Store) Get(ctx context.Context, roleID int64) (role.Role, error) {
	var r role.Role
	err := s.pool.QueryRow(ctx, `SELECT id, name, permissions, grantable FROM roles WHERE id = $1`, roleID).
		Scan(&r.ID, &r.Name, &r.Permissions, &r.Grantable)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, role.ErrRoleNotFound
	}
	if err != nil {
		return r, fmt.Errorf("reading role %d: %w", roleID, err)
	}
	return r, nil
}

// SetGrantable implements role.Store.
func (s *Store) SetGrantable(ctx context.Context, roleID int64, grantable bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE roles SET grantable = $2, updated_at = now() WHERE id = $1`, roleID, grantable)
	if err != nil {
		return fmt.Errorf("marking role %d grantable=%v: %w", roleID, grantable, err)
	}
	if tag.RowsAffected() == 0 {
		return role.ErrRoleNotFound
	}
	return nil
}

// SwitchConvention implements role.Store. The row lock orders replicas
// starting at once: the second sees the first's record.
func (s *Store) SwitchConvention(ctx context.Context, conventionID string) (int, error) {
	var lapsed []int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var old string
		err := tx.QueryRow(ctx, `SELECT convention_id FROM convention_told FOR UPDATE`).Scan(&old)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err = tx.Exec(ctx, `INSERT INTO convention_told (convention_id) VALUES ($1) ON CONFLICT DO NOTHING`, conventionID)
			return err
		}
		if err != nil || old == conventionID {
			return err
		}
		// Global memberships are stored with convention_id '': they stay.
		if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT user_id ORDER BY user_id), '{}') FROM role_members
			WHERE convention_id = $1 AND convention_id <> ''`, old).Scan(&lapsed); err != nil {
			return err
		}
		notices := make([]outbox.Event, len(lapsed))
		for i, id := range lapsed {
			notices[i] = role.NarrowedEvent(id)
		}
		if err := outbox.Add(ctx, tx, notices...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE convention_told SET convention_id = $1, changed_at = now()`, conventionID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recording the current convention %q: %w", conventionID, err)
	}
	return len(lapsed), nil
}

// Create implements role.Store.
func (s *Store) Create(ctx context.Context, r role.Role) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO roles (id, name, permissions, grantable) VALUES ($1, $2, $3, $4)`, r.ID, r.Name, r.Permissions, r.Grantable)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if pgErr.ConstraintName == "roles_name_key" {
			return role.ErrNameTaken
		}
		return role.ErrIDTaken
	}
	if err != nil {
		return fmt.Errorf("creating role %q: %w", r.Name, err)
	}
	return nil
}

// NextID implements role.Store.
func (s *Store) NextID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) + 1 FROM roles`).Scan(&id); err != nil {
		return 0, fmt.Errorf("finding the next role id: %w", err)
	}
	return id, nil
}
