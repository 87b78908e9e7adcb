package dealer_test

import (
	"errors"
	"testing"

	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// TestStateMachine walks every pair of statuses against the table of
// docs/dealers.md.
func TestStateMachine(t *testing.T) {
	allowed := map[string]map[string]bool{
		"pending":    {"pending": true, "waitlisted": true, "approved": true, "rejected": true, "cancelled": true},
		"waitlisted": {"waitlisted": true, "pending": true, "approved": true, "rejected": true, "cancelled": true},
		"approved":   {"approved": true, "cancelled": true},
		"rejected":   {"rejected": true, "pending": true},
		"cancelled":  {"cancelled": true},
	}
	for _, from := range dealer.Statuses {
		for _, to := range dealer.Statuses {
			err := dealer.CanChange(from, to)
			switch {
			case allowed[from][to] && err != nil:
				t.Errorf("%s → %s refused: %v", from, to, err)
			case !allowed[from][to] && !errors.Is(err, dealer.ErrCannotChangeStatus):
				t.Errorf("%s → %s: got %v, want CannotChangeDealerStatus", from, to, err)
			}
		}
	}
	t.Run("a status that does not exist is invalid, not a logic error", func(t *testing.T) {
		err := dealer.CanChange("pending", "paid")
		if !errors.Is(err, dealer.ErrInvalid) || errors.Is(err, dealer.ErrCannotChangeStatus) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCanDelete(t *testing.T) {
	for _, s := range dealer.Statuses {
		err := dealer.CanDelete(dealer.Application{ID: 1, Status: s})
		if (s == dealer.StatusApproved) != errors.Is(err, dealer.ErrCannotDelete) {
			t.Errorf("%s: %v", s, err)
		}
	}
}
