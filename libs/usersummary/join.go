package usersummary

import (
	"context"

	"github.com/eventreg/eventreg/libs/usersclient"
)

// Attach joins row, a record of userID, to the user's summary. A user the
// users service does not know makes the record as good as gone: notFound.
func Attach[R, T any](ctx context.Context, src Source, userID int64, row R, notFound error, join func(R, usersclient.UserSummary) T) (T, error) {
	var zero T
	users, err := Fetch(ctx, src, []int64{userID})
	if err != nil {
		return zero, err
	}
	u, ok := users[userID]
	if !ok {
		return zero, notFound
	}
	return join(row, u), nil
}

// Page is one page of records joined to their users' summaries. Last is the
// user id the next page starts after; More tells whether there is one.
type Page[T any] struct {
	Items []T
	Last  int64
	More  bool
}

// JoinPage cuts rows, up to limit+1 records read in user id order, to a page
// and joins each record to its user's summary with one Fetch for the whole
// page. Records whose user the users service does not know are left out (as
// Attach refuses them).
func JoinPage[R, T any](ctx context.Context, src Source, rows []R, limit int, userID func(R) int64, join func(R, usersclient.UserSummary) T) (Page[T], error) {
	p := Page[T]{Items: make([]T, 0, len(rows))}
	if len(rows) > limit {
		rows, p.More = rows[:limit], true
	}
	if len(rows) == 0 {
		return p, nil
	}
	p.Last = userID(rows[len(rows)-1])
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = userID(r)
	}
	users, err := Fetch(ctx, src, ids)
	if err != nil {
		return Page[T]{}, err
	}
	for _, r := range rows {
		if u, ok := users[userID(r)]; ok {
			p.Items = append(p.Items, join(r, u))
		}
	}
	return p, nil
}
