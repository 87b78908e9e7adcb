package volunteerapi

import (
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// RenderEvents returns the outbox relay's render function: each event's
// volunteer as committed, rendered by toJSON as GET
// /api/v0/users/{id}/volunteer renders it (usersummary.RenderEvents).
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return usersummary.RenderEvents(users, "volunteer",
		func(v volunteer.Volunteer) int64 { return v.UserID },
		func(v volunteer.Volunteer, u usersclient.UserSummary) any {
			return toJSON(volunteer.WithUser{Volunteer: v, User: u})
		})
}
