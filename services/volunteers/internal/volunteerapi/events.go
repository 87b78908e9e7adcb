package volunteerapi

import (
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// RenderEvents returns the outbox relay's render function: each event's
// volunteer as committed, rendered by toJSON as GET
// /api/v0/users/{id}/volunteer renders it (usersummary.RenderEvents).
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return usersummary.RenderEvents(users, "volunteer", volunteer.UserIDOf, volunteer.Join, toJSON)
}
