package grant

import (
	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// clientCredentials is the client_credentials grant (RFC 6749 §4.4): a
// service client gets a token for itself with the scopes it asks for (all
// its non-OBO scopes when it asks for none).
func (s *Service) clientCredentials(cl client.Client, asked scope.Set) (Issued, error) {
	if cl.Kind != client.KindService {
		return Issued{}, oauthErr(apierror.OAuthUnauthorizedClient, "This client acts for users: use the authorization_code grant.")
	}
	allowed := cl.Scopes.WithoutOBO()
	scopes := asked
	if len(asked) == 0 {
		scopes = allowed
	}
	if e := checkScopes(scopes, allowed); e != nil {
		return Issued{}, e
	}
	if len(scopes) == 0 {
		return Issued{}, oauthErr(apierror.OAuthInvalidScope, "The client is approved for no scope usable with client credentials.")
	}
	tok, err := s.issue(accesstoken.ClientSubject(cl.ID), cl, scopes, "")
	if err != nil {
		return Issued{}, err
	}
	return s.issued(tok, ""), nil
}

// checkScopes refuses unknown scopes, OBO-only ones and any not in allowed,
// naming them.
func checkScopes(asked, allowed scope.Set) error {
	if u := asked.Unknown(); len(u) > 0 {
		return oauthErr(apierror.OAuthInvalidScope, "Unknown scope: "+u[0]+".")
	}
	if o := asked.OBOOnly(); len(o) > 0 {
		return oauthErr(apierror.OAuthInvalidScope, "The scope "+o[0]+" is only for tokens a user consented to.")
	}
	for _, sc := range asked {
		if !allowed.Contains(sc) {
			return oauthErr(apierror.OAuthInvalidScope, "The scope "+sc+" is not granted to this client.")
		}
	}
	return nil
}
