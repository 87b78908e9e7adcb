package registration

import (
	"strconv"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// resource names a registration in its events.
func resource(conventionID string, userID int64) string {
	return "registration:" + conventionID + ":" + strconv.FormatInt(userID, 10)
}

// UpdatedEvent is the event of a registration inserted or changed (by an
// import, set-status or record-payment), r as read once changed.
func UpdatedEvent(r Registration) outbox.Event {
	return outbox.Event{Type: authapi.EventRegistrationUpdated, Resource: resource(r.ConventionID, r.UserID), Payload: r}
}
