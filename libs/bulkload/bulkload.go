// Package bulkload streams generated rows into PostgreSQL with COPY and reports progress, for the services' `generate` commands.
package bulkload

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
)

// Progress prints "label: n of total (p%)" lines, at most one per interval,
// and a final line with the rate.
type Progress struct {
	w        io.Writer
	label    string
	total    int64
	done     int64
	start    time.Time
	last     time.Time
	interval time.Duration
}

// NewProgress returns a progress reporter writing to w.
func NewProgress(w io.Writer, label string, total int64) *Progress {
	now := time.Now()
	return &Progress{w: w, label: label, total: total, start: now, last: now, interval: time.Second}
}

// Add counts n more rows.
func (p *Progress) Add(n int64) {
	p.done += n
	if now := time.Now(); now.Sub(p.last) >= p.interval {
		p.last = now
		fmt.Fprintf(p.w, "%s: %d of %d (%.0f%%)\n", p.label, p.done, p.total, 100*float64(p.done)/float64(max(p.total, 1)))
	}
}

// Finish prints the final line.
func (p *Progress) Finish() {
	secs := time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "%s: %d rows in %.1fs (%.0f rows/s)\n", p.label, p.done, secs, float64(p.done)/max(secs, 1e-9))
}

// Copy streams total rows made by row(i) (i from 0) into table's columns with
// COPY on conn, reporting progress. It returns the rows copied.
func Copy(ctx context.Context, conn interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, table pgx.Identifier, columns []string, total int64, row func(i int64) []any, progress *Progress) (int64, error) {
	var i int64
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= total {
			return nil, nil
		}
		r := row(i)
		i++
		if progress != nil && i%1000 == 0 {
			progress.Add(1000)
		}
		return r, nil
	})
	n, err := conn.CopyFrom(ctx, table, columns, src)
	if err != nil {
		return n, fmt.Errorf("copying rows into %s: %w", table.Sanitize(), err)
	}
	if progress != nil {
		progress.Add(i % 1000)
	}
	return n, nil
}
