package grant_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
)

func TestRefreshToken(t *testing.T) {
	t.Run("a refresh rotates the token and issues an access token of the family's scopes", func(t *testing.T) {
		r, first := authorized(t, badge, bob, "pii:basic pii:email")
		out := r.refreshed(t, badge, first.Refresh, "")
		check(t, "the scope", out.Access.Claims.Scope, "pii:basic pii:email")
		check(t, "the old token alive", r.alive(t, first.Refresh), false)
		check(t, "the new token alive", r.alive(t, out.Refresh), true)
		check(t, "the family's sid", out.Access.Claims.SessionID, first.Access.Claims.SessionID)
	})
	t.Run("a rotated token presented again revokes the family and its access tokens", func(t *testing.T) {
		r, first, second := rotatedOnce(t)
		_, err := r.refresh(badge, first.Refresh, "")
		oauthError(t, err, apierror.OAuthInvalidGrant)
		check(t, "the current token alive after the reuse", r.alive(t, second.Refresh), false)
		check(t, "the access token revoked", r.revoked(t, second.Access), true)
	})
	t.Run("another client's refresh token is invalid_grant and changes nothing", func(t *testing.T) {
		r, first, second := rotatedOnce(t)
		for _, tok := range []string{second.Refresh, first.Refresh} { // current, then rotated
			_, err := r.refresh(staff, tok, "")
			oauthError(t, err, apierror.OAuthInvalidGrant)
		}
		check(t, "the family's token alive", r.alive(t, second.Refresh), true)
		check(t, "the access token revoked", r.revoked(t, second.Access), false)
	})
	t.Run("a refresh may narrow the scopes, never widen them", func(t *testing.T) {
		r, first := authorized(t, badge, bob, "pii:basic pii:email")
		_, err := r.refresh(badge, first.Refresh, "pii:basic pii:address")
		oauthError(t, err, apierror.OAuthInvalidScope)
		out := r.refreshed(t, badge, first.Refresh, "pii:email")
		check(t, "the narrowed scope", out.Access.Claims.Scope, "pii:email")
		out = r.refreshed(t, badge, out.Refresh, "")
		check(t, "the scope of a refresh that asks for none (the last one's)", out.Access.Claims.Scope, "pii:email")
	})
	t.Run("a sensitive permission the user lost narrows the grant for good", func(t *testing.T) {
		r, first := authorized(t, staff, alice, "pii:basic user:read")
		r.users.set(alice, "system:login")
		out := r.refreshed(t, staff, first.Refresh, "")
		check(t, "the scope", out.Access.Claims.Scope, "pii:basic")
		r.users.set(alice, "system:login", "user:read")
		_, err := r.refresh(staff, out.Refresh, "user:read")
		oauthError(t, err, apierror.OAuthInvalidScope)
	})
	t.Run("a grant whose user is gone ends with its family", func(t *testing.T) {
		r, first := authorized(t, badge, bob, "pii:basic")
		r.users.set(bob)
		_, err := r.refresh(badge, first.Refresh, "")
		oauthError(t, err, apierror.OAuthInvalidGrant)
		check(t, "the family's token alive", r.alive(t, first.Refresh), false)
	})
	t.Run("a service client does not refresh, and a refresh needs a token", func(t *testing.T) {
		r, first := authorized(t, badge, bob, "pii:basic")
		_, err := r.refresh(tracker, first.Refresh, "")
		oauthError(t, err, apierror.OAuthUnauthorizedClient)
		_, err = r.refresh(badge, "", "")
		oauthError(t, err, apierror.OAuthInvalidRequest)
		_, err = r.refresh(badge, "no-token", "")
		oauthError(t, err, apierror.OAuthInvalidGrant)
	})
	t.Run("a token is refreshed by its grant type only", func(t *testing.T) {
		r := newRules()
		_, err := r.Token(ctx, badge, grant.Request{GrantType: "password"})
		oauthError(t, err, apierror.OAuthUnsupportedGrantType)
	})
}

// rotatedOnce authorizes the badge printer for bob and refreshes once: the
// first token is then a rotated one, the second its family's current one.
func rotatedOnce(t *testing.T) (r *rules, first, second grant.Issued) {
	t.Helper()
	r, first = authorized(t, badge, bob, "pii:basic")
	return r, first, r.refreshed(t, badge, first.Refresh, "")
}
