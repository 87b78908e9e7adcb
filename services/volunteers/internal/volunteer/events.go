package volunteer

import (
	"slices"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// stateAssignment is the state that puts a volunteer on a department.
const stateAssignment = "assignment"

// ChangeEvents are the events of a volunteer record an import inserted
// (before is nil) or changed (before: its department choices as they were),
// with after, the record as read once changed, as their payload:
//   - inserted: volunteer-submitted;
//   - changed so that a department gained the assignment state:
//     volunteer-assigned; one lost it: volunteer-unassigned; both: both,
//     unassigned first (the volunteer moved);
//   - any other change: volunteer-updated.
//
// An import calls it only for records it changed.
func ChangeEvents(inserted bool, before []Choice, after Volunteer) []outbox.Event {
	event := func(typ string) outbox.Event {
		return outbox.Event{Type: typ, Resource: outbox.ConventionResource("volunteer", after.ConventionID, after.UserID), Payload: after}
	}
	if inserted {
		return []outbox.Event{event(authapi.EventVolunteerSubmitted)}
	}
	was, is := assigned(before), map[int64]bool{}
	for _, d := range after.Departments {
		if slices.Contains(d.States, stateAssignment) {
			is[d.DepartmentID] = true
		}
	}
	var gained, lost bool
	for id := range is {
		gained = gained || !was[id]
	}
	for id := range was {
		lost = lost || !is[id]
	}
	var out []outbox.Event
	if lost {
		out = append(out, event(authapi.EventVolunteerUnassigned))
	}
	if gained {
		out = append(out, event(authapi.EventVolunteerAssigned))
	}
	if len(out) == 0 {
		out = append(out, event(authapi.EventVolunteerUpdated))
	}
	return out
}

// DeletedEvent is the event of a deleted volunteer record, last its last
// state as read.
func DeletedEvent(last Volunteer) outbox.Event {
	return outbox.Event{Type: authapi.EventVolunteerDeleted, Resource: outbox.ConventionResource("volunteer", last.ConventionID, last.UserID), Payload: last}
}

// assigned is the set of departments whose choice holds the assignment state.
func assigned(choices []Choice) map[int64]bool {
	out := map[int64]bool{}
	for _, c := range choices {
		if slices.Contains(c.States, stateAssignment) {
			out[c.DepartmentID] = true
		}
	}
	return out
}
