package grant

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
)

// authorizationCode is the authorization_code grant (RFC 6749 §4.1.3): the
// code is redeemed once, by the client, redirect URI and PKCE verifier it
// is bound to; what it grants is re-checked against the user's and the
// client's current scopes; a refresh-token family starts.
func (s *Service) authorizationCode(ctx context.Context, cl client.Client, r Request) (Issued, error) {
	if cl.Kind != client.KindOBO {
		return Issued{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	if r.Code == "" || r.RedirectURI == "" {
		return Issued{}, oauthErr(apierror.OAuthInvalidRequest, "code and redirect_uri are required.")
	}
	challenge := ""
	if r.Verifier != "" {
		if !pkce.ValidVerifier(r.Verifier) {
			return Issued{}, oauthErr(apierror.OAuthInvalidRequest, "code_verifier must be 43 to 128 unreserved characters.")
		}
		challenge = pkce.Challenge(r.Verifier)
	}
	g, err := s.Codes.Redeem(ctx, r.Code, cl.ID, r.RedirectURI, challenge)
	switch {
	case errors.Is(err, ErrCodeReplayed):
		// RFC 6749 §4.1.2: revoke what the first redemption issued. Only the
		// client the code was issued to gets here (the store checks the binding first).
		if err := s.revokeFamily(ctx, g.Family, "a code replayed"); err != nil {
			return Issued{}, err
		}
		return Issued{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code was already used; the tokens issued with it are revoked.")
	case errors.Is(err, ErrCodeInvalid):
		return Issued{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code is invalid, expired, or was issued to another client, redirect URI or PKCE verifier.")
	case err != nil:
		return Issued{}, apierror.DependencyFailed(tokenStore, err)
	}
	// The user's or the app's authorizations were revoked (a sign-out
	// everywhere, "revoke access", a removed role) after the code was
	// issued: the code goes with them.
	withdrawn, err := s.Refresh.Withdrawn(ctx, g.Family)
	if err != nil {
		return Issued{}, apierror.DependencyFailed(tokenStore, err)
	}
	if withdrawn {
		return Issued{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code was withdrawn: the user's authorizations were revoked after it was issued.")
	}
	granted, err := s.standing(ctx, cl, g.UserID, g.Scopes)
	if err != nil {
		return Issued{}, err
	}
	scopes := granted
	if len(r.Scopes) > 0 {
		if !r.Scopes.SubsetOf(g.Scopes) {
			return Issued{}, oauthErr(apierror.OAuthInvalidScope, "The scope may narrow the authorized scopes, never widen them.")
		}
		if scopes = r.Scopes.Within(granted); len(scopes) == 0 {
			return Issued{}, oauthErr(apierror.OAuthInvalidScope, "None of the requested scopes is still granted.")
		}
	}
	tok, err := s.issue(accesstoken.UserSubject(g.UserID), cl, scopes, SessionID(g.Family))
	if err != nil {
		return Issued{}, err
	}
	refresh, err := s.Refresh.Create(ctx, Family{ID: g.Family, ClientID: cl.ID, UserID: g.UserID, Granted: granted, Last: scopes, JTI: tok.Claims.ID,
		AuthTime: g.AuthTime, SID: g.SID})
	if err != nil && !errors.Is(err, ErrFamilyRevoked) {
		return Issued{}, apierror.DependencyFailed(tokenStore, err)
	}
	// On ErrFamilyRevoked a replay of the code arrived while this, the first
	// redemption, ran: it wins the response, and what it issued is already
	// revoked (the family's sid is on the denylist), as RFC 6749 §4.1.2 asks.
	return s.identify(s.issued(tok, refresh), cl, g.UserID, g.AuthTime, g.Nonce, g.SID)
}
