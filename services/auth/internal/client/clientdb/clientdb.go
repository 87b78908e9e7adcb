// Package clientdb stores OAuth clients in PostgreSQL.
package clientdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/pgdb"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Store is the PostgreSQL client store.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `id, name, description, kind, secret_hash, redirect_uris, scopes, require_pkce, id_token_alg, post_logout_redirect_uris, created_at, updated_at`

func scan(row pgx.Row) (client.Client, error) {
	var c client.Client
	var kind string
	var scopes []string
	err := row.Scan(&c.ID, &c.Name, &c.Description, &kind, &c.SecretHash, &c.RedirectURIs, &scopes, &c.RequirePKCE, &c.IDTokenAlg, &c.PostLogoutRedirectURIs, &c.CreatedAt, &c.UpdatedAt)
	c.Kind = client.Kind(kind)
	c.Scopes = scope.Normalize(scopes)
	return c, err
}

// Get returns one client.
func (s *Store) Get(ctx context.Context, id int64) (client.Client, error) {
	c, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM clients WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return client.Client{}, client.ErrNotFound
	}
	if err != nil {
		return client.Client{}, fmt.Errorf("reading client %d: %w", id, err)
	}
	return c, nil
}

// List returns every client by id.
func (s *Store) List(ctx context.Context) ([]client.Client, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM clients ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing clients: %w", err)
	}
	defer rows.Close()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (client.Client, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("reading clients: %w", err)
	}
	return out, nil
}

// Create inserts c; a zero id takes the next free one of the sequence.
func (s *Store) Create(ctx context.Context, c client.Client) (client.Client, error) {
	for attempt := 0; attempt < 100; attempt++ {
		row := s.pool.QueryRow(ctx, `
			INSERT INTO clients (id, name, description, kind, secret_hash, redirect_uris, scopes, require_pkce, id_token_alg, post_logout_redirect_uris)
			VALUES (CASE WHEN $1 = 0 THEN nextval('clients_id_seq') ELSE $1 END, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (id) DO NOTHING
			RETURNING `+columns,
			c.ID, c.Name, c.Description, string(c.Kind), c.SecretHash, nonNil(c.RedirectURIs), []string(nonNil(c.Scopes)), c.RequirePKCE, idTokenAlg(c), nonNil(c.PostLogoutRedirectURIs))
		out, err := scan(row)
		if errors.Is(err, pgx.ErrNoRows) {
			if c.ID != 0 {
				return client.Client{}, fmt.Errorf("client %d exists already", c.ID)
			}
			continue // an imported client holds this sequence value
		}
		if err != nil {
			return client.Client{}, fmt.Errorf("inserting client: %w", err)
		}
		return out, nil
	}
	return client.Client{}, errors.New("inserting client: no free id found")
}

// UpdateSecret replaces the secret hash.
func (s *Store) UpdateSecret(ctx context.Context, id int64, hash []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE clients SET secret_hash = $2, updated_at = now() WHERE id = $1`, id, hash)
	if err != nil {
		return fmt.Errorf("updating secret of client %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return client.ErrNotFound
	}
	return nil
}

// Delete removes a client.
func (s *Store) Delete(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM clients WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("deleting client %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return client.ErrNotFound
	}
	return nil
}

// Existing returns which ids exist.
func (s *Store) Existing(ctx context.Context, ids []int64) (map[int64]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM clients WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading client ids: %w", err)
	}
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// Upsert writes every client in one transaction. Rows whose values are
// unchanged are not touched (importing the same file twice changes nothing).
func (s *Store) Upsert(ctx context.Context, cs []client.Client) (map[int64]bool, error) {
	created := map[int64]bool{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, c := range cs {
			var inserted bool
			err := tx.QueryRow(ctx, `
				INSERT INTO clients AS c (id, name, description, kind, secret_hash, redirect_uris, scopes, require_pkce, id_token_alg, post_logout_redirect_uris)
				VALUES ($1, $2, $3, $4, COALESCE($5, ''::bytea), $6, $7, $8, $9, $10)
				ON CONFLICT (id) DO UPDATE SET
					name = EXCLUDED.name, description = EXCLUDED.description, kind = EXCLUDED.kind,
					secret_hash = COALESCE($5, c.secret_hash), redirect_uris = EXCLUDED.redirect_uris,
					scopes = EXCLUDED.scopes, require_pkce = EXCLUDED.require_pkce, id_token_alg = EXCLUDED.id_token_alg,
					post_logout_redirect_uris = EXCLUDED.post_logout_redirect_uris, updated_at = now()
				WHERE (c.name, c.description, c.kind, c.redirect_uris, c.scopes, c.require_pkce, c.id_token_alg, c.post_logout_redirect_uris) IS DISTINCT FROM
				      (EXCLUDED.name, EXCLUDED.description, EXCLUDED.kind, EXCLUDED.redirect_uris, EXCLUDED.scopes, EXCLUDED.require_pkce, EXCLUDED.id_token_alg,
				       EXCLUDED.post_logout_redirect_uris)
				   OR ($5::bytea IS NOT NULL AND c.secret_hash <> $5)
				RETURNING (xmax = 0)`,
				c.ID, c.Name, c.Description, string(c.Kind), c.SecretHash, nonNil(c.RedirectURIs), []string(nonNil(c.Scopes)), c.RequirePKCE, idTokenAlg(c), nonNil(c.PostLogoutRedirectURIs)).Scan(&inserted)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // unchanged
			}
			if err != nil {
				return fmt.Errorf("writing client %d: %w", c.ID, err)
			}
			created[c.ID] = inserted
		}
		return nil
	})
	return created, err
}

// IsUnavailable reports whether err means the database cannot answer.
func IsUnavailable(err error) bool { return pgdb.IsUnavailable(err) }

// idTokenAlg is c's ID token algorithm, the default when it has none.
func idTokenAlg(c client.Client) string {
	if c.IDTokenAlg == "" {
		return client.DefaultIDTokenAlg
	}
	return c.IDTokenAlg
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
