// Package pgdb opens a service's PostgreSQL pool (pgx/v5) with tracing of every
// query (otelpgx; parameters are never recorded).
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open parses dsn and returns a pool; it does not wait for the server, so a
// service starts (and reports unready) while its database is down.
func Open(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing DATABASE_URL: %w", redact(err))
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	if cfg.MaxConnIdleTime == 30*time.Minute {
		cfg.MaxConnIdleTime = 5 * time.Minute
	}
	cfg.HealthCheckPeriod = 15 * time.Second
	// Every query of the services is a key lookup, a batch of them
	// (id = ANY($1)) or a keyset page, whose plan does not depend on the
	// values: plan them once per connection. PostgreSQL's default (auto)
	// never settles on a generic plan for the batches, so it planned every
	// lookup again, the most of PostgreSQL's CPU for a small read (decision
	// 0077). A DSN that sets plan_cache_mode keeps its own.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating PostgreSQL pool: %w", err)
	}
	return pool, nil
}

// Ping is a readiness check of the pool.
func Ping(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("postgresql: %w", err)
		}
		return nil
	}
}

// IsUnavailable reports whether err means the database could not be reached
// or stopped answering (as opposed to a query that failed on its own terms);
// handlers answer 503 for these.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// Any failure to connect, including the server refusing the session
	// (e.g. "database is not currently accepting connections", too many
	// connections), is unavailability: checked before the PgError inside it.
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P: operator intervention
		// (shutdown); 53300: too many connections.
		return len(pgErr.Code) >= 3 && (pgErr.Code[:2] == "08" || pgErr.Code[:3] == "57P" || pgErr.Code == "53300")
	}
	return pgconn.SafeToRetry(err) || isNetErr(err)
}

// UniqueViolation reports whether err is a unique-constraint violation.
func UniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// ForeignKeyViolation reports whether err is a foreign-key violation.
func ForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// redact drops the DSN (which may hold a password) from a parse error.
func redact(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid connection string (value not shown)")
	}
	return err
}
