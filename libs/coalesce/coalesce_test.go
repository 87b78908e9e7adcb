package coalesce

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// gate is a fetch that records its batches and blocks until released.
type gate struct {
	mu      sync.Mutex
	batches [][]int
	started chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (g *gate) fetch(ctx context.Context, keys []int) (map[int]string, error) {
	g.mu.Lock()
	g.batches = append(g.batches, slices.Clone(keys))
	g.mu.Unlock()
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := map[int]string{}
	for _, k := range keys {
		if k >= 0 { // negative keys do not exist
			out[k] = "v" + string(rune('0'+k%10))
		}
	}
	return out, nil
}

func (g *gate) seen() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

func TestAnIdleLoaderFetchesAtOnce(t *testing.T) {
	calls := 0
	l := New(func(_ context.Context, keys []int) (map[int]string, error) {
		calls++
		if !slices.Equal(keys, []int{7}) {
			t.Errorf("keys %v, want [7]", keys)
		}
		return map[int]string{7: "seven"}, nil
	}, Options{})
	v, ok, err := l.Load(context.Background(), 7)
	if err != nil || !ok || v != "seven" || calls != 1 {
		t.Fatalf("got %q %v %v after %d calls", v, ok, err, calls)
	}
	if _, ok, err := l.Load(context.Background(), 7); err != nil || !ok || calls != 2 {
		t.Fatalf("a second load is a second fetch (no cache): ok=%v err=%v calls=%d", ok, err, calls)
	}
}

// startLoads starts a Load per key and returns their results by key.
func startLoads(l *Loader[int, string], keys ...int) func() map[int]result[string] {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[int]result[string]{}
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, ok, err := l.Load(context.Background(), k)
			mu.Lock()
			out[k] = result[string]{v: v, found: ok, err: err}
			mu.Unlock()
		}()
	}
	return func() map[int]result[string] { wg.Wait(); return out }
}

// busy returns a loader whose first fetch (of key 1) is running, held at
// g's gate, and the wait for that lookup's result.
func busy(opt Options) (*gate, *Loader[int, string], func() map[int]result[string]) {
	g := newGate()
	l := New(g.fetch, opt)
	first := startLoads(l, 1)
	<-g.started
	return g, l, first
}

// waitPending waits until n lookups are queued behind the running fetches.
func waitPending(t *testing.T, l *Loader[int, string], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		got := len(l.pending)
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lookups queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLookupsQueuedBehindAFetchGoInOneBatch(t *testing.T) {
	g, l, first := busy(Options{MaxInFlight: 1})
	rest := startLoads(l, 2, 3, 4, 5, -1)
	waitPending(t, l, 5)
	close(g.release)
	got := first()
	for k, r := range rest() {
		got[k] = r
	}
	batches := g.seen()
	if len(batches) != 2 || !slices.Equal(batches[0], []int{1}) {
		t.Fatalf("batches %v, want [1] then the five queued keys", batches)
	}
	second := slices.Sorted(slices.Values(batches[1]))
	if !slices.Equal(second, []int{-1, 2, 3, 4, 5}) {
		t.Fatalf("second batch %v", batches[1])
	}
	for _, k := range []int{1, 2, 3, 4, 5} {
		if r := got[k]; r.err != nil || !r.found || r.v == "" {
			t.Errorf("key %d: %+v", k, r)
		}
	}
	if r := got[-1]; r.err != nil || r.found {
		t.Errorf("a missing key: %+v, want not found", r)
	}
}

func TestDuplicateKeysAreFetchedOnce(t *testing.T) {
	g, l, first := busy(Options{MaxInFlight: 1})
	var wg sync.WaitGroup
	var found atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := l.Load(context.Background(), 9); err == nil && ok {
				found.Add(1)
			}
		}()
	}
	waitPending(t, l, 4)
	close(g.release)
	first()
	wg.Wait()
	if b := g.seen(); len(b) != 2 || !slices.Equal(b[1], []int{9}) {
		t.Fatalf("batches %v, want the duplicated key asked once", b)
	}
	if found.Load() != 4 {
		t.Fatalf("%d of 4 callers got the value", found.Load())
	}
}

func TestMaxBatchAndMaxInFlight(t *testing.T) {
	g := newGate()
	l := New(g.fetch, Options{MaxInFlight: 2, MaxBatch: 3})
	a := startLoads(l, 100)
	b := startLoads(l, 101)
	<-g.started
	<-g.started
	rest := startLoads(l, 1, 2, 3, 4, 5, 6, 7)
	waitPending(t, l, 7)
	if n := len(g.seen()); n != 2 {
		t.Fatalf("%d fetches running, want MaxInFlight = 2", n)
	}
	close(g.release)
	a()
	b()
	rest()
	for i, batch := range g.seen() {
		if len(batch) > 3 {
			t.Errorf("batch %d has %d keys, want at most MaxBatch = 3", i, len(batch))
		}
	}
	if n := len(g.seen()); n != 5 { // 2 singles, then 7 keys in batches of 3, 3, 1
		t.Errorf("%d fetches, want 5: %v", n, g.seen())
	}
}

