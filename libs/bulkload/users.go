package bulkload

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// Users is what a `generate` command asks for: Count synthetic records of
// one convention, one per user, spread evenly over the users
// UsersFrom..UsersTo, with progress lines written to Progress (if not nil).
type Users struct {
	ConventionID       string
	Count              int64
	UsersFrom, UsersTo int64
	Progress           io.Writer
}

// Span is how many user ids UsersFrom..UsersTo holds.
func (u Users) Span() int64 { return u.UsersTo - u.UsersFrom + 1 }

// UserID is the user of row i (from 0).
func (u Users) UserID(i int64) int64 { return u.UsersFrom + i*u.Span()/u.Count }

// PerUser describes synthetic rows of one convention, one per user, for
// benchmarks, and the table that holds them.
type PerUser struct {
	// Table holds the rows (convention_id, user_id, ...); it also names them
	// in messages, e.g. "registrations".
	Table string
	Users
	// Need is the flags' rule quoted when the numbers are refused, e.g.
	// "--registrations >= 1 and 1 <= --users-from <= --users-to".
	Need string
	// Analyze lists the tables to ANALYZE before committing (default Table).
	Analyze []string
}

// Generate checks p and, in one transaction, refuses a range where the
// convention already has rows, calls fill to write them (fill gets the
// progress reporter, nil without p.Progress), analyzes the tables and commits.
// It returns what fill returned.
func Generate(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, p PerUser, fill func(ctx context.Context, tx pgx.Tx, progress *Progress) (int64, error)) (int64, error) {
	if p.Count < 1 || p.UsersFrom < 1 || p.UsersTo < p.UsersFrom {
		return 0, errors.New("generate: need " + p.Need)
	}
	if span := p.Span(); span < p.Count {
		return 0, fmt.Errorf("generate: users %d..%d are %d ids, fewer than the %d %s asked for (one per user)", p.UsersFrom, p.UsersTo, span, p.Count, p.Table)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("generate: starting: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var existing int64
	table := pgx.Identifier{p.Table}.Sanitize()
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE convention_id = $1 AND user_id BETWEEN $2 AND $3`,
		p.ConventionID, p.UsersFrom, p.UsersTo).Scan(&existing); err != nil {
		return 0, fmt.Errorf("generate: checking the range: %w", err)
	}
	if existing > 0 {
		return 0, fmt.Errorf("generate: convention %s already has %d %s of users %d..%d; pick another range or convention", p.ConventionID, existing, p.Table, p.UsersFrom, p.UsersTo)
	}
	var progress *Progress
	if p.Progress != nil {
		progress = NewProgress(p.Progress, p.Table, p.Count)
	}
	n, err := fill(ctx, tx, progress)
	if err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	analyze := p.Analyze
	if len(analyze) == 0 {
		analyze = []string{p.Table}
	}
	for _, t := range analyze {
		if _, err := tx.Exec(ctx, `ANALYZE `+pgx.Identifier{t}.Sanitize()); err != nil {
			return 0, fmt.Errorf("generate: analyzing: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("generate: committing: %w", err)
	}
	if progress != nil {
		progress.Finish()
	}
	return n, nil
}
