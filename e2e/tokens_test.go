package e2e

import (
	"context"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/eventreg/eventreg/e2e/stack"
)

// clientCredentials is a service app's golang.org/x/oauth2 configuration
// against the gateway gw.
func clientCredentials(gw, id, secret string, style oauth2.AuthStyle, scopes ...string) *clientcredentials.Config {
	return &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: gw + "/api/oauth/token", Scopes: scopes, AuthStyle: style}
}

// serviceToken is a client-credentials access token of the service app id.
func serviceToken(t testing.TB, s *stack.Stack, id, secret string, scopes ...string) string {
	t.Helper()
	tok, err := clientCredentials(s.GatewayURL, id, secret, oauth2.AuthStyleInHeader, scopes...).Token(context.Background())
	if err != nil {
		t.Fatalf("a client-credentials token of %s: %v", id, err)
	}
	return tok.AccessToken
}

// authApp is an OBO app's golang.org/x/oauth2 configuration against the gateway gw.
func authApp(gw, id, secret string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: authRedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: gw + "/oauth/authorize", TokenURL: gw + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
}

// userToken is what app gets acting for user, who signs in and consents in
// a browser of its own (authHTTPBrowser.token).
func userToken(t testing.TB, gw string, app *oauth2.Config, user, password string) *oauth2.Token {
	t.Helper()
	return newAuthHTTPBrowser(t, gw).token(app, user, password)
}
