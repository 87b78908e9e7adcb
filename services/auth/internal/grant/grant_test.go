package grant_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// The rules run here on the in-memory stores of storetest, which keep the
// contract the Redis stores keep (storetest's conformance suite runs on
// both), so that a case needs nothing running.

var ctx = context.Background()

// Apps of the cases.
var (
	badge   = client.Client{ID: 502, Kind: client.KindOBO, Scopes: scope.Parse("pii:basic pii:email pii:address")}
	staff   = client.Client{ID: 503, Kind: client.KindOBO, Scopes: scope.Parse("pii:basic pii:email user:read registration:read")}
	tracker = client.Client{ID: 501, Kind: client.KindService, Scopes: scope.Parse("user:read volunteer:read webhook:manage")}
)

// Users of the cases: alice holds user:read, bob nothing sensitive.
const alice, bob = int64(1001), int64(1002)

// rules is the business over in-memory stores.
type rules struct {
	*grant.Service
	codes    *storetest.MemoryCodes
	families *storetest.MemoryFamilies
	denylist *storetest.MemoryDenylist
	sessions *storetest.MemorySessions
	users    *users
}

func newRules() *rules {
	families, denylist := storetest.NewMemoryTokens(time.Hour, 24*time.Hour, time.Hour)
	r := &rules{codes: storetest.NewMemoryCodes(time.Minute), families: families, denylist: denylist,
		sessions: storetest.NewMemorySessions(time.Hour, 24*time.Hour),
		users:    &users{perms: map[int64][]string{alice: {"system:login", "user:read"}, bob: {"system:login"}}}}
	r.Service = &grant.Service{Tokens: accesstoken.NewIssuer(plainSigner{}, "https://auth.test", "eventreg-api", time.Hour),
		Codes: r.codes, Refresh: families, Denylist: denylist, Sessions: r.sessions, Users: r.users,
		Issuer: "https://auth.test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return r
}

// users is the users service: what each user holds now.
type users struct {
	mu    sync.Mutex
	perms map[int64][]string
}

func (u *users) Permissions(_ context.Context, id int64) ([]string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.perms[id]
	if !ok {
		return nil, usersclient.ErrNotFound
	}
	return p, nil
}

func (u *users) set(id int64, perms ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if perms == nil {
		delete(u.perms, id)
		return
	}
	u.perms[id] = perms
}

// plainSigner "signs" a token by encoding it: the rules read their own
// tokens back, and signing is signing's business.
type plainSigner struct{}

func (plainSigner) Sign(payload []byte) (string, error) {
	return "plain." + base64.RawURLEncoding.EncodeToString(payload), nil
}

func (plainSigner) Verify(raw string) ([]byte, error) {
	body, ok := strings.CutPrefix(raw, "plain.")
	if !ok {
		return nil, errors.New("not a plain token")
	}
	return base64.RawURLEncoding.DecodeString(body)
}

// code issues a code of user to cl, as the authorization endpoint does:
// the family it will start reserved first.
func (r *rules) code(t *testing.T, cl client.Client, user int64, scopes, challenge string) (string, grant.CodeGrant) {
	t.Helper()
	g := grant.CodeGrant{ClientID: cl.ID, RedirectURI: "https://app.example/cb", UserID: user, Scopes: scope.Parse(scopes),
		Challenge: challenge, Family: grant.NewFamilyID()}
	if err := r.families.Reserve(ctx, user, cl.ID, g.Family, time.Minute); err != nil {
		t.Fatal(err)
	}
	code, err := r.codes.Create(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	return code, g
}

// exchange redeems code for cl and returns what it issued.
func (r *rules) exchange(t *testing.T, cl client.Client, code, verifier string) grant.Issued {
	t.Helper()
	out, err := r.Token(ctx, cl, grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb", Verifier: verifier})
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return out
}

// authorize runs a grant of user to cl and returns what it issued.
func (r *rules) authorize(t *testing.T, cl client.Client, user int64, scopes string) grant.Issued {
	t.Helper()
	code, _ := r.code(t, cl, user, scopes, "")
	return r.exchange(t, cl, code, "")
}

// authorized is new rules in which user has authorized cl for scopes, and
// what the code gave cl.
func authorized(t *testing.T, cl client.Client, user int64, scopes string) (*rules, grant.Issued) {
	t.Helper()
	r := newRules()
	return r, r.authorize(t, cl, user, scopes)
}

// refresh presents token as cl, asking for scopes ("" for none).
func (r *rules) refresh(cl client.Client, token, scopes string) (grant.Issued, error) {
	return r.Token(ctx, cl, grant.Request{GrantType: grant.TypeRefreshToken, RefreshToken: token, Scopes: scope.Parse(scopes)})
}

// refreshed presents token as cl and fails t unless it refreshes.
func (r *rules) refreshed(t *testing.T, cl client.Client, token, scopes string) grant.Issued {
	t.Helper()
	out, err := r.refresh(cl, token, scopes)
	if err != nil {
		t.Fatalf("refreshing: %v", err)
	}
	return out
}

// revoked reports whether the denylist revokes an access token.
func (r *rules) revoked(t *testing.T, tok accesstoken.Issued) bool {
	t.Helper()
	revoked, err := r.denylist.Revoked(ctx, tok.Claims)
	if err != nil {
		t.Fatal(err)
	}
	return revoked
}

// alive reports whether a refresh token is its family's current one.
func (r *rules) alive(t *testing.T, token string) bool {
	t.Helper()
	_, err := r.families.Peek(ctx, token)
	if err != nil && !errors.Is(err, grant.ErrRefreshInvalid) {
		t.Fatal(err)
	}
	return err == nil
}

// check fails t with want's diff from got, naming what.
func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("%s (-want +got):\n%s", what, d)
	}
}

// oauthError fails t unless err is the OAuth error code, and returns it.
func oauthError(t *testing.T, err error, code string) *apierror.OAuthError {
	t.Helper()
	var oe *apierror.OAuthError
	if !errors.As(err, &oe) || oe.Code != code {
		t.Fatalf("got %v, want the OAuth error %s", err, code)
	}
	return oe
}

// redeem is the token request of code.
func redeem(code string) grant.Request {
	return grant.Request{GrantType: grant.TypeAuthorizationCode, Code: code, RedirectURI: "https://app.example/cb"}
}
