package oauth

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
)

// refreshToken is the refresh_token grant (RFC 6749 §6) with rotation
// (RFC 9700 §4.14.2): the token is the family's current one and the
// client's own; the grant is re-checked against the user's and the
// client's current scopes and narrowed for good; the token rotates.
func (h *Handler) refreshToken(ctx context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindOBO {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	raw, e := p.get("refresh_token")
	if e != nil {
		return tokenResponse{}, e
	}
	if raw == "" {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "refresh_token is required.")
	}
	if _, e := p.get("redirect_uri"); e != nil { // accepted, as the contract lists it, and not used
		return tokenResponse{}, e
	}
	fam, err := h.Refresh.Peek(ctx, raw)
	if errors.Is(err, refreshtoken.ErrInvalid) {
		// Maybe a rotated token: Rotate detects its reuse by the client it
		// belongs to and revokes the family.
		_, err := h.Refresh.Rotate(ctx, raw, cl.ID, nil, nil, "")
		return tokenResponse{}, h.rotateFailed(ctx, err)
	}
	if err != nil {
		h.Log.WarnContext(ctx, "reading a refresh token failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	if fam.ClientID != cl.ID {
		return tokenResponse{}, invalidRefresh
	}
	granted, e := h.standing(ctx, cl, fam.UserID, fam.Granted)
	if e != nil {
		if e.Code == apierror.OAuthInvalidGrant {
			if err := h.Refresh.RevokeFamily(ctx, fam.ID); err != nil {
				h.Log.WarnContext(ctx, "revoking a family whose grant ended failed", "error", err.Error())
			}
		}
		return tokenResponse{}, e
	}
	scopes := fam.Last.Standing(granted, nil)
	if asked, ok := requestedScopes(p); ok {
		if !asked.SubsetOf(fam.Granted) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "A refresh may narrow the granted scopes, never widen them.")
		}
		scopes = asked.Standing(granted, nil)
	}
	if len(scopes) == 0 {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "None of the requested scopes is still granted.")
	}
	tok, e := h.issue(accesstoken.UserSubject(fam.UserID), cl, scopes, refreshtoken.SessionID(fam.ID))
	if e != nil {
		return tokenResponse{}, e
	}
	next, err := h.Refresh.Rotate(ctx, raw, cl.ID, granted, scopes, tok.Claims.ID)
	if err != nil {
		return tokenResponse{}, h.rotateFailed(ctx, err)
	}
	return h.respond(tok, next), nil
}

var invalidRefresh = oauthErr(apierror.OAuthInvalidGrant, "The refresh token is invalid, expired, revoked, or was issued to another client.")

// rotateFailed maps a failed rotation to its answer.
func (h *Handler) rotateFailed(ctx context.Context, err error) *apierror.OAuthError {
	switch {
	case err == nil: // the token was current after all: nothing was issued with it
		return invalidRefresh
	case errors.Is(err, refreshtoken.ErrReused):
		h.Metrics.RefreshReuse()
		return invalidRefresh
	case errors.Is(err, refreshtoken.ErrInvalid), errors.Is(err, refreshtoken.ErrWrongClient):
		return invalidRefresh
	default:
		h.Log.WarnContext(ctx, "rotating a refresh token failed", "error", err.Error())
		return unavailable("The token store")
	}
}
