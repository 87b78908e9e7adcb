package registrationapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// RenderEvents returns the outbox relay's render function: each event's
// registration (its payload, the registration as committed) rendered by
// toJSON, as GET /api/v0/users/{id}/registration renders it, with the users'
// summaries fetched in one batch (usersummary.Fetch: one call per 100
// users). A user the users service no longer knows is rendered with its id
// alone (the other summary fields empty: "" or null), where the read API
// would answer 404. A payload that does not decode is a bad row
// (outbox.BadRows); a users service that cannot answer fails the batch,
// retried.
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return func(ctx context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
		regs := make([]registration.Registration, len(rows))
		bad := &outbox.BadRows{}
		ids := make([]int64, 0, len(rows))
		for i, r := range rows {
			err := json.Unmarshal(r.Payload, &regs[i])
			if err == nil && regs[i].UserID <= 0 {
				err = fmt.Errorf("no user id")
			}
			if err != nil {
				bad.Add(i, fmt.Errorf("decoding the registration of %s: %w", r.Resource, err))
				continue
			}
			ids = append(ids, regs[i].UserID)
		}
		summaries, err := usersummary.Fetch(ctx, users, ids)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(rows))
		for i, r := range regs {
			if bad.Errs[i] != nil {
				continue
			}
			u, ok := summaries[r.UserID]
			if !ok {
				u = usersapi.UserSummary{ID: strconv.FormatInt(r.UserID, 10)}
			}
			if out[i], err = json.Marshal(toJSON(registration.WithUser{Registration: r, User: u})); err != nil {
				bad.Add(i, fmt.Errorf("rendering the registration of %s: %w", rows[i].Resource, err))
			}
		}
		return out, bad.Err()
	}
}
