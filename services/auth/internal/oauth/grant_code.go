package oauth

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authcode"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
)

// authorizationCode is the authorization_code grant (RFC 6749 §4.1.3): the
// code is redeemed once, by the client, redirect URI and PKCE verifier it
// is bound to; what it grants is re-checked against the user's and the
// client's current scopes; a refresh-token family starts.
func (h *Handler) authorizationCode(ctx context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindOBO {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	code, e := p.get("code")
	if e != nil {
		return tokenResponse{}, e
	}
	redirect, e := p.get("redirect_uri")
	if e != nil {
		return tokenResponse{}, e
	}
	verifier, e := p.get("code_verifier")
	if e != nil {
		return tokenResponse{}, e
	}
	if code == "" || redirect == "" {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "code and redirect_uri are required.")
	}
	challenge := ""
	if verifier != "" {
		if !pkce.ValidVerifier(verifier) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "code_verifier must be 43 to 128 unreserved characters.")
		}
		challenge = pkce.Challenge(verifier)
	}
	g, err := h.Codes.Redeem(ctx, code, cl.ID, redirect, challenge)
	switch {
	case errors.Is(err, authcode.ErrReplayed):
		// RFC 6749 §4.1.2: revoke what the first redemption issued. Only the
		// client the code was issued to gets here (authcode checks the binding first).
		if rerr := h.Refresh.RevokeFamily(ctx, g.Family); rerr != nil {
			h.Log.WarnContext(ctx, "revoking after a code replay failed", "error", rerr.Error())
			return tokenResponse{}, unavailable("The token store")
		}
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code was already used; the tokens issued with it are revoked.")
	case errors.Is(err, authcode.ErrInvalid):
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code is invalid, expired, or was issued to another client, redirect URI or PKCE verifier.")
	case err != nil:
		h.Log.WarnContext(ctx, "redeeming a code failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	granted, e := h.standing(ctx, cl, g.UserID, g.Scopes)
	if e != nil {
		return tokenResponse{}, e
	}
	scopes := granted
	if asked, ok := requestedScopes(p); ok {
		if !asked.SubsetOf(g.Scopes) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "The scope may narrow the authorized scopes, never widen them.")
		}
		if scopes = asked.Standing(granted, nil); len(scopes) == 0 {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "None of the requested scopes is still granted.")
		}
	}
	tok, e := h.issue(accesstoken.UserSubject(g.UserID), cl, scopes, refreshtoken.SessionID(g.Family))
	if e != nil {
		return tokenResponse{}, e
	}
	refresh, err := h.Refresh.Create(ctx, refreshtoken.Family{ID: g.Family, ClientID: cl.ID, UserID: g.UserID, Granted: granted, Last: scopes, JTI: tok.Claims.ID})
	if errors.Is(err, refreshtoken.ErrRevoked) {
		// A replay of the code arrived while this, the first redemption, ran:
		// it wins the response, and what it issued is already revoked (the
		// family's sid is on the denylist), as RFC 6749 §4.1.2 asks.
		return h.respond(tok, refresh), nil
	}
	if err != nil {
		h.Log.WarnContext(ctx, "storing a refresh token failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	return h.respond(tok, refresh), nil
}
