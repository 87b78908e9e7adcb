package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// RefreshStore is the contract of a refresh-token store: grant's rules use
// grant.Families; the authorization endpoint reserves the family a code
// will start, and the user's list of apps revokes one app's families.
type RefreshStore interface {
	grant.Families
	// Reserve records that a code of userID and clientID, living ttl, will
	// start family id: revoking the user's authorizations meanwhile
	// withdraws it.
	Reserve(ctx context.Context, userID, clientID int64, id string, ttl time.Duration) error
	// RevokeUserClient revokes the families of userID with clientID, and
	// those of their outstanding codes.
	RevokeUserClient(ctx context.Context, userID, clientID int64) error
}

// TokenStores are a refresh-token store and the denylist its revocations
// write to.
type TokenStores struct {
	Families RefreshStore
	Denylist grant.Denylist
}

// Families runs the contract of refresh-token stores; open returns stores
// whose families end idle after their last use and absolute after their
// creation. Stores opened by one test may share their data: every case
// uses users of its own.
func Families(t *testing.T, open func(t *testing.T, idle, absolute time.Duration) TokenStores) {
	st := open(t, time.Hour, 24*time.Hour)
	s := st.Families
	users := int64(5000)
	family := func(client int64) grant.Family {
		users++
		return grant.Family{ID: grant.NewFamilyID(), ClientID: client, UserID: users, Granted: scope.Parse("pii:basic pii:email"),
			Last: scope.Parse("pii:basic"), JTI: "jti-" + strconv.FormatInt(users, 10), AuthTime: 1767225600, SID: "browser-sid"}
	}
	start := func(t *testing.T, s RefreshStore, f grant.Family) string {
		t.Helper()
		tok, err := s.Create(ctx, f)
		must(t, "creating a family", err)
		return tok
	}
	rotate := func(t *testing.T, tok string, f grant.Family) (string, grant.Family) {
		t.Helper()
		f.Granted, f.Last, f.JTI = scope.Parse("pii:basic"), scope.Parse("pii:basic"), "jti-next"
		next, err := s.Rotate(ctx, grant.Rotation{Token: tok, ClientID: f.ClientID, Granted: f.Granted, Last: f.Last, JTI: f.JTI})
		must(t, "rotating", err)
		return next, f
	}
	peek := func(t *testing.T, tok string, want grant.Family) {
		t.Helper()
		got, err := s.Peek(ctx, tok)
		must(t, "peeking", err)
		check(t, "the family", got, want)
	}
	dead := func(t *testing.T, what, tok string) {
		t.Helper()
		_, err := s.Peek(ctx, tok)
		is(t, what, err, grant.ErrRefreshInvalid)
	}
	revoked := func(t *testing.T, f grant.Family) {
		t.Helper()
		r, err := st.Denylist.Revoked(ctx, accesstoken.Claims{ID: "any", ClientID: strconv.FormatInt(f.ClientID, 10), SessionID: grant.SessionID(f.ID)})
		must(t, "reading the denylist", err)
		if !r {
			t.Fatal("the family's access tokens are not revoked")
		}
	}

	t.Run("a created family is found by its token", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		if id, ok := grant.FamilyOfToken(tok); !ok || id != f.ID {
			t.Fatalf("the token %q does not name its family %s", tok, f.ID)
		}
		peek(t, tok, f)
	})
	t.Run("a rotation replaces the token and records the grant, scopes and jti", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		next, f := rotate(t, tok, f)
		peek(t, next, f)
		dead(t, "the rotated token", tok)
	})
	t.Run("another client's token does not rotate, and is no reuse", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		_, err := s.Rotate(ctx, grant.Rotation{Token: tok, ClientID: 503})
		is(t, "another client's rotation", err, grant.ErrWrongClient)
		next, _ := rotate(t, tok, f)
		reused, err := s.DetectReuse(ctx, tok, 503)
		must(t, "detecting reuse", err)
		if reused {
			t.Fatal("another client's rotated token was taken for reuse")
		}
		_, err = s.Peek(ctx, next)
		must(t, "the family after another client's attempts", err)
	})
	t.Run("a rotated token presented again revokes the family and its access tokens", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		next, _ := rotate(t, tok, f)
		reused, err := s.DetectReuse(ctx, tok, f.ClientID)
		must(t, "detecting reuse", err)
		if !reused {
			t.Fatal("a rotated token was not taken for reuse")
		}
		dead(t, "the family's current token after a reuse", next)
		revoked(t, f)
	})
	t.Run("the current token is no reuse", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		reused, err := s.DetectReuse(ctx, tok, f.ClientID)
		must(t, "detecting reuse", err)
		if reused {
			t.Fatal("the current token was taken for reuse")
		}
		rotate(t, tok, f)
	})
	t.Run("a token that is no refresh token is invalid everywhere", func(t *testing.T) {
		dead(t, "a malformed token", "not-a-token")
		_, err := s.Rotate(ctx, grant.Rotation{Token: "not-a-token", ClientID: 502})
		is(t, "rotating a malformed token", err, grant.ErrRefreshInvalid)
		reused, err := s.DetectReuse(ctx, "not-a-token", 502)
		if err != nil || reused {
			t.Fatalf("reuse of a malformed token: %v, %v", reused, err)
		}
	})
	t.Run("of concurrent rotations of one token one wins and the others revoke the family", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		const n = 8
		var wg sync.WaitGroup
		nexts, errs := make([]string, n), make([]error, n)
		for i := range n {
			wg.Go(func() {
				nexts[i], errs[i] = s.Rotate(ctx, grant.Rotation{Token: tok, ClientID: f.ClientID, Granted: f.Granted, Last: f.Last, JTI: "j"})
			})
		}
		wg.Wait()
		won, reuses := "", 0
		for i, err := range errs {
			switch {
			case err == nil && won == "":
				won = nexts[i]
			case errors.Is(err, grant.ErrRefreshReused):
				reuses++
			case !errors.Is(err, grant.ErrRefreshInvalid):
				t.Fatalf("rotation %d: %v", i, err)
			}
		}
		if won == "" || reuses == 0 {
			t.Fatalf("%d rotations: winner %q, %d reuses; want one winner and a reuse", n, won, reuses)
		}
		dead(t, "the winner's token once the others presented the rotated one", won)
		revoked(t, f)
	})
	t.Run("a revoked family is dead, its access tokens too", func(t *testing.T) {
		f := family(502)
		tok := start(t, s, f)
		must(t, "revoking", s.RevokeFamily(ctx, f.ID))
		dead(t, "a revoked family's token", tok)
		revoked(t, f)
		_, err := s.Rotate(ctx, grant.Rotation{Token: tok, ClientID: f.ClientID})
		is(t, "rotating a revoked family's token", err, grant.ErrRefreshInvalid)
	})
	t.Run("a family revoked before it exists is created dead, and is not withdrawn", func(t *testing.T) {
		f := family(502)
		must(t, "revoking", s.RevokeFamily(ctx, f.ID))
		tok, err := s.Create(ctx, f)
		is(t, "creating a revoked family", err, grant.ErrFamilyRevoked)
		if _, ok := grant.FamilyOfToken(tok); !ok {
			t.Fatalf("creating a revoked family answered no token: %q", tok)
		}
		dead(t, "the token of a family created after its revocation", tok)
		w, err := s.Withdrawn(ctx, f.ID)
		must(t, "reading withdrawn", err)
		if w {
			t.Fatal("a code replay's revocation counts as a withdrawal")
		}
	})
	t.Run("revoking a user revokes the families that match and counts them", func(t *testing.T) {
		a := family(502)
		b := a
		b.ID, b.ClientID = grant.NewFamilyID(), 503
		ta, tb := start(t, s, a), start(t, s, b)
		n, err := s.RevokeUser(ctx, a.UserID, func(f grant.Family) bool { return f.ClientID == 502 })
		must(t, "revoking the user", err)
		check(t, "families revoked", n, 1)
		dead(t, "the matching family", ta)
		peek(t, tb, b)
		revoked(t, a)
	})
	t.Run("revoking a user and an app revokes that app's families only", func(t *testing.T) {
		a := family(502)
		b := a
		b.ID, b.ClientID = grant.NewFamilyID(), 503
		ta, tb := start(t, s, a), start(t, s, b)
		must(t, "revoking the user and app", s.RevokeUserClient(ctx, a.UserID, 502))
		dead(t, "the app's family", ta)
		peek(t, tb, b)
	})
	t.Run("a reserved family is withdrawn with its user's authorizations", func(t *testing.T) {
		f := family(502)
		must(t, "reserving", s.Reserve(ctx, f.UserID, f.ClientID, f.ID, time.Minute))
		n, err := s.RevokeUser(ctx, f.UserID, func(grant.Family) bool { return true })
		must(t, "revoking the user", err)
		check(t, "families revoked", n, 1)
		w, err := s.Withdrawn(ctx, f.ID)
		must(t, "reading withdrawn", err)
		if !w {
			t.Fatal("the reserved family is not withdrawn")
		}
		_, err = s.Create(ctx, f)
		is(t, "creating the withdrawn family", err, grant.ErrFamilyRevoked)
		revoked(t, f)
	})
	t.Run("revoking a user and an app withdraws that app's reserved families only", func(t *testing.T) {
		mine := family(502)
		other := mine
		other.ID, other.ClientID = grant.NewFamilyID(), 503
		for _, f := range []grant.Family{mine, other} {
			must(t, "reserving", s.Reserve(ctx, f.UserID, f.ClientID, f.ID, time.Minute))
		}
		must(t, "revoking the user and app", s.RevokeUserClient(ctx, mine.UserID, 502))
		_, err := s.Create(ctx, mine)
		is(t, "creating the app's family", err, grant.ErrFamilyRevoked)
		start(t, s, other)
	})
	t.Run("a family ends its idle lifetime after its last use", func(t *testing.T) {
		idle := open(t, 200*time.Millisecond, time.Hour).Families
		f := family(502)
		tok := start(t, idle, f)
		outlive(200 * time.Millisecond)
		_, err := idle.Peek(ctx, tok)
		is(t, "a family past its idle lifetime", err, grant.ErrRefreshInvalid)
	})
	t.Run("a family ends its absolute lifetime however often it rotates", func(t *testing.T) {
		short := open(t, time.Hour, 300*time.Millisecond).Families
		f := family(502)
		tok := start(t, short, f)
		next, err := short.Rotate(ctx, grant.Rotation{Token: tok, ClientID: f.ClientID, Granted: f.Granted, Last: f.Last, JTI: "j"})
		must(t, "rotating within the lifetime", err)
		outlive(300 * time.Millisecond)
		_, err = short.Rotate(ctx, grant.Rotation{Token: next, ClientID: f.ClientID, Granted: f.Granted, Last: f.Last, JTI: "j"})
		is(t, "rotating past the absolute lifetime", err, grant.ErrRefreshInvalid)
	})
}
