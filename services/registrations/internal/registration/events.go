package registration

import (
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// UpdatedEvent is the event of a registration inserted or changed (by an
// import, set-status or record-payment), r as read once changed.
func UpdatedEvent(r Registration) outbox.Event {
	return outbox.Event{Type: authapi.EventRegistrationUpdated, Resource: outbox.ConventionResource("registration", r.ConventionID, r.UserID), Payload: r}
}
