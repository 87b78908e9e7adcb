package grant

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
)

// invalidRefresh is the answer to every refresh token that does not refresh.
var invalidRefresh = oauthErr(apierror.OAuthInvalidGrant, "The refresh token is invalid, expired, revoked, or was issued to another client.")

// refreshToken is the refresh_token grant (RFC 6749 §6) with rotation
// (RFC 9700 §4.14.2): the token is the family's current one and the
// client's own; the grant is re-checked against the user's and the
// client's current scopes and narrowed for good; the token rotates.
func (s *Service) refreshToken(ctx context.Context, cl client.Client, r Request) (Issued, error) {
	if cl.Kind != client.KindOBO {
		return Issued{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	if r.RefreshToken == "" {
		return Issued{}, oauthErr(apierror.OAuthInvalidRequest, "refresh_token is required.")
	}
	fam, err := s.Refresh.Peek(ctx, r.RefreshToken)
	if errors.Is(err, refreshtoken.ErrInvalid) {
		// Maybe a rotated token: Rotate detects its reuse by the client it
		// belongs to and revokes the family.
		_, err := s.Refresh.Rotate(ctx, r.RefreshToken, cl.ID, nil, nil, "")
		return Issued{}, s.rotateFailed(err)
	}
	if err != nil {
		return Issued{}, apierror.DependencyFailed(tokenStore, err)
	}
	if fam.ClientID != cl.ID {
		return Issued{}, invalidRefresh
	}
	granted, err := s.standing(ctx, cl, fam.UserID, fam.Granted)
	var oe *apierror.OAuthError
	if errors.As(err, &oe) && oe.Code == apierror.OAuthInvalidGrant {
		// The grant ended (the user is gone, or nothing of it is allowed):
		// so does the family.
		if err := s.revokeFamily(ctx, fam.ID, "its grant ended"); err != nil {
			return Issued{}, err
		}
	}
	if err != nil {
		return Issued{}, err
	}
	scopes := fam.Last.Within(granted)
	if len(r.Scopes) > 0 {
		if !r.Scopes.SubsetOf(fam.Granted) {
			return Issued{}, oauthErr(apierror.OAuthInvalidScope, "A refresh may narrow the granted scopes, never widen them.")
		}
		scopes = r.Scopes.Within(granted)
	}
	if len(scopes) == 0 {
		return Issued{}, oauthErr(apierror.OAuthInvalidScope, "None of the requested scopes is still granted.")
	}
	tok, err := s.issue(accesstoken.UserSubject(fam.UserID), cl, scopes, refreshtoken.SessionID(fam.ID))
	if err != nil {
		return Issued{}, err
	}
	next, err := s.Refresh.Rotate(ctx, r.RefreshToken, cl.ID, granted, scopes, tok.Claims.ID)
	if err != nil {
		return Issued{}, s.rotateFailed(err)
	}
	return s.identify(s.issued(tok, next), cl, fam.UserID, fam.AuthTime, "", fam.SID)
}

// rotateFailed maps a failed rotation to its answer.
func (s *Service) rotateFailed(err error) error {
	switch {
	case err == nil: // the token was current after all: nothing was issued with it
		return invalidRefresh
	case errors.Is(err, refreshtoken.ErrReused):
		s.Metrics.RefreshReuse()
		return invalidRefresh
	case errors.Is(err, refreshtoken.ErrInvalid), errors.Is(err, refreshtoken.ErrWrongClient):
		return invalidRefresh
	default:
		return apierror.DependencyFailed(tokenStore, err)
	}
}
