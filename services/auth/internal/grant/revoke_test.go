package grant_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
)

func TestRevoke(t *testing.T) {
	t.Run("revoking a refresh token ends its family and the family's access tokens", func(t *testing.T) {
		r, out := authorized(t, badge, bob, "pii:basic")
		if err := r.Revoke(ctx, badge, out.Refresh); err != nil {
			t.Fatal(err)
		}
		check(t, "the refresh token alive", r.alive(t, out.Refresh), false)
		check(t, "the access token revoked", r.revoked(t, out.Access), true)
	})
	t.Run("revoking an access token revokes its family's tokens issued through it, not the refresh token", func(t *testing.T) {
		r, out := authorized(t, badge, bob, "pii:basic")
		if err := r.Revoke(ctx, badge, out.Access.Token); err != nil {
			t.Fatal(err)
		}
		check(t, "the access token revoked", r.revoked(t, out.Access), true)
		check(t, "the refresh token alive", r.alive(t, out.Refresh), true)
		next := r.refreshed(t, badge, out.Refresh, "")
		next.Access.Claims.IssuedAt = time.Now().Add(time.Second).Unix() // issued after the cutoff
		check(t, "a later access token of the family revoked", r.revoked(t, next.Access), false)
	})
	t.Run("revoking a service token revokes the client's tokens issued through it", func(t *testing.T) {
		r := newRules()
		out, err := r.Token(ctx, tracker, grant.Request{GrantType: grant.TypeClientCredentials})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Revoke(ctx, tracker, out.Access.Token); err != nil {
			t.Fatal(err)
		}
		check(t, "the access token revoked", r.revoked(t, out.Access), true)
	})
	t.Run("another client's tokens and unknown ones change nothing and are no error", func(t *testing.T) {
		r, out := authorized(t, badge, bob, "pii:basic")
		for _, tok := range []string{out.Refresh, out.Access.Token, "no-token"} {
			if err := r.Revoke(ctx, staff, tok); err != nil {
				t.Fatal(err)
			}
		}
		check(t, "the refresh token alive", r.alive(t, out.Refresh), true)
		check(t, "the access token revoked", r.revoked(t, out.Access), false)
	})
}

func TestIntrospect(t *testing.T) {
	r, out := authorized(t, badge, bob, "pii:basic")
	active := func(t *testing.T, cl client.Client, raw string) bool {
		t.Helper()
		in, err := r.Introspect(ctx, cl, raw)
		if err != nil {
			t.Fatal(err)
		}
		return in.Active
	}
	t.Run("a client's own refresh and access tokens are active, another client's are not", func(t *testing.T) {
		check(t, "the refresh token to its client", active(t, badge, out.Refresh), true)
		check(t, "the access token to its client", active(t, badge, out.Access.Token), true)
		check(t, "the refresh token to another", active(t, staff, out.Refresh), false)
		check(t, "the access token to another", active(t, staff, out.Access.Token), false)
	})
	t.Run("revoked tokens are inactive", func(t *testing.T) {
		if err := r.Revoke(ctx, badge, out.Refresh); err != nil {
			t.Fatal(err)
		}
		check(t, "the refresh token", active(t, badge, out.Refresh), false)
		check(t, "the access token", active(t, badge, out.Access.Token), false)
	})
}
