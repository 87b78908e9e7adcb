package grant

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/apierror"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
)

// TestOneErrorPolicy: every failure of a store is a DependencyError naming
// it (answered 503 by grantapi), never swallowed; what the client got wrong
// is an OAuth error.
func TestOneErrorPolicy(t *testing.T) {
	// A Redis nobody listens on: every store call fails at once.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	denylist := refreshtoken.NewDenylist(rdb, time.Hour)
	s := &Service{Refresh: refreshtoken.New(rdb, denylist, refreshtoken.Lifetimes{}), Denylist: denylist,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	obo := client.Client{ID: 7, Kind: client.KindOBO}

	dependency := func(t *testing.T, err error) {
		t.Helper()
		var de *apierror.DependencyError
		if !errors.As(err, &de) || de.What != tokenStore {
			t.Fatalf("want a DependencyError of %q, got %#v", tokenStore, err)
		}
	}
	t.Run("revoking a family that must end", func(t *testing.T) {
		dependency(t, s.revokeFamily(ctx, "fam", "test"))
	})
	tok := strings.Repeat("f", 22) + "." + strings.Repeat("s", 43)
	if _, ok := refreshtoken.FamilyOfToken(tok); !ok {
		t.Fatal("not a refresh token's shape; see refreshtoken.FamilyOfToken")
	}
	t.Run("revocation of a refresh token", func(t *testing.T) {
		dependency(t, s.Revoke(ctx, obo, tok))
	})
	t.Run("a refresh", func(t *testing.T) {
		_, err := s.Token(ctx, obo, Request{GrantType: TypeRefreshToken, RefreshToken: tok})
		dependency(t, err)
	})
	t.Run("the client's mistakes are OAuth errors", func(t *testing.T) {
		for _, r := range []Request{{GrantType: TypeRefreshToken}, {GrantType: TypeAuthorizationCode}, {GrantType: "password"}} {
			_, err := s.Token(ctx, obo, r)
			var oe *apierror.OAuthError
			if !errors.As(err, &oe) || oe.Status != 400 {
				t.Fatalf("%+v: want a 400 OAuth error, got %#v", r, err)
			}
		}
	})
}
