package grant_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

func TestAuthorizationCode(t *testing.T) {
	verifier := strings.Repeat("v", 43)
	t.Run("a code with PKCE is exchanged with its verifier for an access token and the first token of its family", func(t *testing.T) {
		r := newRules()
		code, g := r.code(t, badge, bob, "pii:basic pii:email", pkce.Challenge(verifier))
		out := r.exchange(t, badge, code, verifier)
		check(t, "the access token's claims", []string{out.Access.Claims.Subject, out.Access.Claims.ClientID, out.Access.Claims.Scope, out.Access.Claims.SessionID},
			[]string{accesstoken.UserSubject(bob), strconv.FormatInt(badge.ID, 10), "pii:basic pii:email", grant.SessionID(g.Family)})
		fam, err := r.families.Peek(ctx, out.Refresh)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "the family", fam, grant.Family{ID: g.Family, ClientID: badge.ID, UserID: bob, Granted: g.Scopes, Last: g.Scopes, JTI: out.Access.Claims.ID})
	})
	t.Run("a wrong or missing verifier is invalid_grant, a malformed one invalid_request", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, badge, bob, "pii:basic", pkce.Challenge(verifier))
		for _, wrong := range []string{strings.Repeat("w", 43), ""} {
			_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb", Verifier: wrong})
			oauthError(t, err, apierror.OAuthInvalidGrant)
		}
		_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb", Verifier: "short"})
		oauthError(t, err, apierror.OAuthInvalidRequest)
		r.exchange(t, badge, code, verifier) // none of them used the code up
	})
	t.Run("a code is another client's, or a service client's, to no avail", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, badge, bob, "pii:basic", "")
		_, err := r.Token(ctx, staff, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"})
		oauthError(t, err, apierror.OAuthInvalidGrant)
		_, err = r.Token(ctx, tracker, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"})
		oauthError(t, err, apierror.OAuthUnauthorizedClient)
	})
	t.Run("a replayed code is refused and revokes what its first redemption issued", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, badge, bob, "pii:basic", "")
		first := r.exchange(t, badge, code, "")
		_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"})
		oauthError(t, err, apierror.OAuthInvalidGrant)
		check(t, "the first refresh token alive", r.alive(t, first.Refresh), false)
		check(t, "the first access token revoked", r.revoked(t, first.Access), true)
	})
	t.Run("a code whose user's authorizations were revoked since is withdrawn", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, badge, bob, "pii:basic", "")
		if _, err := r.SignOut(ctx, bob); err != nil {
			t.Fatal(err)
		}
		_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"})
		if oe := oauthError(t, err, apierror.OAuthInvalidGrant); !strings.Contains(oe.Description, "withdrawn") {
			t.Fatalf("description %q does not say the code was withdrawn", oe.Description)
		}
	})
	t.Run("the token request may narrow the authorized scopes, never widen them", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, badge, bob, "pii:basic pii:email", "")
		_, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb",
			Scopes: scope.Parse("pii:basic pii:address")})
		oauthError(t, err, apierror.OAuthInvalidScope)
		code, _ = r.code(t, badge, bob, "pii:basic pii:email", "")
		out, err := r.Token(ctx, badge, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb",
			Scopes: scope.Parse("pii:email")})
		if err != nil {
			t.Fatal(err)
		}
		check(t, "the narrowed scope", out.Access.Claims.Scope, "pii:email")
	})
	t.Run("a sensitive scope the user no longer holds is left out; a user who is gone gets nothing", func(t *testing.T) {
		r := newRules()
		code, _ := r.code(t, staff, alice, "pii:basic user:read", "")
		r.users.set(alice, "system:login")
		out := r.exchange(t, staff, code, "")
		check(t, "the scope standing", out.Access.Claims.Scope, "pii:basic")
		code, _ = r.code(t, staff, alice, "pii:basic", "")
		r.users.set(alice)
		_, err := r.Token(ctx, staff, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"})
		oauthError(t, err, apierror.OAuthInvalidGrant)
	})
}
