// Package userimportdb is the PostgreSQL side of bulk loading: the fixture import
// (COPY into temporary tables, then set-based upserts in one transaction) and
// the generator's COPY of synthetic users.
package userimportdb

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
)

// Store implements userimport.Store.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// userColumns are written by import and generate, in values() order.
var userColumns = []string{"id", "username", "email", "password_hash", "email_verified", "identity_verified",
	"first_name", "last_name", "preferred_name", "born_at", "phone", "newsletter", "profile_picture_url",
	"address_line1", "address_line2", "address_city", "address_state", "address_zipcode", "address_country"}

func values(u user.User, hash *string) []any {
	v := []any{u.ID, u.Username, u.Email, hash, u.EmailVerified, u.IdentityVerified,
		u.FirstName, u.LastName, u.PreferredName, u.BornAt, u.Phone, u.Newsletter, u.ProfilePictureURL,
		nil, nil, nil, nil, nil, nil}
	if a := u.Address; a != nil {
		v[13], v[14], v[15], v[16], v[17], v[18] = a.Line1, a.Line2, a.City, a.State, a.Zipcode, a.Country
	}
	return v
}

// PasswordHashes implements userimport.Store.
func (s *Store) PasswordHashes(ctx context.Context, ids []int64) (map[int64]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, password_hash FROM users WHERE id = ANY($1) AND password_hash IS NOT NULL`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading stored password hashes: %w", err)
	}
	out := map[int64]string{}
	var id int64
	var h string
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error { out[id] = h; return nil })
	if err != nil {
		return nil, fmt.Errorf("reading stored password hashes: %w", err)
	}
	return out, nil
}

// Import implements userimport.Store. A user it creates, whose service view
// it changes or whose memberships it changes gets one user-updated event,
// carrying the user as read at the end, in the same transaction. The users
// it returns lost a membership, or hold (globally or for the batch's
// convention) a role that lost a permission; each gets a
// role.NarrowedEvent notice in the same transaction too.
func (s *Store) Import(ctx context.Context, b userimport.Batch) (userimport.Stats, []int64, error) {
	var st userimport.Stats
	var narrowed []int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var problems fixture.Problems
		shrunk, err := importRoles(ctx, tx, b.Roles, b.ConventionID, &st, &problems)
		if err != nil {
			return err
		}
		changed, rekeyed, err := importUsers(ctx, tx, b.Users, &st, &problems)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return &userimport.RejectedError{Problems: problems}
		}
		members, removedFrom, err := importMemberships(ctx, tx, b, &st, &problems)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return &userimport.RejectedError{Problems: problems}
		}
		narrowed = append(shrunk, removedFrom...)
		slices.Sort(narrowed)
		narrowed = slices.Compact(narrowed)
		if err := writeEvents(ctx, tx, append(changed, members...)); err != nil {
			return err
		}
		// Whoever knew the old password may be signed in: auth signs them out.
		st.UsersSignedOut = int64(len(rekeyed))
		events := make([]outbox.Event, 0, len(rekeyed)+len(narrowed))
		for _, id := range rekeyed {
			events = append(events, user.SignedOutEvent(id, user.SignOutPasswordChanged))
		}
		for _, id := range narrowed {
			events = append(events, role.NarrowedEvent(id))
		}
		return outbox.Add(ctx, tx, events...)
	})
	if err != nil {
		return userimport.Stats{}, nil, err
	}
	return st, narrowed, nil
}

// importRoles upserts the roles and returns the ids of the users who hold,
// globally or for conventionID, a role whose permissions it narrowed.
func importRoles(ctx context.Context, tx pgx.Tx, roles []role.Role, conventionID string, st *userimport.Stats, problems *fixture.Problems) ([]int64, error) {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_roles (id bigint PRIMARY KEY, name text NOT NULL, permissions text[] NOT NULL, grantable boolean NOT NULL) ON COMMIT DROP`); err != nil {
		return nil, fmt.Errorf("preparing the role import: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_roles"}, []string{"id", "name", "permissions", "grantable"},
		pgx.CopyFromSlice(len(roles), func(i int) ([]any, error) {
			return []any{roles[i].ID, roles[i].Name, roles[i].Permissions, roles[i].Grantable}, nil
		})); err != nil {
		return nil, fmt.Errorf("copying roles: %w", err)
	}
	// A name held by a stored role the file does not rename.
	rows, err := tx.Query(ctx, `SELECT i.id, i.name, r.id FROM import_roles i JOIN roles r ON r.name = i.name AND r.id <> i.id
		WHERE NOT EXISTS (SELECT 1 FROM import_roles j WHERE j.id = r.id AND j.name <> r.name) ORDER BY i.id`)
	if err != nil {
		return nil, fmt.Errorf("checking role names: %w", err)
	}
	var id, other int64
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&id, &name, &other}, func() error {
		problems.Addf("role %d: name: %q is already the name of stored role %d", id, name, other)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("checking role names: %w", err)
	}
	if len(*problems) > 0 {
		return nil, nil
	}
	// Before the upsert: the stored permissions are the old ones.
	var shrunk []int64
	err = tx.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT m.user_id), '{}') FROM role_members m
		JOIN roles r ON r.id = m.role_id JOIN import_roles i ON i.id = r.id
		WHERE m.convention_id IN ('', $1) AND NOT r.permissions <@ i.permissions`, conventionID).Scan(&shrunk)
	if err != nil {
		return nil, fmt.Errorf("finding the members of narrowed roles: %w", err)
	}
	// The file is the role's whole definition, its grantable mark included:
	// a role the file does not mark is not grantable after the import.
	err = tx.QueryRow(ctx, `WITH up AS (
			INSERT INTO roles (id, name, permissions, grantable) SELECT id, name, permissions, grantable FROM import_roles
			ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, permissions = EXCLUDED.permissions, grantable = EXCLUDED.grantable, updated_at = now()
			WHERE (roles.name, roles.permissions, roles.grantable) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.permissions, EXCLUDED.grantable)
			RETURNING (xmax = 0) AS inserted)
		SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up`).Scan(&st.RolesInserted, &st.RolesUpdated)
	if err != nil {
		if dup := uniqueViolation(err); dup {
			problems.Addf("roles: two roles would have the same name after the import (names are swapped between stored roles?)")
			return nil, nil
		}
		return nil, fmt.Errorf("storing roles: %w", err)
	}
	st.RolesUnchanged = int64(len(roles)) - st.RolesInserted - st.RolesUpdated
	return shrunk, nil
}

// viewColumns are the user columns the service view (GET /api/v0/users/{id},
// userapi's toUserView) shows: an import changing one of them writes the
// user's event.
const viewColumns = `username, email, email_verified, first_name, last_name, preferred_name, phone,
	address_line1, address_line2, address_city, address_state, address_zipcode, address_country`

// importUsers upserts the users and returns the ids of those it inserted or
// whose service view it changed, and of the stored users whose password it
// changed or removed.
func importUsers(ctx context.Context, tx pgx.Tx, users []userimport.UserRow, st *userimport.Stats, problems *fixture.Problems) (changed, rekeyed []int64, err error) {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_users (LIKE users INCLUDING DEFAULTS) ON COMMIT DROP;
		ALTER TABLE import_users ADD PRIMARY KEY (id)`); err != nil {
		return nil, nil, fmt.Errorf("preparing the user import: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_users"}, userColumns,
		pgx.CopyFromSlice(len(users), func(i int) ([]any, error) {
			return values(users[i].User, users[i].PasswordHash), nil
		})); err != nil {
		return nil, nil, fmt.Errorf("copying users: %w", err)
	}
	// Usernames and emails held by stored users the file does not change.
	for _, col := range []string{"username", "email"} {
		rows, err := tx.Query(ctx, `SELECT i.id, i.`+col+`, u.id FROM import_users i
			JOIN users u ON lower(u.`+col+`) = lower(i.`+col+`) AND u.id <> i.id
			WHERE NOT EXISTS (SELECT 1 FROM import_users j WHERE j.id = u.id AND lower(j.`+col+`) <> lower(u.`+col+`))
			ORDER BY i.id LIMIT 50`)
		if err != nil {
			return nil, nil, fmt.Errorf("checking %ss: %w", col, err)
		}
		var id, other int64
		var value string
		if _, err := pgx.ForEachRow(rows, []any{&id, &value, &other}, func() error {
			problems.Addf("user %d: %s: %q is already used by stored user %d (case is ignored)", id, col, value, other)
			return nil
		}); err != nil {
			return nil, nil, fmt.Errorf("checking %ss: %w", col, err)
		}
	}
	if len(*problems) > 0 {
		return nil, nil, nil
	}
	set, cmp, exc := "", "", ""
	for i, c := range userColumns[1:] {
		if i > 0 {
			set, cmp, exc = set+", ", cmp+", ", exc+", "
		}
		set += c + " = EXCLUDED." + c
		cmp += "users." + c
		exc += "EXCLUDED." + c
	}
	cols := ""
	for i, c := range userColumns {
		if i > 0 {
			cols += ", "
		}
		cols += c
	}
	err = tx.QueryRow(ctx, `WITH old AS (
			SELECT id, (`+viewColumns+`) AS view, password_hash FROM users WHERE id IN (SELECT id FROM import_users)
		), up AS (
			INSERT INTO users (`+cols+`) SELECT `+cols+` FROM import_users
			ON CONFLICT (id) DO UPDATE SET `+set+`, updated_at = now()
			WHERE (`+cmp+`) IS DISTINCT FROM (`+exc+`)
			RETURNING id, (xmax = 0) AS inserted, (`+viewColumns+`) AS view, password_hash)
		SELECT count(*) FILTER (WHERE up.inserted), count(*) FILTER (WHERE NOT up.inserted),
			coalesce(array_agg(up.id) FILTER (WHERE up.inserted OR up.view IS DISTINCT FROM old.view), '{}'),
			coalesce(array_agg(up.id ORDER BY up.id) FILTER (WHERE NOT up.inserted AND old.password_hash IS NOT NULL
				AND up.password_hash IS DISTINCT FROM old.password_hash), '{}')
		FROM up LEFT JOIN old USING (id)`).Scan(&st.UsersInserted, &st.UsersUpdated, &changed, &rekeyed)
	if err != nil {
		if field := userdb.DuplicateField(err); field != "" {
			problems.Addf("users: two users would have the same %s after the import (values swapped between stored users?)", field)
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("storing users: %w", err)
	}
	st.UsersUnchanged = int64(len(users)) - st.UsersInserted - st.UsersUpdated
	return changed, rekeyed, nil
}

