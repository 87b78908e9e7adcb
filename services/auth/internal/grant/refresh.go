package grant

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// invalidRefresh is the answer to every refresh token that does not refresh.
var invalidRefresh = oauthErr(apierror.OAuthInvalidGrant, "The refresh token is invalid, expired, revoked, or was issued to another client.")

// refreshToken is the refresh_token grant (RFC 6749 §6) with rotation
// (RFC 9700 §4.14.2): the token is the family's current one and the
// client's own; the grant is re-checked against the user's and the
// client's current scopes and narrowed for good; the token rotates. A
// rotated token presented again by its client revokes the family and the
// access tokens issued with it (reuse detection).
func (s *Service) refreshToken(ctx context.Context, cl client.Client, r Request) (Issued, error) {
	if cl.Kind != client.KindOBO {
		return Issued{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	if r.RefreshToken == "" {
		return Issued{}, oauthErr(apierror.OAuthInvalidRequest, "refresh_token is required.")
	}
	fam, err := s.Refresh.Peek(ctx, r.RefreshToken)
	if errors.Is(err, ErrRefreshInvalid) {
		return Issued{}, s.detectReuse(ctx, cl, r.RefreshToken)
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
	tok, err := s.issue(accesstoken.UserSubject(fam.UserID), cl, scopes, SessionID(fam.ID))
	if err != nil {
		return Issued{}, err
	}
	next, err := s.Refresh.Rotate(ctx, Rotation{Token: r.RefreshToken, ClientID: cl.ID, Granted: granted, Last: scopes, JTI: tok.Claims.ID})
	switch {
	case errors.Is(err, ErrRefreshReused):
		// A concurrent refresh with the same token won: this one presented
		// a rotated token.
		s.Metrics.RefreshReuse()
		return Issued{}, invalidRefresh
	case errors.Is(err, ErrRefreshInvalid), errors.Is(err, ErrWrongClient):
		return Issued{}, invalidRefresh
	case err != nil:
		return Issued{}, apierror.DependencyFailed(tokenStore, err)
	}
	return s.identify(s.issued(tok, next), cl, fam.UserID, fam.AuthTime, "", fam.SID)
}

// detectReuse answers a refresh token that is not a family's current one:
// when it is a rotated token of the client's own family, the family and its
// access tokens are revoked first. The answer is invalid_grant either way.
func (s *Service) detectReuse(ctx context.Context, cl client.Client, token string) error {
	reused, err := s.Refresh.DetectReuse(ctx, token, cl.ID)
	if err != nil {
		return apierror.DependencyFailed(tokenStore, err)
	}
	if reused {
		s.Metrics.RefreshReuse()
	}
	return invalidRefresh
}
