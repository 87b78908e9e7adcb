package authorize

import (
	"context"
	"fmt"

	"github.com/eventreg/eventreg/services/auth/internal/consent"
)

// Apps lists the apps userID authorized, with what each may do.
func (s *Service) Apps(ctx context.Context, userID int64) ([]consent.Consent, error) {
	list, err := s.Consents.ListForUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("listing the consents of user %d: %w", userID, err)
	}
	return list, nil
}

// RevokeApp withdraws what userID granted app clientID: the consent (the
// next authorization asks again) and every refresh-token family of the two,
// with their access tokens.
func (s *Service) RevokeApp(ctx context.Context, userID, clientID int64) error {
	if err := s.Consents.Delete(ctx, userID, clientID); err != nil {
		return fmt.Errorf("deleting the consent of user %d to app %d: %w", userID, clientID, err)
	}
	if err := s.Families.RevokeUserClient(ctx, userID, clientID); err != nil {
		return fmt.Errorf("revoking the tokens of user %d for app %d: %w", userID, clientID, err)
	}
	return nil
}
