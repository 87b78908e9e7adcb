package grant_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
)

// down is a token store that cannot answer.
type down struct{}

var errDown = errors.New("connection refused")

func (down) Redeem(context.Context, string, int64, string, string) (grant.CodeGrant, error) {
	return grant.CodeGrant{}, errDown
}
func (down) Create(context.Context, grant.Family) (string, error)               { return "", errDown }
func (down) Peek(context.Context, string) (grant.Family, error)                 { return grant.Family{}, errDown }
func (down) Rotate(context.Context, grant.Rotation) (string, error)             { return "", errDown }
func (down) DetectReuse(context.Context, string, int64) (bool, error)           { return false, errDown }
func (down) RevokeFamily(context.Context, string) error                         { return errDown }
func (down) Withdrawn(context.Context, string) (bool, error)                    { return false, errDown }
func (down) EndUser(context.Context, int64) (int, error)                        { return 0, errDown }
func (down) RevokeIssuedThrough(context.Context, grant.Cutoff, time.Time) error { return errDown }
func (down) Revoked(context.Context, accesstoken.Claims) (bool, error)          { return false, errDown }
func (down) Feed(context.Context, int64) (authapi.Revocations, error) {
	return authapi.Revocations{}, errDown
}
func (down) RevokeUser(context.Context, int64, func(grant.Family) bool) (int, error) {
	return 0, errDown
}

// TestOneErrorPolicy: every failure of a store is a DependencyError naming
// it (answered 503 by grantapi), never swallowed; what the client got wrong
// is an OAuth error.
func TestOneErrorPolicy(t *testing.T) {
	r, out := authorized(t, badge, bob, "pii:basic")
	code, _ := r.code(t, badge, bob, "pii:basic", "")
	r.Codes, r.Refresh, r.Denylist, r.Sessions = down{}, down{}, down{}, down{}
	dependency := func(t *testing.T, err error) {
		t.Helper()
		var de *apierror.DependencyError
		if !errors.As(err, &de) || de.What != "The token store" || !errors.Is(de.Err, errDown) {
			t.Fatalf("want a DependencyError of the token store, got %#v", err)
		}
	}
	for name, call := range map[string]func() error{
		"a code exchange":                     func() error { _, err := r.Token(ctx, badge, redeem(code)); return err },
		"a refresh":                           func() error { _, err := r.refresh(badge, out.Refresh, ""); return err },
		"revoking a refresh token":            func() error { return r.Revoke(ctx, badge, out.Refresh) },
		"revoking an access token":            func() error { return r.Revoke(ctx, badge, out.Access.Token) },
		"introspecting an access token":       func() error { _, err := r.Introspect(ctx, badge, out.Access.Token); return err },
		"reading the revocation feed":         func() error { _, err := r.RevocationFeed(ctx, 0); return err },
		"revoking after a permission changed": func() error { _, err := r.UserChanged(ctx, bob); return err },
		"signing a user out":                  func() error { _, err := r.SignOut(ctx, bob); return err },
	} {
		t.Run(name, func(t *testing.T) { dependency(t, call()) })
	}
	t.Run("the client's mistakes are OAuth errors of status 400", func(t *testing.T) {
		for _, req := range []grant.Request{{GrantType: grant.TypeRefreshToken}, {GrantType: grant.TypeAuthorizationCode}, {GrantType: "password"}} {
			_, err := r.Token(ctx, badge, req)
			var oe *apierror.OAuthError
			if !errors.As(err, &oe) || oe.Status != 400 {
				t.Fatalf("%+v: want a 400 OAuth error, got %#v", req, err)
			}
		}
	})
}
