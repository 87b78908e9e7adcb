package dealer

import (
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// UpdatedEvent is the event of a dealer inserted or changed (by an import,
// set-status or delete-application), d as read once changed.
func UpdatedEvent(d Dealer) outbox.Event {
	return outbox.Event{Type: authapi.EventDealerUpdated, Resource: outbox.ConventionResource("dealer", d.ConventionID, d.ID), Payload: d}
}
