package oauth

import (
	"context"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// clientCredentials is the client_credentials grant (RFC 6749 §4.4): a
// service client gets a token for itself with the scopes it asks for (all
// its non-OBO scopes when it asks for none).
func (h *Handler) clientCredentials(_ context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindService {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "This client acts for users: use the authorization_code grant.")
	}
	allowed := cl.Scopes.WithoutOBO()
	scopes, asked := requestedScopes(p)
	if !asked {
		scopes = allowed
	}
	if e := checkScopes(scopes, allowed, true); e != nil {
		return tokenResponse{}, e
	}
	if len(scopes) == 0 {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "The client is approved for no scope usable with client credentials.")
	}
	tok, e := h.issue(accesstoken.ClientSubject(cl.ID), cl, scopes, "")
	if e != nil {
		return tokenResponse{}, e
	}
	return h.respond(tok, ""), nil
}

// checkScopes refuses unknown scopes, OBO-only ones (when serviceOnly) and
// any not in allowed, naming them.
func checkScopes(asked, allowed scope.Set, serviceOnly bool) *apierror.OAuthError {
	if u := asked.Unknown(); len(u) > 0 {
		return oauthErr(apierror.OAuthInvalidScope, "Unknown scope: "+u[0]+".")
	}
	if serviceOnly {
		if o := asked.OBOOnly(); len(o) > 0 {
			return oauthErr(apierror.OAuthInvalidScope, "The scope "+o[0]+" is only for tokens a user consented to.")
		}
	}
	for _, s := range asked {
		if !allowed.Contains(s) {
			return oauthErr(apierror.OAuthInvalidScope, "The scope "+s+" is not granted to this client.")
		}
	}
	return nil
}
