package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestSessionExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: needs redis-server")
	}
	rdb, err := redisdb.Open(testkit.NewRedis(t), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	now := time.Now()
	s := New(rdb, time.Minute, time.Hour)
	s.now = func() time.Time { return now }

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
