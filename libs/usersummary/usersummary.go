// Package usersummary fetches the user summaries that volunteer, department and registration objects embed, from the users service, in one batch call per page.
package usersummary

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// Source answers batch summary requests; *usersclient.Client is one.
type Source interface {
	Summaries(ctx context.Context, ids []int64) (map[int64]usersclient.UserSummary, error)
}

// UnavailableError says the users service could not answer (down, slow,
// broken). Handlers answer it with 503 (libs/apireply).
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "users service unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Dependency names the users service for the 503.
func (e *UnavailableError) Dependency() string { return "The users service" }

// IsUnavailable reports whether err is (or wraps) an UnavailableError.
func IsUnavailable(err error) bool {
	var ue *UnavailableError
	return errors.As(err, &ue)
}

// Fetch returns the summaries of ids (duplicates allowed), keyed by id; users
// the users service does not know are absent. Up to usersclient.MaxSummaryIDs
// distinct ids (a page) cost exactly one call; more are fetched in chunks of
// that size.
func Fetch(ctx context.Context, src Source, ids []int64) (map[int64]usersclient.UserSummary, error) {
	distinct := make([]int64, 0, len(ids))
	seen := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			distinct = append(distinct, id)
		}
	}
	out := make(map[int64]usersclient.UserSummary, len(distinct))
	for start := 0; start < len(distinct); start += usersclient.MaxSummaryIDs {
		end := min(start+usersclient.MaxSummaryIDs, len(distinct))
		got, err := src.Summaries(ctx, distinct[start:end])
		if err != nil {
			if errors.Is(err, svcclient.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
				return nil, &UnavailableError{Err: err}
			}
			return nil, fmt.Errorf("fetching %d user summaries: %w", end-start, err)
		}
		for id, s := range got {
			out[id] = s
		}
	}
	return out, nil
}