// importMemberships sets the memberships of the users that list roles and
// returns the ids of the users whose memberships it changed (duplicates
// allowed), and of those it took a membership from.
func importMemberships(ctx context.Context, tx pgx.Tx, b userimport.Batch, st *userimport.Stats, problems *fixture.Problems) (changed, removedFrom []int64, err error) {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_owners (user_id bigint PRIMARY KEY) ON COMMIT DROP;
		CREATE TEMP TABLE import_members (role_id bigint, user_id bigint, convention_id text, PRIMARY KEY (role_id, user_id, convention_id)) ON COMMIT DROP`); err != nil {
		return nil, nil, fmt.Errorf("preparing the membership import: %w", err)
	}
	var owners [][]any
	var members [][]any
	for _, u := range b.Users {
		if u.Roles == nil {
			continue
		}
		owners = append(owners, []any{u.User.ID})
		for _, g := range u.Roles {
			members = append(members, []any{g.RoleID, u.User.ID, g.ConventionID})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_owners"}, []string{"user_id"}, pgx.CopyFromRows(owners)); err != nil {
		return nil, nil, fmt.Errorf("copying membership owners: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_members"}, []string{"role_id", "user_id", "convention_id"}, pgx.CopyFromRows(members)); err != nil {
		return nil, nil, fmt.Errorf("copying memberships: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT x.user_id, x.role_id FROM import_members x
		WHERE NOT EXISTS (SELECT 1 FROM roles r WHERE r.id = x.role_id) ORDER BY x.user_id, x.role_id LIMIT 50`)
	if err != nil {
		return nil, nil, fmt.Errorf("checking membership roles: %w", err)
	}
	var uid, rid int64
	if _, err := pgx.ForEachRow(rows, []any{&uid, &rid}, func() error {
		problems.Addf("user %d: roles: role %d is neither in the file nor stored", uid, rid)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("checking membership roles: %w", err)
	}
	if len(*problems) > 0 {
		return nil, nil, nil
	}
	var addedTo []int64
	err = tx.QueryRow(ctx, `WITH d AS (
			DELETE FROM role_members m USING import_owners o
			WHERE m.user_id = o.user_id AND m.convention_id IN ('', $1)
			  AND NOT EXISTS (SELECT 1 FROM import_members x WHERE x.role_id = m.role_id AND x.user_id = m.user_id AND x.convention_id = m.convention_id)
			RETURNING m.user_id)
		SELECT count(*), coalesce(array_agg(DISTINCT user_id), '{}') FROM d`,
		b.ConventionID).Scan(&st.MembershipsRemoved, &removedFrom)
	if err != nil {
		return nil, nil, fmt.Errorf("removing memberships: %w", err)
	}
	err = tx.QueryRow(ctx, `WITH i AS (
			INSERT INTO role_members (role_id, user_id, convention_id)
			SELECT role_id, user_id, convention_id FROM import_members ON CONFLICT DO NOTHING
			RETURNING user_id)
		SELECT count(*), coalesce(array_agg(DISTINCT user_id), '{}') FROM i`).Scan(&st.MembershipsAdded, &addedTo)
	if err != nil {
		return nil, nil, fmt.Errorf("adding memberships: %w", err)
	}
	return append(slices.Clone(removedFrom), addedTo...), removedFrom, nil
}

