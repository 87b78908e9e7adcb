// Package conventiondb keeps the public configuration (the organization and its conventions) in PostgreSQL.
package conventiondb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/services/registrations/internal/convention"
)

// Store implements convention.Store.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const (
	readOrganizationSQL = `SELECT name, country FROM organization`
	readConventionsSQL  = `SELECT id, name, long_name, domain, start_at, end_at, time_zone, venue
		FROM conventions ORDER BY start_at, id`
	upsertOrganizationSQL = `INSERT INTO organization (name, country) VALUES ($1, $2)
		ON CONFLICT (singleton) DO UPDATE SET name = EXCLUDED.name, country = EXCLUDED.country`
	upsertConventionSQL = `INSERT INTO conventions (id, name, long_name, domain, start_at, end_at, time_zone, venue)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, long_name = EXCLUDED.long_name, domain = EXCLUDED.domain,
			start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at, time_zone = EXCLUDED.time_zone, venue = EXCLUDED.venue`
	deleteOtherConventionsSQL = `DELETE FROM conventions WHERE NOT (id = ANY($1::text[]))`
)

// Read returns the organization and its conventions in start order, in one
// snapshot.
func (s *Store) Read(ctx context.Context) (convention.Config, error) {
	var c convention.Config
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, readOrganizationSQL).Scan(&c.Organization.Name, &c.Organization.Country)
		if errors.Is(err, pgx.ErrNoRows) {
			return convention.ErrNotConfigured
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, readConventionsSQL)
		if err != nil {
			return err
		}
		c.Conventions, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (convention.Convention, error) {
			var v convention.Convention
			err := row.Scan(&v.ID, &v.Name, &v.LongName, &v.Domain, &v.StartAt, &v.EndAt, &v.TimeZone, &v.Venue)
			return v, err
		})
		return err
	})
	if errors.Is(err, convention.ErrNotConfigured) {
		return c, err
	}
	if err != nil {
		return c, fmt.Errorf("reading the public configuration: %w", err)
	}
	return c, nil
}

// Replace stores org (when not nil) and, when convs is not nil, makes them
// the whole list of conventions, in one transaction.
func (s *Store) Replace(ctx context.Context, org *convention.Organization, convs []convention.Convention) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if org != nil {
			if _, err := tx.Exec(ctx, upsertOrganizationSQL, org.Name, org.Country); err != nil {
				return fmt.Errorf("storing the organization: %w", err)
			}
		}
		if convs == nil {
			return nil
		}
		ids := make([]string, len(convs))
		var b pgx.Batch
		for i, c := range convs {
			ids[i] = c.ID
			b.Queue(upsertConventionSQL, c.ID, c.Name, c.LongName, c.Domain, c.StartAt, c.EndAt, c.TimeZone, c.Venue)
		}
		b.Queue(deleteOtherConventionsSQL, ids)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("storing the conventions: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("importing the public configuration: %w", err)
	}
	return nil
}
