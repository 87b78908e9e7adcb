package dealer

import (
	"strconv"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// resource names a dealer in its events: the dealer with its applications
// of one convention.
func resource(conventionID string, id int64) string {
	return "dealer:" + conventionID + ":" + strconv.FormatInt(id, 10)
}

// UpdatedEvent is the event of a dealer inserted or changed (by an import,
// set-status or delete-application), d as read once changed.
func UpdatedEvent(d Dealer) outbox.Event {
	return outbox.Event{Type: authapi.EventDealerUpdated, Resource: resource(d.ConventionID, d.ID), Payload: d}
}