func TestAFetchErrorReachesEveryCallerOfTheBatch(t *testing.T) {
	boom := errors.New("database unavailable")
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	l := New(func(context.Context, []int) (map[int]string, error) {
		started <- struct{}{}
		<-release
		return nil, boom
	}, Options{MaxInFlight: 1})
	first := startLoads(l, 1)
	<-started
	rest := startLoads(l, 2, 3)
	waitPending(t, l, 2)
	close(release)
	for k, r := range first() {
		if !errors.Is(r.err, boom) {
			t.Errorf("key %d: %v", k, r.err)
		}
	}
	for k, r := range rest() {
		if !errors.Is(r.err, boom) {
			t.Errorf("key %d: %v", k, r.err)
		}
	}
}

func TestACallerWhoGivesUpDoesNotCancelTheBatch(t *testing.T) {
	g := newGate()
	l := New(g.fetch, Options{MaxInFlight: 1})
	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() { _, _, err := l.Load(ctx, 1); leader <- err }()
	<-g.started
	rest := startLoads(l, 2)
	waitPending(t, l, 1)
	cancel() // the caller running the fetch leaves ...
	time.Sleep(10 * time.Millisecond)
	close(g.release) // ... its fetch still completes and the queued key is served
	if err := <-leader; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	if r := rest()[2]; r.err != nil || !r.found {
		t.Fatalf("queued caller: %+v", r)
	}
}

func TestAWaitingCallerLeavesWhenItsContextEnds(t *testing.T) {
	g, l, first := busy(Options{MaxInFlight: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := l.Load(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	close(g.release)
	first()
}

func TestAPanickingFetchIsAnErrorAndTheLoaderRecovers(t *testing.T) {
	var n atomic.Int32
	l := New(func(_ context.Context, keys []int) (map[int]string, error) {
		if n.Add(1) == 1 {
			panic("bug")
		}
		return map[int]string{keys[0]: "ok"}, nil
	}, Options{MaxInFlight: 1})
	if _, _, err := l.Load(context.Background(), 1); !errors.Is(err, errPanic) {
		t.Fatalf("got %v, want errPanic", err)
	}
	if v, ok, err := l.Load(context.Background(), 2); err != nil || !ok || v != "ok" {
		t.Fatalf("after the panic: %q %v %v", v, ok, err)
	}
}

func TestAFetchIsBoundedByTimeout(t *testing.T) {
	l := New(func(ctx context.Context, _ []int) (map[int]string, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, Options{Timeout: 20 * time.Millisecond})
	if _, _, err := l.Load(context.Background(), 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the fetch's deadline", err)
	}
}

// Many concurrent callers each get their own key's value, and every key asked
// for is fetched (run with -race).
func TestConcurrentLoadsGetTheirOwnValues(t *testing.T) {
	var fetches, keysFetched atomic.Int64
	l := New(func(_ context.Context, keys []int) (map[int]int, error) {
		fetches.Add(1)
		keysFetched.Add(int64(len(keys)))
		time.Sleep(100 * time.Microsecond)
		out := make(map[int]int, len(keys))
		for _, k := range keys {
			out[k] = k * 2
		}
		return out, nil
	}, Options{MaxInFlight: 2, MaxBatch: 16})
	const workers, each = 32, 200
	var wrong atomic.Int64
	testkit.AtOnce(workers, func(w int) {
		for i := range each {
			k := w*each + i
			v, ok, err := l.Load(context.Background(), k)
			if err != nil || !ok || v != 2*k {
				wrong.Add(1)
			}
		}
	})
	if wrong.Load() != 0 {
		t.Fatalf("%d wrong answers", wrong.Load())
	}
	if keysFetched.Load() != workers*each {
		t.Fatalf("%d keys fetched, want %d", keysFetched.Load(), workers*each)
	}
	if fetches.Load() >= workers*each {
		t.Fatalf("%d fetches for %d lookups: nothing was coalesced", fetches.Load(), workers*each)
	}
	t.Logf("%d lookups in %d fetches", workers*each, fetches.Load())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight != 0 || len(l.pending) != 0 {
		t.Fatalf("left %d in flight, %d pending", l.inFlight, len(l.pending))
	}
}

func BenchmarkLoad(b *testing.B) {
	l := New(func(_ context.Context, keys []int) (map[int]int, error) {
		out := make(map[int]int, len(keys))
		for _, k := range keys {
			out[k] = k
		}
		return out, nil
	}, Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, _, err := l.Load(context.Background(), i); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestMinBusyBatchHoldsALoneLookupForTheNextFetch(t *testing.T) {
	g, l, first := busy(Options{MaxInFlight: 2, MinBusyBatch: 2})
	second := startLoads(l, 2)
	waitPending(t, l, 1) // one waiting lookup does not start the second fetch
	if n := len(g.seen()); n != 1 {
		t.Fatalf("%d fetches running, want 1", n)
	}
	third := startLoads(l, 3)
	<-g.started // two waiting lookups do
	if b := g.seen(); len(b) != 2 || !slices.Equal(slices.Sorted(slices.Values(b[1])), []int{2, 3}) {
		t.Fatalf("batches %v, want [1] then [2 3]", b)
	}
	close(g.release)
	first()
	second()
	third()
}
