package grant_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

func TestClientCredentials(t *testing.T) {
	r := newRules()
	t.Run("a service client gets every scope it may use when it asks for none, and what it asks for", func(t *testing.T) {
		out, err := r.Token(ctx, tracker, grant.Request{GrantType: grant.TypeClientCredentials})
		if err != nil {
			t.Fatal(err)
		}
		check(t, "subject, scope and refresh token", []string{out.Access.Claims.Subject, out.Access.Claims.Scope, out.Access.Claims.SessionID, out.Refresh},
			[]string{accesstoken.ClientSubject(tracker.ID), "user:read volunteer:read webhook:manage", "", ""})
		out, err = r.Token(ctx, tracker, grant.Request{GrantType: grant.TypeClientCredentials, Scopes: scope.Parse("user:read")})
		if err != nil {
			t.Fatal(err)
		}
		check(t, "the scope asked for", out.Access.Claims.Scope, "user:read")
	})
	t.Run("an unknown scope, a user's scope or one not granted is invalid_scope", func(t *testing.T) {
		for _, asked := range []string{"user:write", "pii:basic", "registration:read"} {
			_, err := r.Token(ctx, tracker, grant.Request{GrantType: grant.TypeClientCredentials, Scopes: scope.Parse(asked)})
			oauthError(t, err, apierror.OAuthInvalidScope)
		}
	})
	t.Run("a client acting for users is unauthorized_client", func(t *testing.T) {
		_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeClientCredentials})
		oauthError(t, err, apierror.OAuthUnauthorizedClient)
	})
}
