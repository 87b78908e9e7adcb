// Package keydb stores signing keys in PostgreSQL.
package keydb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/services/auth/internal/signing"
)

// rotationLock is the advisory lock id that serializes key creation across replicas.
const rotationLock = 0x61757468 // "auth"

// Store is the PostgreSQL key store.
type Store struct{ pool *pgxpool.Pool }

var _ signing.Revoker = (*Store)(nil)

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// List returns every key ordered by activation.
func (s *Store) List(ctx context.Context) ([]signing.Key, error) {
	return list(ctx, s.pool)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func list(ctx context.Context, q querier) ([]signing.Key, error) {
	rows, err := q.Query(ctx, `SELECT kid, alg, public_jwk::text, private_enc, created_at, activates_at, revoked_at FROM signing_keys ORDER BY activates_at, kid`)
	if err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	defer rows.Close()
	var out []signing.Key
	for rows.Next() {
		var k signing.Key
		var pub string
		var revokedAt *time.Time
		if err := rows.Scan(&k.KID, &k.Alg, &pub, &k.PrivateEnc, &k.CreatedAt, &k.ActivatesAt, &revokedAt); err != nil {
			return nil, fmt.Errorf("reading signing keys: %w", err)
		}
		k.PublicJWK = []byte(pub)
		if revokedAt != nil {
			k.RevokedAt = *revokedAt
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Locked runs decide under a transaction-scoped advisory lock and inserts what it returns.
func (s *Store) Locked(ctx context.Context, decide func([]signing.Key) ([]signing.Key, error)) error {
	return s.locked(ctx, decide, nil)
}

// Revoke runs decide under the same lock, then marks kid revoked at
// revokedAt and inserts what decide returns, in one transaction.
func (s *Store) Revoke(ctx context.Context, kid string, revokedAt time.Time, decide func([]signing.Key) ([]signing.Key, error)) error {
	return s.locked(ctx, decide, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE signing_keys SET revoked_at = $2 WHERE kid = $1 AND revoked_at IS NULL`, kid, revokedAt)
		if err != nil {
			return fmt.Errorf("revoking signing key %s: %w", kid, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("revoking signing key %s: %w", kid, signing.ErrUnknownKey)
		}
		return nil
	})
}

// locked runs decide under the rotation lock, then also (when not nil),
// then inserts the keys decide returned.
func (s *Store) locked(ctx context.Context, decide func([]signing.Key) ([]signing.Key, error), also func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, rotationLock); err != nil {
			return fmt.Errorf("taking the key rotation lock: %w", err)
		}
		existing, err := list(ctx, tx)
		if err != nil {
			return err
		}
		add, err := decide(existing)
		if err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		for _, k := range add {
			if _, err := tx.Exec(ctx, `INSERT INTO signing_keys (kid, alg, public_jwk, private_enc, created_at, activates_at) VALUES ($1, $2, $3::jsonb, $4, $5, $6)`,
				k.KID, k.Alg, string(k.PublicJWK), k.PrivateEnc, k.CreatedAt, k.ActivatesAt); err != nil {
				return fmt.Errorf("inserting signing key %s: %w", k.KID, err)
			}
		}
		return nil
	})
}
