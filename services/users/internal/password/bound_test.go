package password

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cheap keeps these tests fast: the bound does not depend on the cost.
var cheap = Params{MemoryKiB: 64, Time: 1, Threads: 1}

// watchIDKey wraps idKey for the test: it counts the computations running at
// once, keeps the highest count, and makes each last at least hold, so that
// callers overlap whenever the bound lets them.
func watchIDKey(t *testing.T, hold time.Duration) (peak func() int64) {
	orig := idKey
	var running, most atomic.Int64
	idKey = func(p, salt []byte, time_, memory uint32, threads uint8, keyLen uint32) []byte {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(hold)
		return orig(p, salt, time_, memory, threads, keyLen)
	}
	t.Cleanup(func() { idKey = orig })
	return most.Load
}

func TestAtMostConcurrencyComputationsAtOnce(t *testing.T) {
	h, err := NewHasher(cheap, 3)
	if err != nil {
		t.Fatal(err)
	}
	encoded, err := Hash("a good password", cheap)
	if err != nil {
		t.Fatal(err)
	}
	peak := watchIDKey(t, 20*time.Millisecond)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for i := range 24 {
		wg.Go(func() {
			ctx := context.Background()
			var ok bool
			var err error
			switch i % 3 {
			case 0:
				ok, err = h.Check(ctx, "a good password", encoded)
			case 1:
				ok, err = h.Check(ctx, "a good password", "") // the dummy path
				ok = !ok
			default:
				var s string
				s, err = h.Hash(ctx, "another password")
				ok = s != ""
			}
			if err != nil || !ok {
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wrong.Load(); n != 0 {
		t.Fatalf("%d of 24 calls failed or answered wrongly", n)
	}
	// 24 callers of 20 ms each: without the bound all would overlap.
	if got := peak(); got != 3 {
		t.Fatalf("at most %d computations ran at once, want exactly the bound 3", got)
	}
}

func TestBusyWhenTheContextEndsWhileWaiting(t *testing.T) {
	h, err := NewHasher(cheap, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the only slot, as a long computation would.
	if err := h.slots.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	peak := watchIDKey(t, 0)
	start := time.Now() // before the deadline is set: it cannot pass before start+30ms
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	ok, err := h.Check(ctx, "a good password", "")
	if ok || !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Check = %v, %v; want ErrBusy wrapping the deadline", ok, err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the context ended", waited)
	}
	if _, err := h.Hash(ctx, "a good password"); !errors.Is(err, ErrBusy) {
		t.Fatalf("Hash: %v, want ErrBusy", err)
	}
	if peak() != 0 {
		t.Fatal("a computation ran without a slot")
	}
	// Once the slot is free again, the next caller gets it.
	h.slots.Release(1)
	if ok, err := h.Check(context.Background(), "a good password", ""); ok || err != nil {
		t.Fatalf("after release: %v, %v", ok, err)
	}
	if peak() != 1 {
		t.Fatalf("peak %d after one computation", peak())
	}
}

// BenchmarkLoginBurst runs bursts of 32 concurrent checks with the default
// parameters, bounded to 2 at once (a 2-core replica) and unbounded, and
// reports the heap's peak: what a login burst costs a pod in memory.
func BenchmarkLoginBurst(b *testing.B) {
	encoded, err := Hash("a good password", Default)
	if err != nil {
		b.Fatal(err)
	}
	for _, slots := range []int{2, 32} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			h, err := NewHasher(Default, slots)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			stop := make(chan struct{})
			peak := make(chan uint64)
			go func() {
				var most uint64
				var ms runtime.MemStats
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						peak <- most
						return
					case <-tick.C:
						runtime.ReadMemStats(&ms)
						most = max(most, ms.HeapInuse)
					}
				}
			}()
			b.ResetTimer()
			for b.Loop() {
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() { _, _ = h.Check(context.Background(), "a good password", encoded) })
				}
				wg.Wait()
			}
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(<-peak)/(1<<20), "peak-heap-MiB")
		})
	}
}
