package grant_test

import (
	"testing"
)

func TestUserChanged(t *testing.T) {
	t.Run("a lost sensitive permission revokes the authorizations holding its scope, and only those", func(t *testing.T) {
		r := newRules()
		sensitive, plain := r.authorize(t, staff, alice, "pii:basic user:read"), r.authorize(t, badge, alice, "pii:basic")
		r.users.set(alice, "system:login")
		n, err := r.UserChanged(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "authorizations revoked", n, 1)
		check(t, "the sensitive one alive", r.alive(t, sensitive.Refresh), false)
		check(t, "its access token revoked", r.revoked(t, sensitive.Access), true)
		check(t, "the other alive", r.alive(t, plain.Refresh), true)
	})
	t.Run("a user who is gone loses every authorization", func(t *testing.T) {
		r, out := authorized(t, badge, bob, "pii:basic")
		r.users.set(bob)
		n, err := r.UserChanged(ctx, bob)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "authorizations revoked", n, 1)
		check(t, "the refresh token alive", r.alive(t, out.Refresh), false)
	})
}

func TestSignOut(t *testing.T) {
	r := newRules()
	a, b := r.authorize(t, badge, bob, "pii:basic"), r.authorize(t, staff, bob, "pii:basic")
	other := r.authorize(t, badge, alice, "pii:basic")
	for _, user := range []int64{bob, bob, alice} {
		if _, err := r.sessions.Create(ctx, user); err != nil {
			t.Fatal(err)
		}
	}
	code, _ := r.code(t, badge, bob, "pii:basic", "")
	out, err := r.SignOut(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("it ends the user's sessions and every authorization, and counts them", func(t *testing.T) {
		check(t, "sessions and authorizations ended", []int{out.Sessions, out.Authorizations}, []int{2, 3})
		check(t, "the refresh tokens alive", []bool{r.alive(t, a.Refresh), r.alive(t, b.Refresh)}, []bool{false, false})
		check(t, "the access tokens revoked", []bool{r.revoked(t, a.Access), r.revoked(t, b.Access)}, []bool{true, true})
	})
	t.Run("the user's outstanding code no longer redeems", func(t *testing.T) {
		_, err := r.Token(ctx, badge, redeem(code))
		if err == nil {
			t.Fatal("a code issued before the sign-out was redeemed")
		}
	})
	t.Run("another user keeps what they have", func(t *testing.T) {
		check(t, "another user's refresh token alive", r.alive(t, other.Refresh), true)
		n, err := r.sessions.EndUser(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "another user's sessions", n, 1)
	})
}
