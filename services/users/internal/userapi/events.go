package userapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// RenderEvents is the outbox relay's render function: each event's user
// (its payload, the user as committed) rendered by toUserView, as GET
// /api/v0/users/{id} renders it; a sign-out (user.SignedOutEvent) as it was
// written; a notice that permissions narrowed (role.NarrowedEventType, told
// to auth by role.PublishNotices) as stored. A payload that does not decode
// is a bad row (outbox.BadRows).
func RenderEvents(_ context.Context, rows []outbox.Row) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(rows))
	bad := &outbox.BadRows{}
	for i, r := range rows {
		if r.Type == authapi.EventUserSignedOut {
			var d authapi.SignOut
			err := json.Unmarshal(r.Payload, &d)
			if err == nil && d.UserID <= 0 {
				err = fmt.Errorf("no user id")
			}
			if err == nil {
				out[i], err = json.Marshal(d)
			}
			if err != nil {
				bad.Add(i, fmt.Errorf("rendering the sign-out of %s: %w", r.Resource, err))
			}
			continue
		}
		if r.Type == role.NarrowedEventType {
			if _, err := role.ParseNarrowed(r.Payload); err != nil {
				bad.Add(i, err)
			}
			out[i] = r.Payload
			continue
		}
		var u user.User
		err := json.Unmarshal(r.Payload, &u)
		if err == nil && u.ID <= 0 {
			err = fmt.Errorf("no user id")
		}
		if err == nil {
			out[i], err = json.Marshal(toUserView(u))
		}
		if err != nil {
			bad.Add(i, fmt.Errorf("rendering the user of %s: %w", r.Resource, err))
		}
	}
	return out, bad.Err()
}
