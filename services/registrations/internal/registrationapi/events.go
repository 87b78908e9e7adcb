package registrationapi

import (
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// RenderEvents returns the outbox relay's render function: each event's
// registration as committed, rendered by toJSON as GET
// /api/v0/users/{id}/registration renders it (usersummary.RenderEvents).
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return usersummary.RenderEvents(users, "registration", registration.UserIDOf, registration.Join, toJSON)
}
