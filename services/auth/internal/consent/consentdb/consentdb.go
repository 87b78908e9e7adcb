// Package consentdb stores consents in PostgreSQL.
package consentdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Store is the PostgreSQL consent store.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Get returns the consent of userID to clientID.
func (s *Store) Get(ctx context.Context, userID, clientID int64) (consent.Consent, error) {
	c := consent.Consent{UserID: userID, ClientID: clientID}
	var scopes, clientScopes []string
	err := s.pool.QueryRow(ctx, `SELECT scopes, client_scopes, granted_at FROM consents WHERE user_id = $1 AND client_id = $2`,
		userID, clientID).Scan(&scopes, &clientScopes, &c.GrantedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, consent.ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("reading consent: %w", err)
	}
	c.Scopes, c.ClientScopes = scope.Normalize(scopes), scope.Normalize(clientScopes)
	return c, nil
}

// Save inserts or replaces a consent.
func (s *Store) Save(ctx context.Context, c consent.Consent) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO consents (user_id, client_id, scopes, client_scopes) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = EXCLUDED.scopes, client_scopes = EXCLUDED.client_scopes, granted_at = now()`,
		c.UserID, c.ClientID, []string(c.Scopes), []string(c.ClientScopes))
	if err != nil {
		return fmt.Errorf("saving consent: %w", err)
	}
	return nil
}

// Delete removes a consent (no error when there is none).
func (s *Store) Delete(ctx context.Context, userID, clientID int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM consents WHERE user_id = $1 AND client_id = $2`, userID, clientID); err != nil {
		return fmt.Errorf("deleting consent: %w", err)
	}
	return nil
}

// ListForUser returns the apps a user authorized, with their names.
func (s *Store) ListForUser(ctx context.Context, userID int64) ([]consent.Consent, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.client_id, c.scopes, c.client_scopes, c.granted_at, cl.name, cl.description
		FROM consents c JOIN clients cl ON cl.id = c.client_id
		WHERE c.user_id = $1 ORDER BY cl.name, c.client_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("listing consents: %w", err)
	}
	defer rows.Close()
	var out []consent.Consent
	for rows.Next() {
		c := consent.Consent{UserID: userID}
		var scopes, clientScopes []string
		if err := rows.Scan(&c.ClientID, &scopes, &clientScopes, &c.GrantedAt, &c.ClientName, &c.ClientDescription); err != nil {
			return nil, fmt.Errorf("reading consents: %w", err)
		}
		c.Scopes, c.ClientScopes = scope.Normalize(scopes), scope.Normalize(clientScopes)
		out = append(out, c)
	}
	return out, rows.Err()
}
