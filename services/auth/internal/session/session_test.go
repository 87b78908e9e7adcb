package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// clocked is a store on a Redis of its own (sessions idle a minute, an hour
// at most) whose clock reads *now, and that Redis.
func clocked(t *testing.T, now *time.Time) (*Store, redis.UniversalClient) {
	rdb := testkit.NewRedisClient(t)
	s := New(rdb, time.Minute, time.Hour)
	s.now = func() time.Time { return *now }
	return s, rdb
}

func TestSessionExpiry(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s, rdb := clocked(t, &now)

	sess, err := s.Create(ctx, 1001)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a session is found by its id and the raw id is not stored", func(t *testing.T) {
		got, err := s.Get(ctx, sess.ID)
		if err != nil || got.UserID != 1001 {
			t.Fatalf("%+v %v", got, err)
		}
		if n, _ := rdb.Exists(ctx, "auth:sess:{"+sess.ID+"}").Result(); n != 0 {
			t.Fatal("raw id stored")
		}
	})
	t.Run("use extends the idle expiry", func(t *testing.T) {
		ttl, _ := rdb.PTTL(ctx, key(sess.ID)).Result()
		if ttl <= 50*time.Second || ttl > time.Minute {
			t.Fatalf("ttl %v", ttl)
		}
	})
	t.Run("the absolute expiry ends a session in use", func(t *testing.T) {
		now = now.Add(time.Hour + time.Second)
		if _, err := s.Get(ctx, sess.ID); !errors.Is(err, ErrNone) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("an unknown id is no session", func(t *testing.T) {
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNone) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("delete ends it", func(t *testing.T) {
		now = time.Now()
		s2, _ := s.Create(ctx, 7)
		_ = s.Delete(ctx, s2.ID)
		if _, err := s.Get(ctx, s2.ID); !errors.Is(err, ErrNone) {
			t.Fatalf("%v", err)
		}
	})
}

func TestEndUser(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s, rdb := clocked(t, &now)
	create := func(t *testing.T, user int64) Session {
		t.Helper()
		sess, err := s.Create(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}

	t.Run("ending a user's sessions ends every one of them and no other user's", func(t *testing.T) {
		a1, a2, b := create(t, 1001), create(t, 1001), create(t, 1002)
		if n, err := s.EndUser(ctx, 1001); err != nil || n != 2 {
			t.Fatalf("%d %v", n, err)
		}
		for _, id := range []string{a1.ID, a2.ID} {
			if _, err := s.Get(ctx, id); !errors.Is(err, ErrNone) {
				t.Fatalf("a session of the user survived: %v", err)
			}
		}
		if _, err := s.Get(ctx, b.ID); err != nil {
			t.Fatalf("another user's session ended: %v", err)
		}
		if n, _ := rdb.Exists(ctx, userKey(1001), endingKey(1001)).Result(); n != 0 {
			t.Fatal("the index outlived the sessions it named")
		}
	})
	t.Run("the index stores only hashes and lives no longer than its newest session can", func(t *testing.T) {
		sess := create(t, 1003)
		members, _ := rdb.ZRange(ctx, userKey(1003), 0, -1).Result()
		if len(members) != 1 || members[0] == sess.ID {
			t.Fatalf("index members %v", members)
		}
		if ttl, _ := rdb.PTTL(ctx, userKey(1003)).Result(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("index ttl %v", ttl)
		}
	})
	t.Run("a sign-in drops the sessions past their absolute end from the index", func(t *testing.T) {
		create(t, 1004)
		now = now.Add(time.Hour + time.Second)
		create(t, 1004)
		if n, _ := rdb.ZCard(ctx, userKey(1004)).Result(); n != 1 {
			t.Fatalf("%d members", n)
		}
	})
	t.Run("a sign-in after the sessions were ended counts", func(t *testing.T) {
		now = time.Now()
		if _, err := s.EndUser(ctx, 1005); err != nil {
			t.Fatal(err)
		}
		sess := create(t, 1005)
		if _, err := s.Get(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
	})
}
