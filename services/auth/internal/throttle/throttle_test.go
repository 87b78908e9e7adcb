package throttle

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newFailures(t *testing.T, allowed int) *Failures {
	t.Helper()
	rdb, err := redisdb.Open(testkit.NewRedis(t), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return NewFailures(rdb, "test", allowed, time.Hour)
}

func TestAttempt(t *testing.T) {
	ctx := context.Background()
	t.Run("parallel attempts: exactly the allowance passes", func(t *testing.T) {
		f := newFailures(t, 3)
		var mu sync.Mutex
		passed := 0
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wait, _, err := f.Count(ctx, "k")
				if err != nil {
					t.Error(err)
					return
				}
				if wait == 0 {
					mu.Lock()
					passed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if passed != 3 {
			t.Fatalf("%d of 20 parallel attempts passed, want 3", passed)
		}
		if wait, blocked := f.Blocked("k"); !blocked || wait <= 0 {
			t.Fatal("a refused key is not remembered locally")
		}
	})
	t.Run("a refund gives back exactly one attempt, the last one included", func(t *testing.T) {
		f := newFailures(t, 3)
		// One attempt, refunded: the allowance is whole again.
		if wait, _, err := f.Count(ctx, "k"); err != nil || wait != 0 {
			t.Fatal(wait, err)
		}
		if err := f.Refund(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if wait, _, err := f.Count(ctx, "k"); err != nil || wait != 0 {
				t.Fatalf("attempt %d after the refund: wait %v, %v", i+1, wait, err)
			}
		}
		if wait, _, _ := f.Count(ctx, "k"); wait == 0 {
			t.Fatal("a fourth attempt passed: the refund gave back more than one")
		}
		// Over the limit: a refund makes room for exactly one more.
		if err := f.Refund(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if wait, remaining, _ := f.Count(ctx, "k"); wait != 0 || remaining != 0 {
			t.Fatalf("after a refund at the limit: wait %v, remaining %d", wait, remaining)
		}
		if wait, _, _ := f.Count(ctx, "k"); wait == 0 {
			t.Fatal("two attempts passed after one refund")
		}
	})
	t.Run("refunding a key never counted is harmless", func(t *testing.T) {
		f := newFailures(t, 1)
		if err := f.Refund(ctx, "never"); err != nil {
			t.Fatal(err)
		}
		if wait, _, _ := f.Count(ctx, "never"); wait != 0 {
			t.Fatal("refused")
		}
	})
}

func TestKnown(t *testing.T) {
	ctx := context.Background()
	rdb, err := redisdb.Open(testkit.NewRedis(t), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	k := NewKnown(rdb, "test", time.Hour)
	t.Run("a key is known once added, and only that key", func(t *testing.T) {
		if has, err := k.Has(ctx, "a"); err != nil || has {
			t.Fatalf("before: %v %v", has, err)
		}
		if err := k.Add(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if has, err := k.Has(ctx, "a"); err != nil || !has {
			t.Fatalf("after: %v %v", has, err)
		}
		if has, _ := k.Has(ctx, "b"); has {
			t.Fatal("another key is known")
		}
	})
	t.Run("a key is forgotten after its ttl", func(t *testing.T) {
		if err := k.Add(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.TTL(ctx, "auth:known:test:c").Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("ttl %v, want at most an hour", ttl)
		}
	})
}
