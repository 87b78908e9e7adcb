package registrationapi

import (
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// RenderEvents returns the outbox relay's render function: each event's
// registration as committed, rendered by toJSON as GET
// /api/v0/users/{id}/registration renders it (usersummary.RenderEvents).
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return usersummary.RenderEvents(users, "registration",
		func(r registration.Registration) int64 { return r.UserID },
		func(r registration.Registration, u usersclient.UserSummary) any {
			return toJSON(registration.WithUser{Registration: r, User: u})
		})
}
