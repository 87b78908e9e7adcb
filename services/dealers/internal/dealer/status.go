package dealer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Statuses of an application.
const (
	StatusPending    = "pending"
	StatusWaitlisted = "waitlisted"
	StatusApproved   = "approved"
	StatusRejected   = "rejected"
	StatusCancelled  = "cancelled"
)

// Statuses lists every status, in the order of the life of an application.
var Statuses = []string{StatusPending, StatusWaitlisted, StatusApproved, StatusRejected, StatusCancelled}

// transitions is the applications' state machine (docs/dealers.md, decision
// 0096): the statuses each status may become. Cancelled is final; an approved
// application holds a table and can only be cancelled; a rejected one may be
// reconsidered.
var transitions = map[string][]string{
	StatusPending:    {StatusWaitlisted, StatusApproved, StatusRejected, StatusCancelled},
	StatusWaitlisted: {StatusPending, StatusApproved, StatusRejected, StatusCancelled},
	StatusApproved:   {StatusCancelled},
	StatusRejected:   {StatusPending},
	StatusCancelled:  {},
}

// ErrInvalid wraps a refused input (a status that does not exist).
var ErrInvalid = errors.New("invalid change")

// ErrCannotChangeStatus is the logic error CannotChangeDealerStatus (2): the
// state machine does not allow the change.
var ErrCannotChangeStatus = errors.New("CannotChangeDealerStatus")

// ErrCannotDelete is the logic error CannotDeleteApplication (4): an
// approved application holds a table and is cancelled instead.
var ErrCannotDelete = errors.New("CannotDeleteApplication")

// CanChange tells whether an application of status from may become to;
// staying at the same status is allowed (and changes nothing).
func CanChange(from, to string) error {
	if !slices.Contains(Statuses, to) {
		return fmt.Errorf("%w: status must be one of %s (got %q)", ErrInvalid, strings.Join(Statuses, ", "), to)
	}
	if from == to || slices.Contains(transitions[from], to) {
		return nil
	}
	allowed := "none: it is final"
	if next := transitions[from]; len(next) > 0 {
		allowed = strings.Join(next, ", ")
	}
	return fmt.Errorf("%w: an application %s cannot become %s (allowed: %s)", ErrCannotChangeStatus, from, to, allowed)
}

// CanDelete tells whether an application may be deleted: any but an approved
// one.
func CanDelete(a Application) error {
	if a.Status == StatusApproved {
		return fmt.Errorf("%w: application %d is approved and holds a table; cancel it first", ErrCannotDelete, a.ID)
	}
	return nil
}

// SetStatus changes application id's status if the state machine allows it;
// it returns the dealer as changed and whether anything changed (setting the
// status an application has changes nothing and writes no event).
func (s *Service) SetStatus(ctx context.Context, id int64, status string) (Dealer, bool, error) {
	if !slices.Contains(Statuses, status) {
		return Dealer{}, false, CanChange("", status)
	}
	return s.store.SetStatus(ctx, id, status, func(a Application) error { return CanChange(a.Status, status) })
}

// DeleteApplication deletes application id unless it is approved; it
// returns the dealer as left.
func (s *Service) DeleteApplication(ctx context.Context, id int64) (Dealer, error) {
	return s.store.DeleteApplication(ctx, id, CanDelete)
}