// writeEvents writes the user-updated event of each of ids (duplicates
// allowed), carrying the user as read now; the rows are locked first, so
// that each user's events are in commit order.
func writeEvents(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT `+userdb.Columns+` FROM users u WHERE u.id = ANY($1) ORDER BY u.id FOR UPDATE`, ids)
	if err != nil {
		return fmt.Errorf("reading the changed users: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Event, error) {
		u, err := userdb.Scan(r)
		return user.UpdatedEvent(u), err
	})
	if err != nil {
		return fmt.Errorf("reading the changed users: %w", err)
	}
	return outbox.Add(ctx, tx, events...)
}

func uniqueViolation(err error) bool { return userdb.DuplicateField(err) != "" }

// MaxIDs implements userimport.Generator.
func (s *Store) MaxIDs(ctx context.Context) (int64, int64, error) {
	var u, r int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT coalesce(max(id), 0) FROM users), (SELECT coalesce(max(id), 0) FROM roles)`).Scan(&u, &r)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the highest ids: %w", err)
	}
	return u, r, nil
}

// InsertRoles implements userimport.Generator.
func (s *Store) InsertRoles(ctx context.Context, roles []role.Role) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"roles"}, []string{"id", "name", "permissions"},
		pgx.CopyFromSlice(len(roles), func(i int) ([]any, error) {
			return []any{roles[i].ID, roles[i].Name, roles[i].Permissions}, nil
		}))
	if err != nil {
		return fmt.Errorf("copying generated roles: %w", err)
	}
	return nil
}

// CopyUsers implements userimport.Generator.
func (s *Store) CopyUsers(ctx context.Context, users []user.User, members []userimport.Membership) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"users"}, userColumns, pgx.CopyFromSlice(len(users), func(i int) ([]any, error) {
			return values(users[i], nil), nil
		})); err != nil {
			if field := userdb.DuplicateField(err); field != "" {
				return fmt.Errorf("copying generated users: an id, username or email is already stored (%s): %w", field, err)
			}
			return fmt.Errorf("copying generated users: %w", err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"role_members"}, []string{"role_id", "user_id", "convention_id"},
			pgx.CopyFromSlice(len(members), func(i int) ([]any, error) {
				return []any{members[i].RoleID, members[i].UserID, members[i].ConventionID}, nil
			})); err != nil {
			return fmt.Errorf("copying generated memberships: %w", err)
		}
		return nil
	})
}

// Analyze implements userimport.Generator: fresh statistics after a bulk load,
// so the planner picks the index scans.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE users; ANALYZE roles; ANALYZE role_members`); err != nil {
		return fmt.Errorf("analyzing: %w", err)
	}
	return nil
}

var _ userimport.Store = (*Store)(nil)
