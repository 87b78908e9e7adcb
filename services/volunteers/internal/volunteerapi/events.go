package volunteerapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// RenderEvents returns the outbox relay's render function: each event's
// volunteer (its payload, the record as committed) rendered by toJSON, as
// GET /api/v0/users/{id}/volunteer renders it, with the users' summaries
// fetched in one batch (usersummary.Fetch: one call per 100 users). A user
// the users service no longer knows is rendered with its id alone (the other
// summary fields empty: "" or null), where the read API would answer 404:
// the event still says what happened to the record. A payload that does not
// decode is a bad row (outbox.BadRows); a users service that cannot answer
// fails the batch, retried.
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return func(ctx context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
		vols := make([]volunteer.Volunteer, len(rows))
		bad := &outbox.BadRows{}
		ids := make([]int64, 0, len(rows))
		for i, r := range rows {
			err := json.Unmarshal(r.Payload, &vols[i])
			if err == nil && vols[i].UserID <= 0 {
				err = fmt.Errorf("no user id")
			}
			if err != nil {
				bad.Add(i, fmt.Errorf("decoding the volunteer of %s: %w", r.Resource, err))
				continue
			}
			ids = append(ids, vols[i].UserID)
		}
		summaries, err := usersummary.Fetch(ctx, users, ids)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(rows))
		for i, v := range vols {
			if bad.Errs[i] != nil {
				continue
			}
			u, ok := summaries[v.UserID]
			if !ok {
				u = usersapi.UserSummary{ID: strconv.FormatInt(v.UserID, 10)}
			}
			if out[i], err = json.Marshal(toJSON(volunteer.WithUser{Volunteer: v, User: u})); err != nil {
				bad.Add(i, fmt.Errorf("rendering the volunteer of %s: %w", rows[i].Resource, err))
			}
		}
		return out, bad.Err()
	}
}
