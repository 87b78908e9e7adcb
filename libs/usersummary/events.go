package usersummary

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// RenderEvents returns the outbox relay's render function for records of
// type T that belong to a user (a volunteer, a registration): each event's
// payload, the record as committed, is decoded into T, joined to its user's
// summary by join and rendered by render, as the read API renders it; the summaries of a
// batch are fetched in one go (Fetch: one call per 100 users). A user the
// users service no longer knows is rendered with its id alone (the other
// summary fields empty), where the read API would answer 404: the event
// still says what happened to the record. A payload that does not decode is
// a bad row (outbox.BadRows); a users service that cannot answer fails the
// batch, which the relay retries.
func RenderEvents[T, W, J any](users Source, noun string, userID func(T) int64, join func(T, usersclient.UserSummary) W, render func(W) J) outbox.RenderFunc {
	return func(ctx context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
		recs := make([]T, len(rows))
		bad := &outbox.BadRows{}
		ids := make([]int64, 0, len(rows))
		for i, r := range rows {
			err := json.Unmarshal(r.Payload, &recs[i])
			if err == nil && userID(recs[i]) <= 0 {
				err = fmt.Errorf("no user id")
			}
			if err != nil {
				bad.Add(i, fmt.Errorf("decoding the %s of %s: %w", noun, r.Resource, err))
				continue
			}
			ids = append(ids, userID(recs[i]))
		}
		summaries, err := Fetch(ctx, users, ids)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(rows))
		for i, rec := range recs {
			if bad.Errs[i] != nil {
				continue
			}
			id := userID(rec)
			u, ok := summaries[id]
			if !ok {
				u = usersclient.UserSummary{ID: strconv.FormatInt(id, 10)}
			}
			if out[i], err = json.Marshal(render(join(rec, u))); err != nil {
				bad.Add(i, fmt.Errorf("rendering the %s of %s: %w", noun, rows[i].Resource, err))
			}
		}
		return out, bad.Err()
	}
}
