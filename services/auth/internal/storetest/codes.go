package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// CodeStore is the contract of an authorization-code store: grant redeems
// codes (grant.Codes), the authorization endpoint creates them.
type CodeStore interface {
	grant.Codes
	// Create stores g and returns a new code.
	Create(ctx context.Context, g grant.CodeGrant) (string, error)
}

// Codes runs the contract of code stores; open returns an empty store
// whose codes live ttl.
func Codes(t *testing.T, open func(t *testing.T, ttl time.Duration) CodeStore) {
	s := open(t, time.Minute)
	g := grant.CodeGrant{ClientID: 502, RedirectURI: "https://app.example/cb", UserID: 1001, Scopes: scope.Parse("openid pii:basic"),
		Challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Family: grant.NewFamilyID(), Nonce: "n-0S6", AuthTime: 1767225600, SID: "sid-1"}
	create := func(t *testing.T, g grant.CodeGrant) string {
		t.Helper()
		code, err := s.Create(ctx, g)
		must(t, "creating a code", err)
		return code
	}

	t.Run("a code redeems to its grant for its client, redirect URI and challenge", func(t *testing.T) {
		code := create(t, g)
		got, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		must(t, "redeeming", err)
		check(t, "the grant", got, g)
	})
	t.Run("a code redeems once: the second redemption is a replay naming the family", func(t *testing.T) {
		code := create(t, g)
		_, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		must(t, "redeeming", err)
		got, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		is(t, "the second redemption", err, grant.ErrCodeReplayed)
		check(t, "the family of the replay", got.Family, g.Family)
	})
	t.Run("only the code's client is told of a replay", func(t *testing.T) {
		code := create(t, g)
		_, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		must(t, "redeeming", err)
		got, err := s.Redeem(ctx, code, 503, g.RedirectURI, g.Challenge)
		is(t, "another client's replay", err, grant.ErrCodeInvalid)
		check(t, "what another client learns", got, grant.CodeGrant{})
	})
	t.Run("a wrong client, redirect URI or challenge is invalid and leaves the code unused", func(t *testing.T) {
		code := create(t, g)
		for name, try := range map[string]func() error{
			"client":       func() error { _, err := s.Redeem(ctx, code, 503, g.RedirectURI, g.Challenge); return err },
			"redirect URI": func() error { _, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI+"/", g.Challenge); return err },
			"challenge":    func() error { _, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, "other"); return err },
			"no challenge": func() error { _, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, ""); return err },
		} {
			is(t, "a wrong "+name, try(), grant.ErrCodeInvalid)
		}
		_, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		must(t, "redeeming after the wrong attempts", err)
	})
	t.Run("a code issued without PKCE refuses a challenge", func(t *testing.T) {
		plain := g
		plain.Challenge = ""
		code := create(t, plain)
		_, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		is(t, "a challenge for a code without one", err, grant.ErrCodeInvalid)
		got, err := s.Redeem(ctx, code, g.ClientID, g.RedirectURI, "")
		must(t, "redeeming without a challenge", err)
		check(t, "the grant", got, plain)
	})
	t.Run("an unknown code is invalid", func(t *testing.T) {
		_, err := s.Redeem(ctx, "no-such-code", g.ClientID, g.RedirectURI, g.Challenge)
		is(t, "an unknown code", err, grant.ErrCodeInvalid)
	})
	t.Run("a code expires", func(t *testing.T) {
		short := open(t, 100*time.Millisecond)
		code, err := short.Create(ctx, g)
		must(t, "creating a code", err)
		outlive(100 * time.Millisecond)
		_, err = short.Redeem(ctx, code, g.ClientID, g.RedirectURI, g.Challenge)
		is(t, "an expired code", err, grant.ErrCodeInvalid)
	})
}
