package dealerapi

import (
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/usersummary"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// RenderEvents returns the outbox relay's render function: each event's
// dealer as committed (with its applications of the event's convention),
// rendered by toJSON as POST /api/v0/dealers/search renders it
// (usersummary.RenderEvents).
func RenderEvents(users usersummary.Source) outbox.RenderFunc {
	return usersummary.RenderEvents(users, "dealer", dealer.UserIDOf, dealer.Join, toJSON)
}
