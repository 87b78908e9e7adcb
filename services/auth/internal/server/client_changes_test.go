package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
)

// feedValidator checks tokens as a resource service does, revocation feed
// included.
func feedValidator(t *testing.T, s *authtest.Server) *tokenauth.Validator {
	t.Helper()
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: s.InternalURL + "/.well-known/jwks.json", Issuer: s.URL, Audience: "eventreg-api",
		RevocationsURL: s.InternalURL + "/internal/revocations", RevocationPoll: 20 * time.Millisecond, FeedCredentials: s.Peer})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v.Start(ctx)
	return v
}

// refusedByResource waits until the resource-side validator refuses tok as
// revoked.
func refusedByResource(t *testing.T, v *tokenauth.Validator, tok string) {
	t.Helper()
	err := testkit.Poll(bg(), 5*time.Second, func(ctx context.Context) error {
		if _, err := v.Validate(ctx, tok); !errors.Is(err, tokenauth.ErrRevoked) {
			return errors.New("still accepted: " + errString(err))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "valid"
	}
	return err.Error()
}

func serviceToken(t *testing.T, s *authtest.Server, id, secret string) string {
	t.Helper()
	st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", id, secret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %s", st, body)
	}
	return decode(t, body)["access_token"].(string)
}

func introspectAs(t *testing.T, s *authtest.Server, id, secret, token string) map[string]any {
	t.Helper()
	st, _, body := post(t, s.URL+"/api/oauth/introspect", form, url.Values{"token": {token}}.Encode(), id, secret)
	if st != http.StatusOK {
		t.Fatalf("introspect: %d %s", st, body)
	}
	return decode(t, body)
}

// TestClientChangesRevokeItsTokens: deleting an app, rotating its secret or
// taking a scope from it revokes the access tokens it holds, at
// introspection and at the resource services.
func TestClientChangesRevokeItsTokens(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	v := feedValidator(t, s)
	clients := s.App.Clients // serve's own, wired with the token store as the CLI is

	t.Run("rotating a client's secret revokes the tokens got with the old one", func(t *testing.T) {
		tok := serviceToken(t, s, authtest.ReaderID, authtest.ReaderSecret)
		if _, err := v.Validate(bg(), tok); err != nil {
			t.Fatalf("before: %v", err)
		}
		secret, err := clients.RotateSecret(bg(), 504)
		if err != nil {
			t.Fatal(err)
		}
		if m := introspectAs(t, s, authtest.ReaderID, secret, tok); m["active"] != false {
			t.Fatalf("introspection after the rotation: %v", m)
		}
		refusedByResource(t, v, tok)
	})
	t.Run("taking a scope from a client revokes its tokens", func(t *testing.T) {
		tok := serviceToken(t, s, authtest.ServiceID, authtest.ServiceSecret)
		if _, err := v.Validate(bg(), tok); err != nil {
			t.Fatalf("before: %v", err)
		}
		fixture := authtest.Clients()
		for i := range fixture {
			if fixture[i].ID == 501 {
				fixture[i].Scopes = slices.DeleteFunc(slices.Clone(fixture[i].Scopes), func(s string) bool { return s == "volunteer:read" })
			}
		}
		res, err := clients.Import(bg(), fixture)
		if err != nil || !slices.Contains(res.Revoked, 501) {
			t.Fatalf("import: %+v %v", res, err)
		}
		if m := introspectAs(t, s, authtest.ServiceID, authtest.ServiceSecret, tok); m["active"] != false {
			t.Fatalf("introspection after the scope was taken: %v", m)
		}
		refusedByResource(t, v, tok)
	})
	t.Run("deleting a client revokes its tokens", func(t *testing.T) {
		staff := oboConfig(s, authtest.StaffID, authtest.StaffSecret, "pii:basic")
		tok := grant(t, s, staff, authtest.Alice)
		if _, err := v.Validate(bg(), tok.AccessToken); err != nil {
			t.Fatalf("before: %v", err)
		}
		if err := clients.Delete(bg(), 503); err != nil {
			t.Fatal(err)
		}
		refusedByResource(t, v, tok.AccessToken)
	})
	t.Run("an import that takes nothing away revokes nothing", func(t *testing.T) {
		res, err := clients.Import(bg(), authtest.Clients()[:1])
		if err != nil || len(res.Revoked) != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("without the token store a change that must revoke is refused, and changes nothing", func(t *testing.T) {
		bare := client.NewService(clientdb.New(s.Pool), clientsecret.NewHasher([]byte(s.Config.ClientSecretKey)), 0) // no token store
		if err := bare.Delete(bg(), 501); !errors.Is(err, client.ErrNoRevoker) {
			t.Fatalf("want ErrNoRevoker, got %v", err)
		}
		if _, err := bare.Get(bg(), 501); err != nil {
			t.Fatalf("the client is gone: %v", err)
		}
	})
}
