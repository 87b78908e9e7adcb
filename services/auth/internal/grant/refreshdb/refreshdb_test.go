package refreshdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newStore(t *testing.T) *Store {
	t.Helper()
	rdb := testkit.NewRedisClient(t)
	return New(rdb, NewDenylist(rdb, time.Hour), Lifetimes{Idle: 30 * 24 * time.Hour, Absolute: 90 * 24 * time.Hour})
}

// TestReservedFamilies: the family a code will start is revoked with its
// user's or the user and app's authorizations, whether the code is redeemed
// after the revocation or while it runs.
func TestReservedFamilies(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	family := func(user, client int64) grant.Family {
		return grant.Family{ID: grant.NewFamilyID(), ClientID: client, UserID: user, Granted: scope.Parse("pii:basic"), Last: scope.Parse("pii:basic"), JTI: "j"}
	}
	all := func(grant.Family) bool { return true }

	t.Run("a revocation of the user withdraws a reserved family: its creation is refused", func(t *testing.T) {
		f := family(1001, 502)
		if err := s.Reserve(ctx, f.UserID, f.ClientID, f.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		if n, err := s.RevokeUser(ctx, f.UserID, all); err != nil || n != 1 {
			t.Fatalf("%d %v", n, err)
		}
		if w, err := s.Withdrawn(ctx, f.ID); err != nil || !w {
			t.Fatalf("withdrawn %v %v", w, err)
		}
		if _, err := s.Create(ctx, f); !errors.Is(err, grant.ErrFamilyRevoked) {
			t.Fatalf("create: %v", err)
		}
		if revoked, _ := s.denylist.Revoked(ctx, accesstoken.Claims{ID: "other", SessionID: grant.SessionID(f.ID)}); !revoked {
			t.Fatal("the sid of the reserved family is not on the denylist")
		}
	})
	t.Run("revoking the user and an app withdraws only that app's reserved families", func(t *testing.T) {
		mine, other := family(1002, 502), family(1002, 503)
		for _, f := range []grant.Family{mine, other} {
			if err := s.Reserve(ctx, f.UserID, f.ClientID, f.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RevokeUserClient(ctx, 1002, 502); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, mine); !errors.Is(err, grant.ErrFamilyRevoked) {
			t.Fatalf("the app's family: %v", err)
		}
		if _, err := s.Create(ctx, other); err != nil {
			t.Fatalf("another app's family: %v", err)
		}
	})
	t.Run("a family created before the revocation, not indexed yet, is judged by the revocation", func(t *testing.T) {
		f := family(1003, 502)
		if err := s.Reserve(ctx, f.UserID, f.ClientID, f.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		tok, err := s.Create(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		// As if the index write had not landed yet.
		_ = s.rdb.Del(ctx, indexKey(f.UserID, f.ClientID), clientsKey(f.UserID)).Err()
		if n, err := s.RevokeUser(ctx, f.UserID, all); err != nil || n != 1 {
			t.Fatalf("%d %v", n, err)
		}
		if _, err := s.Peek(ctx, tok); !errors.Is(err, grant.ErrRefreshInvalid) {
			t.Fatalf("the family lives: %v", err)
		}
		if w, _ := s.Withdrawn(ctx, f.ID); w {
			t.Fatal("a family revoked after its creation is reported withdrawn")
		}
	})
	t.Run("a replayed code's tombstone is no withdrawal", func(t *testing.T) {
		f := family(1004, 502)
		if err := s.RevokeFamily(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		if w, _ := s.Withdrawn(ctx, f.ID); w {
			t.Fatal("withdrawn")
		}
	})
	t.Run("reservations live no longer than their codes", func(t *testing.T) {
		if err := s.Reserve(ctx, 1005, 502, grant.NewFamilyID(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if ttl, _ := s.rdb.PTTL(ctx, pendingKey(1005)).Result(); ttl <= 0 || ttl > 2*time.Minute {
			t.Fatalf("ttl %v", ttl)
		}
	})
}

// TestMigrateOld: a family stored before families had lifetimes (no
// expiry, no creation time, rotated tokens in a plain set, absent from the
// user's index of clients) gets its lifetime, reuse detection and its place
// in the index RevokeUser reads.
func TestMigrateOld(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const user, client = int64(1001), int64(502)
	id := grant.NewFamilyID()
	cur, old := grant.NewRefreshToken(id), grant.NewRefreshToken(id)
	// As the first release wrote it.
	s.rdb.HSet(ctx, famKey(id), "cur", randtoken.Hash(cur), "client", client, "user", user, "granted", "pii:basic",
		"last", "pii:basic", "jti", "j", "revoked", "0")
	s.rdb.SAdd(ctx, usedKey(id), randtoken.Hash(old))
	s.rdb.SAdd(ctx, indexKey(user, client), id)
	revoked := grant.NewFamilyID()
	s.rdb.HSet(ctx, famKey(revoked), "cur", "x", "client", client, "user", user, "revoked", "1")

	if _, err := s.RevokeUser(ctx, user, func(grant.Family) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Peek(ctx, cur); err != nil {
		t.Fatalf("before the migration RevokeUser finds the old family, so this test shows nothing: %v", err)
	}

	n, err := s.MigrateOld(ctx)
	if err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	t.Run("the old family has its lifetime and the revoked one the revocation memory", func(t *testing.T) {
		if ttl, _ := s.rdb.PTTL(ctx, famKey(id)).Result(); ttl <= 0 || ttl > s.life.Idle {
			t.Fatalf("ttl %v", ttl)
		}
		if created, _ := s.rdb.HGet(ctx, famKey(id), "created").Result(); created == "" {
			t.Fatal("no creation time")
		}
		if ttl, _ := s.rdb.PTTL(ctx, famKey(revoked)).Result(); ttl <= 0 || ttl > revokedMemory {
			t.Fatalf("revoked ttl %v", ttl)
		}
	})
	t.Run("the old family is in the indexes, which expire", func(t *testing.T) {
		if ok, _ := s.rdb.SIsMember(ctx, clientsKey(user), client).Result(); !ok {
			t.Fatal("not in the user's clients")
		}
		for _, k := range []string{indexKey(user, client), clientsKey(user)} {
			if ttl, _ := s.rdb.PTTL(ctx, k).Result(); ttl <= 0 {
				t.Fatalf("%s ttl %v", k, ttl)
			}
		}
	})
	t.Run("a second run has nothing left to do", func(t *testing.T) {
		if n, err := s.MigrateOld(ctx); err != nil || n != 0 {
			t.Fatalf("%d %v", n, err)
		}
	})
	t.Run("a rotated token of the old family is detected as reuse", func(t *testing.T) {
		if n, _ := s.rdb.Exists(ctx, usedKey(id)).Result(); n != 0 {
			t.Fatal("the old set of rotated tokens is left")
		}
		if reused, err := s.DetectReuse(ctx, old, client); err != nil || !reused {
			t.Fatalf("reused %v, %v", reused, err)
		}
	})
}

func TestMigrateOldFamiliesAreRevokedWithTheirUser(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	id := grant.NewFamilyID()
	tok := grant.NewRefreshToken(id)
	s.rdb.HSet(ctx, famKey(id), "cur", randtoken.Hash(tok), "client", 502, "user", 1002, "granted", "pii:basic",
		"last", "pii:basic", "jti", "j", "revoked", "0")
	s.rdb.SAdd(ctx, indexKey(1002, 502), id)
	if _, err := s.MigrateOld(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RevokeUser(ctx, 1002, func(grant.Family) bool { return true }); err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := s.Peek(ctx, tok); !errors.Is(err, grant.ErrRefreshInvalid) {
		t.Fatalf("the old family survived RevokeUser: %v", err)
	}
}

func TestMigrateOldLeavesCurrentFamiliesAlone(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	f := grant.Family{ID: grant.NewFamilyID(), ClientID: 502, UserID: 1003, Granted: scope.Parse("pii:basic"), Last: scope.Parse("pii:basic"), JTI: "j"}
	if _, err := s.Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	before, _ := s.rdb.PTTL(ctx, famKey(f.ID)).Result()
	if n, err := s.MigrateOld(ctx); err != nil || n != 0 {
		t.Fatalf("%d %v", n, err)
	}
	if after, _ := s.rdb.PTTL(ctx, famKey(f.ID)).Result(); after > before {
		t.Fatalf("ttl %v -> %v", before, after)
	}
}
