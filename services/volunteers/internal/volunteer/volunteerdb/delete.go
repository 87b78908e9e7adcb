package volunteerdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// deleteSQL deletes a record and returns it as the read query reads it.
const deleteSQL = `DELETE FROM volunteers v WHERE v.convention_id = $1 AND v.user_id = $2 RETURNING ` + columns

// Delete removes the user's volunteer record in convention and writes its
// volunteer-deleted event, carrying the record as it was, in the same
// transaction; volunteer.ErrNotFound when there is none.
func (s *Store) Delete(ctx context.Context, conventionID string, userID int64) (volunteer.Volunteer, error) {
	var last volunteer.Volunteer
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		last, err = scan(tx.QueryRow(ctx, deleteSQL, conventionID, userID))
		if errors.Is(err, pgx.ErrNoRows) {
			return volunteer.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deleting the volunteer record of user %d: %w", userID, err)
		}
		return outbox.Add(ctx, tx, volunteer.DeletedEvent(last))
	})
	return last, err
}
